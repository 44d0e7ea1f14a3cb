package dev.sluice.it;

import java.net.URI;

/**
 * The example WAR running in one of the containers under test, as the tests that hold for every
 * container see it ({@link WebApp} for Jetty, {@link TomcatWebApp} for Tomcat). Free of any
 * container class.
 */
interface DeployedWar extends AutoCloseable {

    URI uri(String path);

    /** Undeploys the web application as a redeploy does; the server goes on running. */
    void undeploy() throws Exception;

    /** Container threads running a request now (not its acceptor or selector threads). */
    int busyRequestThreads();

    /** The most threads the container may run requests on. */
    int maxRequestThreads();
}
