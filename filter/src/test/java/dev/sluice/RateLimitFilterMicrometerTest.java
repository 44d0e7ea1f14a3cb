package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The filter's Micrometer meters, read from a registry added to Micrometer's global registry as an
 * application does (Prometheus, OTLP, ...), for every outcome of a decision: the local engine, a
 * real Redis, and a Redis of the test's own that stops answering.
 */
class RateLimitFilterMicrometerTest {

    private static final List<String> OUTCOMES = List.of("allowed", "denied", "dry-run-denied", "fallback-allowed",
            "fallback-denied", "unavailable", "exempt");

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final List<RateLimitFilter> filters = new ArrayList<>();
    private final CountingChain chain = new CountingChain();

    @BeforeEach
    void addRegistry() {
        Metrics.addRegistry(registry);
    }

    @AfterEach
    void removeRegistry() {
        filters.forEach(RateLimitFilter::destroy);
        Metrics.removeRegistry(registry);
        registry.close();
    }

    @Test
    void eachRuleThatAppliedCountsTheRequestOnceWithItsOwnVerdict() throws Exception {
        RateLimitFilter filter = started("mm-local", "rules", "api, search", "backend", "local",
                "exempt-ips", "198.51.100.0/24",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "5", "rule.api.window", "1h",
                "rule.search.algorithm", "fixed-window", "rule.search.limit", "1", "rule.search.window", "1h",
                "rule.search.match", "/search");

        for (int i = 0; i < 6; i++) send(filter, "GET", "/a", "192.0.2.1");     // 5 allowed, the 6th denied
        send(filter, "GET", "/search", "192.0.2.2");                             // both rules admit
        assertThat(send(filter, "GET", "/search", "192.0.2.2")).isEqualTo("429"); // search denies; api would admit
        send(filter, "GET", "/search", "198.51.100.7");                          // exempt: both rules would apply
        send(filter, "GET", "/a", "198.51.100.7");                               // exempt: api would apply

        assertThat(outcomes("mm-local", "api")).isEqualTo(Map.of("allowed", 7L, "denied", 1L, "exempt", 2L));
        assertThat(outcomes("mm-local", "search")).isEqualTo(Map.of("allowed", 1L, "denied", 1L, "exempt", 1L));
        assertThat(jmx("mm-local", "api", "Allowed")).as("the MXBean counts only what passed (was charged)").isEqualTo(6L);
        assertThat(jmx("mm-local", "api", "Exempt")).isEqualTo(2L);
        assertThat(nearLimit("mm-local", "api")).as("api left 1 and 0 of 5, then 4 with /search").isEqualTo(2);
        assertThat(nearLimit("mm-local", "search")).as("search left 0 of 1").isEqualTo(1);
        assertThat(jmx("mm-local", "search", "NearLimit")).isEqualTo(1L);
        assertThat(latencyCount("mm-local", "local")).as("one timing per decision; exempt requests are not decided")
                .isEqualTo(8);
        assertThat(registry.find("sluice.breaker.state").tag("instance", "mm-local").meter())
                .as("backend=local has no breaker").isNull();
    }

    @Test
    void dryRunDenialsAreCountedApartAndPass() throws Exception {
        RateLimitFilter filter = started("mm-dry", "rules", "api", "backend", "local", "mode", "dry-run",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "1", "rule.api.window", "1h");

        send(filter, "GET", "/a", "192.0.2.1");
        send(filter, "GET", "/a", "192.0.2.1");

        assertThat(chain.passed).isEqualTo(2);
        assertThat(outcomes("mm-dry", "api")).isEqualTo(Map.of("allowed", 1L, "dry-run-denied", 1L));
    }

    @Test
    void aShadowRuleIsWatchedThroughItsDryRunDenialsWhileTheOthersEnforce() throws Exception {
        RateLimitFilter filter = started("mm-shadow", "rules", "api, strict", "backend", "local",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "3", "rule.api.window", "1h",
                "rule.strict.algorithm", "fixed-window", "rule.strict.limit", "1", "rule.strict.window", "1h",
                "rule.strict.mode", "dry-run");

        for (int i = 0; i < 4; i++) send(filter, "GET", "/a", "192.0.2.1");

        assertThat(chain.passed).as("api enforces its 3").isEqualTo(3);
        assertThat(outcomes("mm-shadow", "strict")).isEqualTo(Map.of("allowed", 1L, "dry-run-denied", 3L));
        assertThat(outcomes("mm-shadow", "api")).isEqualTo(Map.of("allowed", 3L, "denied", 1L));
    }

    @Test
    void withRedisADenialFromTheDeniedClientCacheIsADenialAndACacheHit() throws Exception {
        RateLimitFilter filter = started("mm-redis", "rules", "api", "redis.url", TestRedis.url(),
                "key-prefix", TestRedis.uniquePrefix("mm-redis"), "redis.timeout", "2s",
                "denied-cache.revalidate", "1h", // the second denial is answered from memory however slow the test
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "2", "rule.api.window", "1h");
        WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(10)); // the four requests in one window

        for (int i = 0; i < 4; i++) send(filter, "GET", "/a", "192.0.2.1");

