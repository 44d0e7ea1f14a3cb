package dev.sluice.example.demo;

import org.eclipse.jetty.ee.webapp.WebAppClassLoading;
import org.eclipse.jetty.ee10.webapp.WebAppContext;
import org.eclipse.jetty.logging.JettyLoggingServiceProvider;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The demo: three embedded Jetty instances serving the example WAR, sharing one Redis
 * ({@code REDIS_URL}, else localhost:6379). It sends a few requests round-robin to show that the
 * fleet allows, together, what one instance would, prints curl lines to try, and runs until
 * interrupted. Without a Redis it says so loudly and runs with {@code backend=local}.
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
        String redisUrl = System.getenv().getOrDefault("REDIS_URL", "redis://localhost:6379");
        // a fresh key prefix per run, so the demo starts with full quotas
        System.setProperty("SLUICE_KEY_PREFIX", "rl:demo:" + Long.toString(System.currentTimeMillis(), 36) + ":");
        if (!redisAnswers(redisUrl)) {
            System.out.println();
            System.out.println("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            System.out.println("!!  NO REDIS answers at " + redisUrl);
            System.out.println("!!  Running with backend=local: each instance limits on its own, so the fleet");
            System.out.println("!!  allows 3x the limit. Start Redis (or set REDIS_URL) to see global limits.");
            System.out.println("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            System.out.println();
            System.setProperty("SLUICE_BACKEND", "local");
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
        Runtime.getRuntime().addShutdownHook(new Thread(() -> servers.forEach(s -> {
            try {
                s.stop();
            } catch (Exception ignored) {
                // shutting down anyway
            }
        })));

        System.out.println();
        System.out.println("Sluice demo: three instances on ports " + ports + ", one "
                + ("local".equals(System.getProperty("SLUICE_BACKEND")) ? "(missing) Redis" : "Redis at " + redisUrl));
        System.out.println("Rule 'api': 10 requests a minute per client, for the whole fleet.");
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
        System.out.println("Try it yourself (each instance shares the same counters):");
        StringBuilder portList = new StringBuilder();
        for (int p : ports) portList.append(p).append(' ');
        System.out.println("  for i in 1 2 3 4; do for p in " + portList + "; do curl -s -o /dev/null -w '%{http_code} ' "
                + "http://127.0.0.1:$p/api/hello; done; done; echo");
        System.out.println("  curl -i http://127.0.0.1:" + ports.get(2) + "/api/hello        # headers of a denial: 429, Retry-After, RateLimit");
        System.out.println("  curl -si -H 'X-Api-Key: demo-pro-key' http://127.0.0.1:" + ports.get(1)
                + "/api/hello | grep -i ratelimit   # the pro plan: 100 a minute");
        System.out.println("  curl -i -X POST http://127.0.0.1:" + ports.get(0) + "/login      # 5 failed logins a minute, fails closed without Redis");
        System.out.println("  curl -i -d 'user=alice&password=correct-horse' http://127.0.0.1:" + ports.get(0)
                + "/login   # a good login: given back, never locks alice out");
        System.out.println("  curl -i http://127.0.0.1:" + ports.get(1) + "/health           # excluded: never limited");
        System.out.println("  curl -s http://127.0.0.1:" + ports.get(0) + "/metrics | grep '^sluice_'  # this instance's meters, as Prometheus scrapes them");
        System.out.println();
        System.out.println("Press Ctrl-C to stop.");
        for (Server s : servers) {
            s.join();
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

    /** A bare RESP PING with a short timeout: the demo needs no Redis client of its own. */
    static boolean redisAnswers(String url) {
        try {
            URI uri = URI.create(url);
            String host = uri.getHost() == null ? "localhost" : uri.getHost();
            int port = uri.getPort() < 0 ? 6379 : uri.getPort();
            if ("rediss".equals(uri.getScheme())) return true; // TLS: let the filter connect and report
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 500);
                s.setSoTimeout(500);
                OutputStream out = s.getOutputStream();
                out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                byte[] buf = new byte[64];
                int n = in.read(buf);
                // +PONG, or -NOAUTH when a password is needed: either way a Redis answers
                return n > 0 && (buf[0] == '+' || buf[0] == '-');
            }
        } catch (IOException | IllegalArgumentException e) {
            return false;
        }
    }
}
