package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.ExportStats;
import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The failure policy over HTTP, with the WAR's own Redis taken away: the {@code api} rule fails
 * open (the local backstop decides), the {@code login} rule fails closed (503). No request waits
 * much longer than {@code redis.timeout}; when Redis returns, decisions go back to it by themselves.
 * The JMX figures of the filter say what happened.
 */
class RedisOutageIT {

    static final long TIMEOUT_MS = 100;
    /** A decision may take the timeout plus scheduling noise on a busy 2-core CI machine. */
    static final long SLOW_MS = TIMEOUT_MS + 400;

    private RedisProcess redis;
    private WebApp app;

    @BeforeEach
    void start() throws Exception {
        redis = RedisProcess.start();
        app = WebApp.start(ExampleApp.named("outage").with("redis.url", redis.url(), "redis.timeout", TIMEOUT_MS + "ms",
                "rule.api.limit", "100000", "rule.api.window", "1m", "rule.api.fallback-limit", "100000",
                "rule.exports.fallback-limit", "1").sluice());
    }

    @AfterEach
    void stop() throws Exception {
        if (app != null) app.close();
        if (redis != null) redis.close();
    }

    @Test
    void killedRedisFailsApiOpenAndLoginClosedThenRecoversEmpty() throws Exception {
        assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(200);
        assertThat(Http.post(app.uri("/login")).statusCode()).isEqualTo(401);

        redis.kill();
        List<Long> latencies = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            long t0 = System.nanoTime();
            HttpResponse<String> api = Http.get(app.uri("/api/x"));
            latencies.add((System.nanoTime() - t0) / 1_000_000);
            assertThat(api.statusCode()).as("open rule during the outage").isEqualTo(200);
            HttpResponse<String> login = Http.post(app.uri("/login"));
            assertThat(login.statusCode()).as("closed rule during the outage").isEqualTo(503);
            assertThat(Long.parseLong(login.headers().firstValue("Retry-After").orElseThrow())).isPositive();
        }
        long p99 = percentile(latencies, 99);
        assertThat(p99).as("p99 latency of an open rule while Redis is dead").isLessThan(SLOW_MS);

        ObjectName bean = limiterBean();
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        assertThat((Long) jmx.getAttribute(bean, "FallbackDecisions")).isGreaterThanOrEqualTo(40);
        assertThat((Long) jmx.getAttribute(bean, "ClosedRuleRefusals")).isGreaterThanOrEqualTo(40);
        assertThat((Long) jmx.getAttribute(bean, "RedisErrors")).isPositive();
        assertThat((String) jmx.getAttribute(bean, "BreakerState")).isIn("OPEN", "HALF_OPEN");

        redis.restart(); // empty: no keys, no script cache
        long restarted = System.nanoTime();
        long recoveredMs = -1;
        while (System.nanoTime() - restarted < 10_000_000_000L) {
            if (loginDecidedByRedis()) {
                recoveredMs = (System.nanoTime() - restarted) / 1_000_000;
                break;
            }
        }
        System.out.printf("OUTAGE kill: 80 requests served during the outage, p99 %d ms (timeout %d ms), recovered %d ms after restart%n",
                p99, TIMEOUT_MS, recoveredMs);
        assertThat(recoveredMs).as("ms until Redis decides again").isBetween(0L, 3_000L);
        assertThat((String) jmx.getAttribute(bean, "BreakerState")).isEqualTo("CLOSED");
    }

    /**
     * A concurrency rule while Redis is away (the example's {@code exports}, open, 2 slots, 1 in the
     * backstop): the backstop counts the client's exports in flight on this instance, refuses one past
     * its {@code fallback-limit} saying that limit, and frees the slot when its export answers.
     */
    @Test
    void killedRedisLeavesExportsInFlightCountedByTheBackstop() throws Exception {
        assertThat(Http.get(app.uri("/exports/before?ms=0")).statusCode()).isEqualTo(200);
        redis.kill();
        CompletableFuture<HttpResponse<String>> running = Http.getAsync(app.uri("/exports/a?ms=15000&until=outage"));
        Poll.until(Duration.ofSeconds(10), "the first export running",
                () -> ExportStats.at(app.uri("/exports/stats")).client("127.0.0.1").inFlight() == 1);
        HttpResponse<String> refused = Http.get(app.uri("/exports/b?ms=0"));
        assertThat(refused.statusCode()).as("a second export while the first runs, past the backstop's one").isEqualTo(429);
        assertThat(refused.headers().firstValue("RateLimit-Policy")).as("the limit that decided: the backstop's")
                .hasValue("\"exports\";q=1");
        assertThat(refused.headers().firstValue("X-RateLimit-Limit")).hasValue("1");
        assertThat(refused.body()).contains("\"violated-policies\":[\"exports\"]");

        HttpResponse<String> released = Http.post(app.uri("/exports/stats/release?until=outage"));
        assertThat(released.body().trim()).isEqualTo("released 1");
        assertThat(running.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(Http.get(app.uri("/exports/c?ms=0")).statusCode()).as("its slot freed in the backstop").isEqualTo(200);
        assertThat((Long) ManagementFactory.getPlatformMBeanServer().getAttribute(limiterBean(), "FallbackDecisions"))
                .isGreaterThanOrEqualTo(3);
    }

    @Test
    void pausedRedisCostsAtMostAboutOneTimeout() throws Exception {
        assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(200);
        redis.pause();
        try {
            List<Long> latencies = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                long t0 = System.nanoTime();
                assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(200);
                latencies.add((System.nanoTime() - t0) / 1_000_000);
                assertThat(Http.post(app.uri("/login")).statusCode()).isEqualTo(503);
            }
            long p99 = percentile(latencies, 99);
            System.out.printf("OUTAGE pause: p99 %d ms, max %d ms (timeout %d ms)%n", p99, Collections.max(latencies), TIMEOUT_MS);
            assertThat(Collections.max(latencies)).isLessThan(SLOW_MS);
        } finally {
            redis.resume();
        }
        long resumed = System.nanoTime();
        long recoveredMs = -1;
        while (System.nanoTime() - resumed < 10_000_000_000L) {
            if (loginDecidedByRedis()) {
                recoveredMs = (System.nanoTime() - resumed) / 1_000_000;
                break;
            }
        }
        System.out.printf("OUTAGE pause: recovered %d ms after SIGCONT%n", recoveredMs);
        assertThat(recoveredMs).isBetween(0L, 3_000L);
    }

    /**
     * A login attempt that Redis decided (401 from the servlet, not 503 from the closed rule). A
     * keep-alive connection the server dropped during the outage may fail once: that is no answer.
     */
    private boolean loginDecidedByRedis() {
        try {
            return Http.post(app.uri("/login")).statusCode() == 401;
        } catch (java.io.UncheckedIOException droppedConnection) {
            return false;
        }
    }

    private static ObjectName limiterBean() throws Exception {
        Set<ObjectName> names = ManagementFactory.getPlatformMBeanServer()
                .queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null);
        assertThat(names).as("the filter's MXBean is registered").hasSize(1);
        return names.iterator().next();
    }

    static long percentile(List<Long> values, int p) {
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(index, sorted.size() - 1)));
    }
}
