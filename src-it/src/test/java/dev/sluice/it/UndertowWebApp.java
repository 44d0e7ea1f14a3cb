package dev.sluice.it;

import dev.sluice.it.support.ExampleWar;
import io.undertow.Handlers;
import io.undertow.Undertow;
import io.undertow.server.handlers.PathHandler;
import io.undertow.server.handlers.resource.PathResourceManager;
import io.undertow.servlet.Servlets;
import io.undertow.servlet.api.DeploymentInfo;
import io.undertow.servlet.api.DeploymentManager;
import io.undertow.servlet.api.FilterInfo;
import io.undertow.servlet.api.InstanceFactory;
import io.undertow.servlet.api.ServletContainerInitializerInfo;
import io.undertow.servlet.api.ServletInfo;
import io.undertow.servlet.util.ImmediateInstanceFactory;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletContainerInitializer;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.EventListener;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

/**
 * The example WAR deployed in an embedded Undertow 2.3, WildFly's servlet container, on a free
 * loopback port, the way WildFly hands a WAR to Undertow. This simulates, and does not run,
 * WildFly (the real distribution is tested elsewhere); what it does in WildFly's place:
 * <ul>
 *   <li>unpacks the WAR and gives it a class loader of its own jars and classes over the Jakarta
 *       Servlet API alone (WildFly's module class loader; nothing of this test's class path leaks
 *       in, neither Sluice nor slf4j);</li>
 *   <li>reads {@code WEB-INF/web.xml} into Undertow's {@link DeploymentInfo} as WildFly's metadata
 *       parser does, for the elements the example uses (any other element fails the test rather
 *       than be ignored); the filter's init-params are overridden as {@link WebApp} does for Jetty;</li>
 *   <li>finds the WAR's {@link ServletContainerInitializer}s with {@link ServiceLoader} over that class
 *       loader, as WildFly's {@code ServletContainerInitializerDeploymentProcessor} does for the
 *       deployment's jars ({@code @HandlesTypes} is not scanned for: Sluice's initializer declares none);</li>
 *   <li>leaves Undertow's own default of initializing filters at their first request, as WildFly does.</li>
 * </ul>
 * {@link DeploymentManager#deploy()} and {@link DeploymentManager#start()} are WildFly's deployment
 * step: what fails there fails the deployment in WildFly.
 *
 * <p>Undertow uses {@code jakarta.servlet-api} 6.0 and neither Jetty's nor Tomcat's classes, so these
 * tests run in their own failsafe execution (see {@code src-it/pom.xml}).
 */
final class UndertowWebApp implements DeployedWar {

    static {
        URL servletApi = ClassLoader.getSystemResource("jakarta/servlet/Servlet.class");
        if (ClassLoader.getSystemResource("org/eclipse/jetty/server/Server.class") != null
                || ClassLoader.getSystemResource("org/apache/catalina/startup/Tomcat.class") != null
                || servletApi == null || !servletApi.toString().contains("jakarta.servlet-api")) {
            throw new IllegalStateException("the Undertow ITs need jakarta.servlet-api and neither Jetty nor Tomcat "
                    + "on the classpath (jakarta.servlet.Servlet comes from " + servletApi + "): run them through "
                    + "the undertow-it failsafe execution of src-it/pom.xml");
        }
    }

    private static final String CONTEXT_PATH = "/";

    private final Undertow server;
    private final PathHandler paths;
    private final DeploymentManager manager;
    private final URLClassLoader warLoader;
    private final Path webappDir;
    private final int workerThreads;

    private UndertowWebApp(Undertow server, PathHandler paths, DeploymentManager manager, URLClassLoader warLoader,
                           Path webappDir, int workerThreads) {
        this.server = server;
        this.paths = paths;
        this.manager = manager;
        this.warLoader = warLoader;
        this.webappDir = webappDir;
        this.workerThreads = workerThreads;
    }

    /** Deploys the WAR as the root context and starts serving; throws what the deployment threw. */
    static UndertowWebApp start(Map<String, String> filterParams) throws Exception {
        return start(filterParams, 8, null);
    }

