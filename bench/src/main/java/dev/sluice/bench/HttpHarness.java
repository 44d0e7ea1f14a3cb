package dev.sluice.bench;

import dev.sluice.bench.webapp.Hello;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;
import redis.clients.jedis.JedisPooled;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The HTTP target {@code wrk} loads: one embedded Apache Tomcat 11 (NIO connector, its default 200
 * request threads, keep-alive without a request limit) on 127.0.0.1 serving a trivial servlet (200,
 * two bytes), behind one of:
 * <ul>
 *   <li>{@code none}: no filter, the container's own cost;</li>
 *   <li>{@code local}: Sluice with {@code backend=local};</li>
 *   <li>{@code local-no-headers}: the same with {@code headers=none}: what the five rate-limit fields
 *       of {@code headers=both} cost (Tomcat encodes every header name and value it writes);</li>
 *   <li>{@code evalsha}: the reference for Sluice on Redis, {@link EvalshaFilter}: one EVALSHA of
 *       {@code return 1} per request over a pooled connection, nothing else;</li>
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
        Path base = Files.createTempDirectory("sluice-bench-tomcat");
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector("HTTP/1.1");
        connector.setPort(port);
        connector.setProperty("address", "127.0.0.1");
        connector.setProperty("maxKeepAliveRequests", "-1"); // as wrk expects: connections stay open
        tomcat.getService().addConnector(connector);
        tomcat.setConnector(connector);

        Context context = tomcat.addContext("", base.toString());
        Tomcat.addServlet(context, "hello", new Hello());
        context.addServletMappingDecoded("/*", "hello");
        Map<String, String> params = filterParams(variant);
        if (params != null) {
            FilterDef filter = new FilterDef();
            filter.setFilterName(variant);
            filter.setFilterClass(variant.equals("evalsha") ? EvalshaFilter.class.getName() : "dev.sluice.RateLimitFilter");
            params.forEach(filter::addInitParameter);
            context.addFilterDef(filter);
            FilterMap map = new FilterMap();
            map.setFilterName(variant);
            map.addURLPattern("/*");
            context.addFilterMap(map);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(HttpHarness::printSluiceMetrics));
        tomcat.start();
        System.out.println("listening on 127.0.0.1:" + port + " variant " + variant);
        tomcat.getServer().await();
    }

    /**
     * On exit, Sluice's own counters (its MXBeans): how many decisions fell back to the local
     * backstop and how many Redis calls timed out, so a run can tell Redis decisions from fallbacks.
     */
    private static void printSluiceMetrics() {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            for (ObjectName name : server.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null)) {
                long decisions = ((Number) server.getAttribute(name, "Allowed")).longValue()
                        + ((Number) server.getAttribute(name, "Denied")).longValue();
                System.out.printf("SLUICE %s decisions=%d fallback=%s timeouts=%s errors=%s%n", name, decisions,
                        server.getAttribute(name, "FallbackDecisions"), server.getAttribute(name, "RedisTimeouts"),
                        server.getAttribute(name, "RedisErrors"));
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
        // -Dsluice.bench.headers=draft|legacy|none: what the rate-limit fields cost over HTTP
        p.put("headers", System.getProperty("sluice.bench.headers", "both"));
        switch (variant) {
            case "none" -> {
                return null;
            }
            case "evalsha" -> {
                return new LinkedHashMap<>();
            }
            case "local" -> p.put("backend", "local");
            case "local-no-headers" -> {
                p.put("backend", "local");
                p.put("headers", "none");
            }
            case "redis" -> p.put("redis.url", BenchRedis.uri().toString());
            case "redis-denied" -> {
                p.put("redis.url", BenchRedis.uri().toString());
                p.put("rule.api.limit", "1");
                p.put("rule.api.window", "1h");
            }
            default -> throw new IllegalArgumentException("variant: none, local, local-no-headers, evalsha, redis or redis-denied, not " + variant);
        }
        // as generous as the JMH contenders': on 2 shared cores the default 50 ms is exceeded at the
        // tail, and a decision that times out falls back to the local backstop (counted on exit)
        p.put("redis.timeout", BenchRedis.TIMEOUT_MS + "ms");
        p.put("redis.pool.max-total", Integer.toString(BenchRedis.POOL_SIZE));
        p.put("redis.pool.max-idle", Integer.toString(BenchRedis.POOL_SIZE));
        p.put("key-prefix", BenchRedis.prefix("http"));
        return p;
    }

    /**
     * What a filter that asks Redis once per request costs at the least: one EVALSHA of
     * {@code return 1} on a pool of Sluice's size and timeout, and nothing else.
     */
    public static final class EvalshaFilter implements Filter {
        private JedisPooled jedis;
        private String sha;

        @Override
        public void init(FilterConfig config) {
            jedis = BenchRedis.pooled();
            sha = jedis.scriptLoad("return 1");
        }

        @Override
        public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
                throws IOException, ServletException {
            jedis.evalsha(sha, List.of(), List.of());
            chain.doFilter(request, response);
        }

        @Override
        public void destroy() {
            jedis.close();
        }
    }
}
