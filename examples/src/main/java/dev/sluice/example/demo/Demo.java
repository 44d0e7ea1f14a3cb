package dev.sluice.example.demo;

import org.eclipse.jetty.ee.webapp.WebAppClassLoading;
import org.eclipse.jetty.ee10.webapp.WebAppContext;
import org.eclipse.jetty.logging.JettyLoggingServiceProvider;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The demo: three embedded Jetty instances serving the example WAR, sharing one Redis. It sends a
 * few requests round-robin to show that the fleet allows, together, what one instance would,
 * forgets them (JMX {@code resetClient}), prints curl lines to try, and runs until interrupted.
 *
 * <p>The Redis, in this order: {@code REDIS_URL}; a {@code redis-server} from PATH, started on a
 * free port; one answering on localhost:6379; a {@code redis:7} container, where {@code docker}
 * answers. What it starts it stops when it ends. With none, it says so loudly and runs with
 * {@code backend=local}.
 *
 * <p>Usage: {@code Demo <path to sluice-examples.war> [first port]}
 */
public final class Demo {

    private Demo() {
    }

    public static void main(String[] args) throws Exception {
        Path war = Path.of(args.length > 0 ? args[0] : "examples/target/sluice-examples.war");
        if (!Files.isRegularFile(war)) {
            System.err.println("WAR not found: " + war.toAbsolutePath() + " (build it with mvn -DskipTests package)");
            System.exit(2);
        }
        int firstPort = args.length > 1 ? Integer.parseInt(args[1]) : 8081;
        // a fresh key prefix per run, so the demo starts with full quotas
        System.setProperty("SLUICE_KEY_PREFIX", "rl:demo:" + Long.toString(System.currentTimeMillis(), 36) + ":");
        DemoRedis redis = DemoRedis.find();
        if (redis == null) {
            System.out.println();
            System.out.println("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            System.out.println("!!  NO REDIS: " + DemoRedis.tried());
            System.out.println("!!  Running with backend=local: each instance limits on its own, so the fleet");
            System.out.println("!!  allows 3x the limit. Start Redis, set REDIS_URL, or put redis-server on");
            System.out.println("!!  PATH to see global limits.");
            System.out.println("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            System.out.println();
            System.setProperty("SLUICE_BACKEND", "local");
        } else {
            System.setProperty("REDIS_URL", redis.url()); // ratelimit.properties: ${REDIS_URL:...}, a system property first
        }

        List<Server> servers = new ArrayList<>();
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Server server = new Server();
            ServerConnector connector = new ServerConnector(server);
            connector.setHost("127.0.0.1");
            connector.setPort(firstPort + i);
            server.addConnector(connector);
            // Jetty hides its own classes from a web application, but not the service file of its
            // slf4j binding: the WAR's slf4j would find it, fail to load the class and print an error.
            // Hide the binding's jar by location, as jetty-home's logging-jetty module does.
            WebAppClassLoading.addHiddenClasses(server, jarOf(JettyLoggingServiceProvider.class));
            WebAppContext app = new WebAppContext();
            app.setContextPath("/");
            app.setWar(war.toAbsolutePath().toString());
            app.setThrowUnavailableOnStartupException(true);
            server.setHandler(app);
            try {
                server.start();
            } catch (IOException bindFailed) {
                // the port is taken: take any free one
                connector.setPort(0);
                server.start();
            }
            servers.add(server);
            ports.add(connector.getLocalPort());
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            servers.forEach(s -> {
                try {
                    s.stop();
                } catch (Exception ignored) {
                    // shutting down anyway
                }
            });
            if (redis != null) redis.stop();
        }));

