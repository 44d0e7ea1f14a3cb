package dev.sluice.it;

import dev.sluice.it.support.ExampleWar;
import jakarta.servlet.DispatcherType;
import org.apache.catalina.Context;
import org.apache.catalina.Lifecycle;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.loader.WebappClassLoaderBase;
import org.apache.catalina.startup.Tomcat;
import org.apache.coyote.AbstractProtocol;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import org.apache.tomcat.util.scan.StandardJarScanner;
import org.apache.tomcat.util.threads.ThreadPoolExecutor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The example WAR deployed in an embedded Apache Tomcat 11 with {@link Tomcat#addWebapp} (as the
 * root context unless told otherwise) on a free loopback port, unpacked into a private base
 * directory as a stock Tomcat does. The filter's init-params are overridden the way {@link WebApp} does for Jetty: after
 * Tomcat has read the WAR's {@code web.xml} and before the initializers and filters start,
 * {@code filterParams} are added to the {@code sluice} filter's definition (init-params win over
 * ratelimit.properties).
 *
 * <p>Tomcat does not throw when a web application fails to start: it logs the failure to its main
 * log and leaves the context stopped. {@link #deploy} reports what happened
 * ({@link #available()}, {@link #startupErrors()}); {@link #start} insists on a running application.
 *
 * <p>Tomcat bundles its own Servlet 6.1 API, so these tests run in their own failsafe execution,
 * without Jetty or {@code jakarta.servlet-api} 6.0 on the classpath (see {@code src-it/pom.xml}).
 */
final class TomcatWebApp implements DeployedWar {

    /** Each instance gets its own engine name: its own JMX domain and context logger. */
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    static {
        // the two containers' servlet classes must never meet (see the class comment)
        URL servletApi = ClassLoader.getSystemResource("jakarta/servlet/Servlet.class");
        if (ClassLoader.getSystemResource("org/eclipse/jetty/server/Server.class") != null
                || servletApi == null || !servletApi.toString().contains("tomcat-embed-core")) {
            throw new IllegalStateException("the Tomcat ITs need Tomcat's own Servlet API and no Jetty on the "
                    + "classpath (jakarta.servlet.Servlet comes from " + servletApi + "): run them through the "
                    + "tomcat-it failsafe execution of src-it/pom.xml");
        }
        // Tomcat publishes its first instance's base as the JVM-wide catalina.home and every later
        // instance recreates that directory: give them all one home instead, each its own base
        try {
            Path home = Files.createTempDirectory("sluice-tomcat-home-");
            home.toFile().deleteOnExit();
            System.setProperty("catalina.home", home.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private final Tomcat tomcat;
    private final Connector connector;
    private final Context context;
    private final Path baseDir;
    private final List<Logger> startupLoggers;
    private final StartupErrors errors;

    private TomcatWebApp(Tomcat tomcat, Connector connector, Context context, Path baseDir,
                         List<Logger> startupLoggers, StartupErrors errors) {
        this.tomcat = tomcat;
        this.connector = connector;
        this.context = context;
        this.baseDir = baseDir;
        this.startupLoggers = startupLoggers;
        this.errors = errors;
    }

    /** Deploys the WAR as the root context and starts Tomcat; fails unless the application is up. */
    static TomcatWebApp start(Map<String, String> filterParams) throws Exception {
        return start("", filterParams);
    }

    /** Deploys the WAR at {@code contextPath} ("" for the root) and starts Tomcat; fails unless the application is up. */
    static TomcatWebApp start(String contextPath, Map<String, String> filterParams) throws Exception {
        TomcatWebApp app = deploy(contextPath, filterParams);
        if (!app.available()) {
            IllegalStateException e = new IllegalStateException("the example WAR did not start in Tomcat: context "
                    + app.context.getStateName());
            app.startupErrors().forEach(e::addSuppressed);
            app.close();
            throw e;
        }
        return app;
    }

    /** Deploys the WAR as the root context and starts Tomcat, whether or not the application itself comes up. */
    static TomcatWebApp deploy(Map<String, String> filterParams) throws Exception {
        return deploy("", filterParams);
    }

    /**
     * Deploys the WAR as the root context on a connector with at most {@code maxThreads} request
     * threads (0: Tomcat's default), with {@code probe} in front of the WAR's own filters for
     * requests as they arrive, and starts Tomcat; fails unless the application is up.
     */
    static TomcatWebApp start(Map<String, String> filterParams, int maxThreads, HoldProbe probe) throws Exception {
        TomcatWebApp app = deploy("", filterParams, maxThreads, probe);
        if (!app.available()) {
            app.close();
            throw new IllegalStateException("the example WAR did not start in Tomcat");
        }
        return app;
    }

    private static TomcatWebApp deploy(String contextPath, Map<String, String> filterParams) throws Exception {
        return deploy(contextPath, filterParams, 0, null);
    }

    private static TomcatWebApp deploy(String contextPath, Map<String, String> filterParams, int maxThreads,
                                       HoldProbe probe) throws Exception {
        Path baseDir = Files.createTempDirectory("sluice-tomcat-");
        Files.createDirectories(baseDir.resolve("webapps")); // the host's appBase: the WAR is unpacked here
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(baseDir.toString());
        tomcat.setSilent(true);
        tomcat.getEngine().setName("sluice-it-" + INSTANCES.incrementAndGet());

        Connector connector = new Connector();
        connector.setPort(0);
        connector.setProperty("address", "127.0.0.1");
        if (maxThreads > 0) {
            connector.setProperty("maxThreads", Integer.toString(maxThreads));
            connector.setProperty("minSpareThreads", Integer.toString(maxThreads));
        }
        tomcat.setConnector(connector);

        // no programmatic default web.xml: its JSP servlet needs Jasper, which an embedded core lacks
        tomcat.setAddDefaultWebXmlToWebapp(false);
        Context context = tomcat.addWebapp(contextPath, ExampleWar.path().toAbsolutePath().toString());
        StandardJarScanner scanner = new StandardJarScanner();
        scanner.setScanClassPath(false); // the WAR's own jars only, not the test JVM's classpath
        context.setJarScanner(scanner);
        context.addLifecycleListener(event -> {
            // after ContextConfig (added first) has merged web.xml, before the filters are started
            if (Lifecycle.CONFIGURE_START_EVENT.equals(event.getType())) {
                FilterDef sluice = context.findFilterDef("sluice");
                if (sluice == null) {
                    throw new IllegalStateException("the WAR's web.xml declares no filter named 'sluice'");
                }
                sluice.getParameterMap().putAll(filterParams); // addInitParameter keeps the first value: these must win
                if (probe != null) {
                    FilterDef def = new FilterDef();
                    def.setFilterName("test-first");
                    def.setFilter(probe);
                    // one filter without async makes every request on its path synchronous
                    def.setAsyncSupported(Boolean.toString(probe.asyncSupported()));
                    context.addFilterDef(def);
                    FilterMap map = new FilterMap();
                    map.setFilterName("test-first");
                    map.addURLPattern("/*");
                    map.setDispatcher(DispatcherType.REQUEST.name());
                    context.addFilterMapBefore(map);
                }
            }
        });

        // a filter that fails is logged on the context's logger, an initializer that fails on
        // StandardContext's own, leaks found at undeploy on the class loader's; all go to Tomcat's
        // main log. Held: JUL keeps loggers weakly.
        List<Logger> startupLoggers = List.of(Logger.getLogger(context.getLogName()),
                Logger.getLogger(StandardContext.class.getName()), Logger.getLogger(WebappClassLoaderBase.class.getName()));
        StartupErrors errors = new StartupErrors();
        startupLoggers.forEach(l -> l.addHandler(errors));
        TomcatWebApp app = new TomcatWebApp(tomcat, connector, context, baseDir, startupLoggers, errors);
        try {
            tomcat.start();
        } catch (Exception | Error e) {
            app.close();
            throw e;
        }
        return app;
    }

    /** Whether the web application started and serves requests. */
    boolean available() {
        return context.getState().isAvailable();
    }

    Context context() {
        return context;
    }

    /** What Tomcat logged as errors, with their exceptions, about the context while starting. */
    List<Throwable> startupErrors() {
        return List.copyOf(errors.thrown);
    }

    /** What Tomcat's class loader warned of when the application stopped: threads or references left behind. */
    List<String> leakWarnings() {
        return List.copyOf(errors.leaks);
    }

    int port() {
        return connector.getLocalPort();
    }

    /** The host removes the context, as Tomcat's manager or a redeploy does; Tomcat goes on running. */
    @Override
    public void undeploy() {
        tomcat.getHost().removeChild(context);
    }

    /** The connector's executor threads running a request (acceptor and poller are not among them). */
    @Override
    public int busyRequestThreads() {
        return requestThreads().getActiveCount();
    }

    @Override
    public int maxRequestThreads() {
        return requestThreads().getMaximumPoolSize();
    }

    private ThreadPoolExecutor requestThreads() {
        return (ThreadPoolExecutor) ((AbstractProtocol<?>) connector.getProtocolHandler()).getExecutor();
    }

    @Override
    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port() + path);
    }

    @Override
    public void close() throws Exception {
        try {
            tomcat.stop();
            tomcat.destroy();
        } finally {
            startupLoggers.forEach(l -> l.removeHandler(errors));
            ExampleWar.deleteRecursively(baseDir);
        }
    }

    /**
     * Collects the exceptions Tomcat logs as errors (a filter or an initializer that failed) and
     * the warnings of its class loader's leak detection (a thread the application left running).
     */
    private static final class StartupErrors extends Handler {
        final List<Throwable> thrown = new CopyOnWriteArrayList<>();
        final List<String> leaks = new CopyOnWriteArrayList<>();

        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.SEVERE.intValue() && record.getThrown() != null) {
                thrown.add(record.getThrown());
            } else if (record.getLevel() == Level.WARNING && WebappClassLoaderBase.class.getName().equals(record.getLoggerName())) {
                leaks.add(new java.util.logging.SimpleFormatter().formatMessage(record));
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