    /**
     * Deploys the WAR with at most {@code workerThreads} threads running requests and
     * {@code probe} (unless null) in front of the WAR's own filters for requests as they arrive.
     */
    static UndertowWebApp start(Map<String, String> filterParams, int workerThreads, HoldProbe probe) throws Exception {
        Path webappDir = unpack(ExampleWar.path());
        URLClassLoader warLoader = null;
        DeploymentManager manager = null;
        ClassLoader caller = Thread.currentThread().getContextClassLoader();
        try {
            warLoader = warClassLoader(webappDir);
            Thread.currentThread().setContextClassLoader(warLoader); // as WildFly deploys: the deployment's own
            DeploymentInfo info = Servlets.deployment()
                    .setClassLoader(warLoader)
                    .setContextPath(CONTEXT_PATH)
                    .setDeploymentName("sluice-examples.war")
                    .setResourceManager(new PathResourceManager(webappDir));
            readWebXml(webappDir.resolve("WEB-INF/web.xml"), info, warLoader, filterParams);
            if (probe != null) {
                // one filter without async makes every request on its path synchronous
                info.addFilter(Servlets.filter("test-first", Filter.class, new ImmediateInstanceFactory<>(probe))
                        .setAsyncSupported(probe.asyncSupported()));
                info.insertFilterUrlMapping(0, "test-first", "/*", DispatcherType.REQUEST);
            }
            for (ServletContainerInitializer sci : ServiceLoader.load(ServletContainerInitializer.class, warLoader)) {
                info.addServletContainerInitializer(initializer(sci));
            }
            manager = Servlets.newContainer().addDeployment(info);
            manager.deploy();
            PathHandler paths = Handlers.path().addPrefixPath(CONTEXT_PATH, manager.start());
            Undertow server = Undertow.builder()
                    .addHttpListener(0, "127.0.0.1")
                    .setWorkerThreads(workerThreads)
                    .setHandler(paths)
                    .build();
            server.start();
            return new UndertowWebApp(server, paths, manager, warLoader, webappDir, workerThreads);
        } catch (Exception | Error e) {
            if (manager != null && manager.getState() != DeploymentManager.State.UNDEPLOYED) manager.undeploy();
            if (warLoader != null) warLoader.close();
            ExampleWar.deleteRecursively(webappDir);
            throw e;
        } finally {
            Thread.currentThread().setContextClassLoader(caller);
        }
    }

    private static ServletContainerInitializerInfo initializer(ServletContainerInitializer sci) {
        InstanceFactory<ServletContainerInitializer> instance = new ImmediateInstanceFactory<>(sci);
        return new ServletContainerInitializerInfo(sci.getClass(), instance, Set.of());
    }

    @Override
    public URI uri(String path) {
        int port = ((InetSocketAddress) server.getListenerInfo().get(0).getAddress()).getPort();
        return URI.create("http://127.0.0.1:" + port + path);
    }

    /** As WildFly undeploys: the context leaves the host, then the deployment stops (filters destroyed). */
    @Override
    public void undeploy() throws Exception {
        if (manager.getState() == DeploymentManager.State.UNDEPLOYED) return;
        paths.removePrefixPath(CONTEXT_PATH);
        manager.stop();
        manager.undeploy();
    }

    /** XNIO worker threads running a request (Undertow's I/O threads are not among them). */
    @Override
    public int busyRequestThreads() {
        return server.getWorker().getMXBean().getBusyWorkerThreadCount();
    }

    @Override
    public int maxRequestThreads() {
        return workerThreads;
    }

    @Override
    public void close() throws Exception {
        try {
            undeploy();
            server.stop();
        } finally {
            warLoader.close();
            ExampleWar.deleteRecursively(webappDir);
        }
    }

