package dev.sluice.bench;

import jakarta.servlet.DispatcherType;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The HTTP target {@code wrk} loads: embedded Jetty 12 (ee10) on 127.0.0.1 serving a trivial
 * servlet (200, two bytes), behind one of:
 * <ul>
 *   <li>{@code none}: no filter, the container's own cost;</li>
 *   <li>{@code local}: Sluice with {@code backend=local};</li>
 *   <li>{@code redis}: Sluice on Redis ({@code -Dsluice.bench.redis}), a limit no run exhausts;</li>
 *   <li>{@code redis-denied}: Sluice on Redis, a limit of 1 an hour: every request but the first is
 *       a 429 (answered by the denied-client cache).</li>
 * </ul>
 * wrk's requests all come from 127.0.0.1, so every one is the same client: one hot key.
 *
 * <pre>java -Dsluice.bench.redis=... -cp benchmarks.jar dev.sluice.bench.HttpHarness VARIANT PORT</pre>
 */
public final class HttpHarness {

    private HttpHarness() {
    }

    public static void main(String[] args) throws Exception {
        String variant = args[0];
        int port = Integer.parseInt(args[1]);
        QueuedThreadPool threads = new QueuedThreadPool(200, 8);
        threads.setName("jetty");
        Server server = new Server(threads);
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        server.addConnector(connector);

        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.addServlet(new ServletHolder(new Hello()), "/*");
        Map<String, String> params = filterParams(variant);
        if (params != null) {
            FilterHolder filter = new FilterHolder();
            filter.setClassName("dev.sluice.RateLimitFilter");
            filter.setName("sluice");
            filter.setInitParameters(params);
            context.addFilter(filter, "/*", EnumSet.of(DispatcherType.REQUEST));
        }
        server.setHandler(context);
        Runtime.getRuntime().addShutdownHook(new Thread(HttpHarness::printSluiceMetrics));
        server.start();
        System.out.println("listening on 127.0.0.1:" + port + " variant " + variant);
        server.join();
    }

    /**
     * On exit, Sluice's own counters (its MXBeans): how many decisions fell back to the local
     * backstop and how many Redis calls timed out, so a run can tell Redis decisions from fallbacks.
     */
    private static void printSluiceMetrics() {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            for (ObjectName name : server.queryNames(new ObjectName("dev.sluice:*"), null)) {
                try {
                    System.out.printf("SLUICE %s decisions=%s fallback=%s timeouts=%s errors=%s%n", name,
                            server.getAttribute(name, "Decisions"), server.getAttribute(name, "FallbackDecisions"),
                            server.getAttribute(name, "RedisTimeouts"), server.getAttribute(name, "RedisErrors"));
                } catch (JMException notTheLimiterBean) {
                    // a per-rule bean: no such attributes
                }
            }
        } catch (JMException e) {
            System.out.println("SLUICE metrics unavailable: " + e);
        }
    }

    /** The filter's init-params for a variant, or null for no filter. */
    static Map<String, String> filterParams(String variant) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("rules", "api");
        p.put("rule.api.algorithm", "token-bucket");
        p.put("rule.api.window", "1000s");
        p.put("rule.api.limit", Long.toString(Workload.HOT.limit));
        p.put("headers", "both");
        switch (variant) {
            case "none" -> {
                return null;
            }
            case "local" -> p.put("backend", "local");
            case "redis" -> p.put("redis.url", BenchRedis.uri().toString());
            case "redis-denied" -> {
                p.put("redis.url", BenchRedis.uri().toString());
                p.put("rule.api.limit", "1");
                p.put("rule.api.window", "1h");
            }
            default -> throw new IllegalArgumentException("variant: none, local, redis or redis-denied, not " + variant);
        }
        // as generous as the JMH contenders': on 2 shared cores the default 50 ms is exceeded at the
        // tail, and a decision that times out falls back to the local backstop (counted on exit)
        p.put("redis.timeout", BenchRedis.TIMEOUT_MS + "ms");
        p.put("redis.pool.max-total", Integer.toString(BenchRedis.POOL_SIZE));
        p.put("redis.pool.max-idle", Integer.toString(BenchRedis.POOL_SIZE));
        p.put("key-prefix", BenchRedis.prefix("http"));
        return p;
    }

    /** The trivial application. */
    static final class Hello extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private static final byte[] OK = "ok".getBytes(StandardCharsets.US_ASCII);

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("text/plain");
            resp.setContentLength(OK.length);
            resp.getOutputStream().write(OK);
        }
    }
}
