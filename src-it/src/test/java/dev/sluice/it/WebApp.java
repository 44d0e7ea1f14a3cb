package dev.sluice.it;

import dev.sluice.it.support.ExampleWar;
import org.eclipse.jetty.ee.webapp.WebAppClassLoading;
import org.eclipse.jetty.logging.JettyLoggingServiceProvider;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The example WAR ({@code examples/target/sluice-examples.war}) deployed in an embedded Jetty 12
 * on a free loopback port, exactly as a user deploys it, with the filter's init-params overridden
 * through an override descriptor (init-params win over the WAR's ratelimit.properties). The web
 * application runs in one of Jetty's environments: ee10 ({@link JettyEe10}, the default) or ee11
 * ({@link JettyEe11}); this class itself uses Jetty's core classes only.
 */
final class WebApp implements DeployedWar {

    /**
     * What differs between Jetty's environments: the classes of the web application's context.
     * Each environment is a class of its own, so that one environment's tests never load the other's.
     */
    interface Environment {

        /**
         * The context of the WAR at {@code war}, at the root, with {@code overrideDescriptor} applied
         * after its {@code web.xml} and {@code probe} (unless null) in front of its own filters; a
         * filter or initializer that fails makes the server's start fail.
         */
        ContextHandler webApp(String war, String overrideDescriptor, HoldProbe probe);

        /** The Servlet API version the context's {@code ServletContext} reports, e.g. {@code 6.1}. */
        String servletVersion(ContextHandler webApp);
    }

    private final Server server;
    private final ServerConnector connector;
    private final Environment environment;
    private final ContextHandler app;
    private final QueuedThreadPool threads;

    private WebApp(Server server, ServerConnector connector, Environment environment, ContextHandler app,
                   QueuedThreadPool threads) {
        this.server = server;
        this.connector = connector;
        this.environment = environment;
        this.app = app;
        this.threads = threads;
    }

    /** Deploys the WAR in the ee10 environment with the filter's init-params overridden by {@code filterParams}. */
    static WebApp start(Map<String, String> filterParams) throws Exception {
        return start(new JettyEe10(), filterParams);
    }

    /** Deploys the WAR in {@code environment} with the filter's init-params overridden by {@code filterParams}. */
    static WebApp start(Environment environment, Map<String, String> filterParams) throws Exception {
        return start(environment, filterParams, new QueuedThreadPool(), null);
    }

    /**
     * Deploys the WAR in {@code environment} on a server whose threads are {@code threads}, with
     * {@code probe} (unless null) in front of the WAR's own filters for requests as they arrive.
     */
    static WebApp start(Environment environment, Map<String, String> filterParams, QueuedThreadPool threads,
                        HoldProbe probe) throws Exception {
        Server server = new Server(threads);
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        // as jetty-home's logging-jetty module does: Jetty's slf4j binding is hidden from the web
        // application by location too, or the WAR's slf4j finds its service file, cannot load the
        // class (a hidden server class) and prints an error
        WebAppClassLoading.addHiddenClasses(server, jarOf(JettyLoggingServiceProvider.class));
        ContextHandler app = environment.webApp(ExampleWar.path().toAbsolutePath().toString(),
                overrideDescriptor(filterParams).toString(), probe);
        server.setHandler(app);
        try {
            server.start();
        } catch (Exception e) {
            server.stop();
            throw e;
        }
        return new WebApp(server, connector, environment, app, threads);
    }

    private static String jarOf(Class<?> type) {
        try {
            return type.getProtectionDomain().getCodeSource().getLocation().toURI().toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Path overrideDescriptor(Map<String, String> params) {
        StringBuilder xml = new StringBuilder("""
                <?xml version="1.0" encoding="UTF-8"?>
                <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
                  <filter>
                    <filter-name>sluice</filter-name>
                """);
        params.forEach((k, v) -> xml.append("    <init-param><param-name>").append(ExampleWar.escape(k))
                .append("</param-name><param-value>").append(ExampleWar.escape(v)).append("</param-value></init-param>\n"));
        xml.append("  </filter>\n</web-app>\n");
        try {
            Path file = Files.createTempFile("sluice-override-", ".xml");
            file.toFile().deleteOnExit();
            Files.writeString(file, xml);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The Servlet API version the running web application sees, e.g. {@code 6.0} on ee10. */
    String servletVersion() {
        return environment.servletVersion(app);
    }

    int port() {
        return connector.getLocalPort();
    }

    @Override
    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port() + path);
    }

    /** The server stops the context and its filters, as its deployer does for an undeploy. */
    @Override
    public void undeploy() throws Exception {
        app.stop();
    }

    /** Threads running a job that is neither an acceptor's nor a selector's, nor reserved. */
    @Override
    public int busyRequestThreads() {
        return threads.getUtilizedThreads();
    }

    /** All the pool's threads, acceptor and selector included. */
    @Override
    public int maxRequestThreads() {
        return threads.getMaxThreads();
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }
}