    /** The web application's own classes and jars, over the Servlet API and the JDK only. */
    private static URLClassLoader warClassLoader(Path webappDir) throws IOException {
        List<URL> urls = new ArrayList<>();
        urls.add(webappDir.resolve("WEB-INF/classes").toUri().toURL());
        try (Stream<Path> jars = Files.list(webappDir.resolve("WEB-INF/lib"))) {
            for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                urls.add(jar.toUri().toURL());
            }
        }
        return new URLClassLoader("sluice-examples.war", urls.toArray(new URL[0]), new ServletApiOnly());
    }

    /** What WildFly's Jakarta EE modules give every deployment, as far as this WAR needs: the Servlet API. */
    private static final class ServletApiOnly extends ClassLoader {
        private static final ClassLoader SERVLET_API = Servlet.class.getClassLoader();

        ServletApiOnly() {
            super("servlet-api", ClassLoader.getPlatformClassLoader());
        }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            if (name.startsWith("jakarta.servlet.")) return SERVLET_API.loadClass(name);
            throw new ClassNotFoundException(name);
        }

        @Override
        protected URL findResource(String name) {
            return name.startsWith("jakarta/servlet/") ? SERVLET_API.getResource(name) : null;
        }

        @Override
        protected Enumeration<URL> findResources(String name) throws IOException {
            return name.startsWith("jakarta/servlet/") ? SERVLET_API.getResources(name) : Collections.emptyEnumeration();
        }
    }

    /**
     * {@code web.xml} into {@code info}: listeners, filters, their mappings, servlets and theirs, error pages, with
     * {@code filterParams} added to the {@code sluice} filter's init-params.
     */
    private static void readWebXml(Path webXml, DeploymentInfo info, ClassLoader loader, Map<String, String> filterParams)
            throws Exception {
        Element root = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(webXml.toFile()).getDocumentElement();
        Map<String, ServletInfo> servlets = new LinkedHashMap<>();
        List<Element> servletMappings = new ArrayList<>();
        boolean sluice = false;
        for (Element e : children(root)) {
            switch (e.getTagName()) {
                case "display-name" -> info.setDisplayName(e.getTextContent().trim());
                case "filter" -> {
                    String name = text(e, "filter-name");
                    FilterInfo filter = Servlets.filter(name, loader.loadClass(text(e, "filter-class")).asSubclass(Filter.class));
                    filter.setAsyncSupported(Boolean.parseBoolean(text(e, "async-supported")));
                    initParams(e).forEach(filter::addInitParam);
                    if (name.equals("sluice")) {
                        filterParams.forEach(filter::addInitParam);
                        sluice = true;
                    }
                    info.addFilter(filter);
                }
                case "filter-mapping" -> {
                    List<String> dispatchers = texts(e, "dispatcher");
                    for (String pattern : texts(e, "url-pattern")) {
                        for (String d : dispatchers.isEmpty() ? List.of("REQUEST") : dispatchers) {
                            info.addFilterUrlMapping(text(e, "filter-name"), pattern, DispatcherType.valueOf(d));
                        }
                    }
                }
                case "servlet" -> {
                    String name = text(e, "servlet-name");
                    ServletInfo servlet = Servlets.servlet(name, loader.loadClass(text(e, "servlet-class")).asSubclass(Servlet.class));
                    servlet.setAsyncSupported(Boolean.parseBoolean(text(e, "async-supported")));
                    initParams(e).forEach(servlet::addInitParam);
                    servlets.put(name, servlet);
                }
                case "servlet-mapping" -> servletMappings.add(e);
                case "error-page" -> info.addErrorPage(Servlets.errorPage(text(e, "location"),
                        Integer.parseInt(text(e, "error-code"))));
                case "listener" -> info.addListener(Servlets.listener(
                        loader.loadClass(text(e, "listener-class")).asSubclass(EventListener.class)));
                default -> throw new IllegalStateException("web.xml element <" + e.getTagName()
                        + "> is not read by this Undertow harness: teach UndertowWebApp.readWebXml about it");
            }
        }
        if (!sluice) throw new IllegalStateException("the WAR's web.xml declares no filter named 'sluice'");
        for (Element m : servletMappings) {
            ServletInfo servlet = servlets.get(text(m, "servlet-name"));
            texts(m, "url-pattern").forEach(servlet::addMapping);
        }
        info.addServlets(servlets.values());
    }

    private static Map<String, String> initParams(Element e) {
        Map<String, String> params = new LinkedHashMap<>();
        for (Element p : children(e)) {
            if (p.getTagName().equals("init-param")) params.put(text(p, "param-name"), text(p, "param-value"));
        }
        return params;
    }

    private static List<Element> children(Element parent) {
        List<Element> elements = new ArrayList<>();
        NodeList nodes = parent.getChildNodes();
        for (int i = 0; i < nodes.getLength(); i++) {
            if (nodes.item(i).getNodeType() == Node.ELEMENT_NODE) elements.add((Element) nodes.item(i));
        }
        return elements;
    }

    private static List<String> texts(Element parent, String tag) {
        return children(parent).stream().filter(c -> c.getTagName().equals(tag)).map(c -> c.getTextContent().trim()).toList();
    }

    private static String text(Element parent, String tag) {
        List<String> values = texts(parent, tag);
        return values.isEmpty() ? null : values.get(0);
    }

    /** The WAR unpacked into a fresh directory, as WildFly explodes a deployment. */
    private static Path unpack(Path war) throws IOException {
        Path dir = Files.createTempDirectory("sluice-undertow-");
        try (InputStream in = Files.newInputStream(war); ZipInputStream zip = new ZipInputStream(in)) {
            for (ZipEntry entry; (entry = zip.getNextEntry()) != null; ) {
                Path target = dir.resolve(entry.getName()).normalize();
                if (!target.startsWith(dir)) throw new IOException("entry outside the WAR: " + entry.getName());
                if (entry.isDirectory()) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(zip, target);
                }
            }
        }
        return dir;
    }
}
