package dev.sluice.it.support;

/**
 * One servlet container the example WAR is tested on: an embedded one of src-it (Jetty ee10,
 * Jetty ee11, Tomcat, Undertow) or a real distribution of dist-it (Tomcat 10.1 and 11, Jetty ee10
 * and ee11, WildFly). Each IT class of a container makes one.
 */
public interface Container extends AutoCloseable {

    /** The container and version, as test output names it. */
    String name();

    /**
     * Deploys {@code app} on {@code instances} instances of this container sharing one Redis, and
     * returns once every one serves ({@code /health} answers 200). The caller closes it.
     */
    Deployment deploy(ExampleApp app, int instances) throws Exception;

    /** Stops whatever the container keeps between deployments (dist-it's server processes). */
    @Override
    default void close() throws Exception {
    }
}