        System.out.println();
        System.out.println("Sluice demo: three instances on ports " + ports + ", one "
                + (redis == null ? "(missing) Redis" : "Redis at " + redis.url() + " (" + redis.how() + ")"));
        System.out.println("Rule 'api': 10 requests a minute per client, for the whole fleet. Rule 'exports': 2 exports of a"
                + " client in flight at once. Rule 'llm': 2,000 tokens a minute, each answer's settled once it is known.");
        System.out.println();
        HttpClient http = HttpClient.newHttpClient();
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < 13; i++) {
            int port = ports.get(i % 3);
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/hello")).build(),
                    HttpResponse.BodyHandlers.ofString());
            line.append(String.format("  request %2d -> instance :%d -> %d  RateLimit: %s%n", i + 1, port, r.statusCode(),
                    r.headers().firstValue("RateLimit").orElse("-")));
        }
        System.out.print(line);
        System.out.println();
        int reset = forgetTheDemosRequests();
        System.out.println("The demo's requests are forgotten (JMX resetClient(rule, \"" + DEMO_CLIENT + "\"), " + reset
                + " times, on each instance's MXBeans), so the lines below start with a full quota.");
        System.out.println("Try it yourself, in this order (each instance shares the same counters):");
        StringBuilder portList = new StringBuilder();
        for (int p : ports) portList.append(p).append(' ');
        System.out.println("  for i in 1 2 3 4; do for p in " + portList + "; do curl -s -o /dev/null -w '%{http_code} ' "
                + "http://127.0.0.1:$p/api/hello; done; done; echo"
                + (redis == null ? "   # no Redis: 4 per instance, all 200" : "   # ten 200s, then 429"));
        System.out.println("  curl -i http://127.0.0.1:" + ports.get(2) + "/api/hello        # headers of a denial: 429, Retry-After, RateLimit");
        System.out.println("  curl -si -H 'X-Api-Key: demo-pro-key' http://127.0.0.1:" + ports.get(1)
                + "/api/hello | grep -i ratelimit   # the pro plan: 100 a minute");
        System.out.println("  curl -i -X POST http://127.0.0.1:" + ports.get(0) + "/login      # 5 failed logins a minute, fails closed without Redis");
        System.out.println("  curl -i -d 'user=alice&password=correct-horse' http://127.0.0.1:" + ports.get(0)
                + "/login   # a good login: given back, never locks alice out");
        System.out.println("  curl -i http://127.0.0.1:" + ports.get(1) + "/health           # excluded: never limited");
        System.out.println("  curl -s http://127.0.0.1:" + ports.get(0) + "/metrics | grep '^sluice_'  # this instance's meters, as Prometheus scrapes them");
        System.out.println("  for p in " + portList + "; do curl -s -o /dev/null -w '%{http_code} ' \"http://127.0.0.1:$p/exports/report?ms=2000\" & done;"
                + " wait; echo   # three 2 s exports at once, one per instance: 2 in flight per client, fleet-wide: 429 200 200");
        System.out.println("  for t in 900 100; do curl -s -D - -o /dev/null \"http://127.0.0.1:" + ports.get(1) + "/llm/chat?tokens=$t\""
                + " | grep -i '^ratelimit:'; done   # 200 tokens taken at admission, the rest after: r=1800, then about 900");
        Path filterJar = filterJar(war);
        if (filterJar != null) {
            System.out.println("  java -jar " + filterJar + " " + ProcessHandle.current().pid()
                    + "   # every instance's figures over JMX, as on a server without a display");
        }
        System.out.println();
        System.out.println("Press Ctrl-C to stop.");
        for (Server s : servers) {
            s.join();
        }
    }

    /** Who the demo's requests came from, as the rules count it (no API key: per address). */
    private static final String DEMO_CLIENT = "ip=127.0.0.1";

    /**
     * Resets the demo's client on every rule of every instance (all three run in this JVM), as an
     * operator lifts one client's limit over JMX: Redis's counter and each instance's remembered
     * denial. Returns how many resets were made.
     */
    private static int forgetTheDemosRequests() throws Exception {
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        int resets = 0;
        for (ObjectName rule : jmx.queryNames(new ObjectName("dev.sluice:type=Rule,*"), null)) {
            ObjectName instance = new ObjectName("dev.sluice:type=RateLimiter,name=" + rule.getKeyProperty("name"));
            jmx.invoke(instance, "resetClient", new Object[]{rule.getKeyProperty("rule"), DEMO_CLIENT},
                    new String[]{String.class.getName(), String.class.getName()});
            resets++;
        }
        return resets;
    }

    /** The sluice-filter jar in the WAR as Maven unpacked it next to it ({@code target/sluice-examples/WEB-INF/lib}), or null. */
    private static Path filterJar(Path war) throws IOException {
        String name = war.getFileName().toString();
        Path lib = war.toAbsolutePath().resolveSibling(name.replaceFirst("\\.war$", "")).resolve("WEB-INF/lib");
        if (!Files.isDirectory(lib)) return null;
        try (var jars = Files.list(lib)) {
            return jars.filter(p -> p.getFileName().toString().matches("sluice-filter-.*\\.jar")).findFirst().orElse(null);
        }
    }

    /** The location of the jar (or directory) {@code type} was loaded from, as Jetty's class matcher takes it. */
    static String jarOf(Class<?> type) {
        try {
            return type.getProtectionDomain().getCodeSource().getLocation().toURI().toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