        assertThat(outcomes("mm-redis", "api")).isEqualTo(Map.of("allowed", 2L, "denied", 2L));
        assertThat(count("sluice.denied.cache.hits", "mm-redis")).isEqualTo(1);
        assertThat(gauge("sluice.denied.cache.size", "mm-redis")).isEqualTo(1);
        assertThat(latencyCount("mm-redis", "redis")).isEqualTo(3);
        assertThat(latencyCount("mm-redis", "cache")).isEqualTo(1);
        assertThat(nearLimit("mm-redis", "api")).isEqualTo(1);
        assertThat(gauge("sluice.breaker.state", "mm-redis")).as("closed").isZero();
        assertThat(registry.get("sluice.redis.errors").tags("instance", "mm-redis").functionCounters())
                .allSatisfy(c -> assertThat(c.count()).isZero()).hasSize(2);
    }

    @Test
    void aRedisThatStopsAnsweringShowsTimeoutsErrorsTheBreakerFallbacksAndRefusals() throws Exception {
        try (RedisProcess redis = RedisProcess.start()) {
            RateLimitFilter filter = started("mm-outage", "rules", "api, login", "redis.url", redis.url(),
                    "redis.timeout", "200ms",
                    // no probe during the test: the failures below are exactly the calls the requests made
                    "redis.breaker.open-base", "1h", "redis.breaker.open-max", "1h",
                    "rule.api.algorithm", "fixed-window", "rule.api.limit", "10", "rule.api.window", "1h",
                    "rule.api.fallback-limit", "2",
                    "rule.login.limit", "5", "rule.login.window", "1h", "rule.login.match", "POST /login",
                    "rule.login.failure-policy", "closed");

            assertThat(send(filter, "GET", "/a", "192.0.2.1")).isEqualTo("200");      // Redis
            redis.pause();
            assertThat(send(filter, "GET", "/a", "192.0.2.1")).isEqualTo("200");      // timeout: backstop 1 of 2
            redis.kill();
            assertThat(send(filter, "GET", "/a", "192.0.2.1")).isEqualTo("200");      // refused: backstop 2 of 2
            assertThat(send(filter, "POST", "/login", "192.0.2.1")).isEqualTo("503"); // third failure: breaker opens
            assertThat(send(filter, "GET", "/a", "192.0.2.1")).isEqualTo("429");      // breaker open: backstop denies

            assertThat(outcomes("mm-outage", "api")).isEqualTo(Map.of("allowed", 1L, "fallback-allowed", 2L,
                    "fallback-denied", 1L, "unavailable", 1L));
            assertThat(outcomes("mm-outage", "login")).isEqualTo(Map.of("unavailable", 1L));
            assertThat(registry.get("sluice.redis.errors").tags("instance", "mm-outage", "kind", "timeout")
                    .functionCounter().count()).isEqualTo(1);
            assertThat(registry.get("sluice.redis.errors").tags("instance", "mm-outage", "kind", "error")
                    .functionCounter().count()).isEqualTo(2);
            assertThat(gauge("sluice.breaker.state", "mm-outage")).as("open").isEqualTo(2);
            assertThat(count("sluice.breaker.openings", "mm-outage")).isEqualTo(1);
            assertThat(nearLimit("mm-outage", "api")).as("the backstop's second admission left 0 of its 2").isEqualTo(1);
            assertThat(latencyCount("mm-outage", "redis")).isEqualTo(1);
            assertThat(latencyCount("mm-outage", "backstop")).isEqualTo(3);
            assertThat(latencyCount("mm-outage", "unavailable")).isEqualTo(1);
            assertThat(jmx("mm-outage", "api", "FallbackDecisions")).isEqualTo(3L);
            assertThat(jmx("mm-outage", "login", "ClosedRuleRefusals")).isEqualTo(1L);
        }
    }

    @Test
    void destroyRemovesEveryMeterFromTheRegistry() throws Exception {
        RateLimitFilter filter = started("mm-gone", "rules", "api", "backend", "local",
                "rule.api.limit", "5", "rule.api.window", "1h");
        send(filter, "GET", "/a", "192.0.2.1");
        assertThat(meters("mm-gone")).isNotEmpty();

        filters.remove(filter);
        filter.destroy();

        assertThat(meters("mm-gone")).as("in the application's registry").isEmpty();
        assertThat(Metrics.globalRegistry.getMeters()).as("in the global registry")
                .noneMatch(m -> "mm-gone".equals(m.getId().getTag("instance")));
    }

    @Test
    void twoFiltersOfTheSameNameHaveTheirOwnInstanceTag() throws Exception {
        RateLimitFilter first = started("mm-twin", "rules", "api", "backend", "local",
                "rule.api.limit", "5", "rule.api.window", "1h");
        RateLimitFilter second = started("mm-twin", "rules", "api", "backend", "local",
                "rule.api.limit", "5", "rule.api.window", "1h");

        send(first, "GET", "/a", "192.0.2.1");
        send(second, "GET", "/a", "192.0.2.1");
        send(second, "GET", "/a", "192.0.2.1");

        assertThat(outcomes("mm-twin", "api")).isEqualTo(Map.of("allowed", 1L));
        assertThat(outcomes("mm-twin-2", "api")).as("the JMX name's suffix").isEqualTo(Map.of("allowed", 2L));
    }

    @Test
    void metricsMicrometerFalseRegistersNothing() throws Exception {
        int before = registry.getMeters().size();
        RateLimitFilter filter = started("mm-off", "rules", "api", "backend", "local", "metrics.micrometer", "false",
                "rule.api.limit", "5", "rule.api.window", "1h");

        send(filter, "GET", "/a", "192.0.2.1");

        assertThat(registry.getMeters()).hasSize(before);
        assertThat(jmx("mm-off", "api", "Allowed")).as("JMX as before").isEqualTo(1L);
    }

    @Test
    void aReloadMovesTheMetersWithTheRulesAndIsCounted(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        write(file, "rules = api, old\nbackend = local\nrule.api.limit = 5\nrule.api.window = 1h\n"
                + "rule.old.limit = 5\nrule.old.window = 1h\n");
        RateLimitFilter filter = started("mm-reload", "config", "file:" + file);
        send(filter, "GET", "/a", "192.0.2.1");

        write(file, "rules = api, fresh\nbackend = local\nrule.api.limit = 9\nrule.api.window = 1h\n"
                + "rule.fresh.limit = 5\nrule.fresh.window = 1h\n");
        assertThat(filter.reload()).startsWith("applied");
        send(filter, "GET", "/a", "192.0.2.1");

        assertThat(outcomes("mm-reload", "api")).as("a kept rule keeps its counts").isEqualTo(Map.of("allowed", 2L));
        assertThat(outcomes("mm-reload", "fresh")).isEqualTo(Map.of("allowed", 1L));
        assertThat(registry.find("sluice.decisions").tags("instance", "mm-reload", "rule", "old").meters()).isEmpty();
        assertThat(registry.get("sluice.reloads").tags("instance", "mm-reload", "result", "success").functionCounter()
                .count()).isEqualTo(1);
    }

    @Test
    void turningMicrometerOffIsAKeyAReloadRefuses(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        String config = "rules = api\nbackend = local\nrule.api.limit = 5\nrule.api.window = 1h\n";
        write(file, config);
        RateLimitFilter filter = started("mm-refused", "config", "file:" + file);

        write(file, config + "metrics.micrometer = false\n");

        assertThat(filter.reload()).startsWith("refused").contains("metrics.micrometer").contains("cannot change while running");
        assertThat(registry.get("sluice.reloads").tags("instance", "mm-refused", "result", "failure").functionCounter()
                .count()).isEqualTo(1);
        assertThat(outcomes("mm-refused", "api")).as("the meters stay").isEmpty();
    }

    /** As a configuration tool does: write elsewhere, then rename over the file. */
    private static void write(Path file, String content) throws Exception {
        Path tmp = Files.createTempFile(file.getParent(), "new-", ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * On a fake instance clock: the local engine's and the backstop's fixed windows of an hour never end
     * among a test's requests (a rule on Redis's clock waits for room in Redis's hour instead).
     */
    private RateLimitFilter started(String name, String... params) throws Exception {
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY));
        filter.init(FakeServlet.filterConfig(name, FakeServlet.params(params)));
        filters.add(filter);
        return filter;
    }

    /** The status the client saw: 200 when the request passed. */
    private String send(RateLimitFilter filter, String method, String path, String ip) throws Exception {
        Map<String, String> response = new HashMap<>();
        long before = chain.passed;
        filter.doFilter(FakeServlet.request(method, path, ip), FakeServlet.response(response), chain);
        return chain.passed > before ? "200" : response.get("status");
    }

    /** The non-zero outcomes of {@code sluice.decisions} of one rule; every outcome's counter must exist. */
    private Map<String, Long> outcomes(String instance, String rule) {
        Map<String, Long> out = new TreeMap<>();
        for (String outcome : OUTCOMES) {
            long n = (long) registry.get("sluice.decisions").tags("instance", instance, "rule", rule, "outcome", outcome)
                    .functionCounter().count();
            if (n != 0) out.put(outcome, n);
        }
        return out;
    }

    private double nearLimit(String instance, String rule) {
        return registry.get("sluice.decisions.near.limit").tags("instance", instance, "rule", rule).functionCounter().count();
    }

    private long latencyCount(String instance, String source) {
        return registry.get("sluice.decision.latency").tags("instance", instance, "source", source).timer().count();
    }

    private double count(String name, String instance) {
        return registry.get(name).tags("instance", instance).functionCounter().count();
    }

    private double gauge(String name, String instance) {
        return registry.get(name).tags("instance", instance).gauge().value();
    }

    private List<Meter> meters(String instance) {
        return registry.getMeters().stream().filter(m -> instance.equals(m.getId().getTag("instance"))).toList();
    }

    private static Object jmx(String instance, String rule, String attribute) throws Exception {
        ObjectName name = new ObjectName("dev.sluice:type=Rule,name=" + instance + ",rule=" + rule);
        return ManagementFactory.getPlatformMBeanServer().getAttribute(name, attribute);
    }
}
