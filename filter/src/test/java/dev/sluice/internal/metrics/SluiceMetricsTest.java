package dev.sluice.internal.metrics;

import dev.sluice.key.ClientKey;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.failover.FailoverLimiter;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.RuleDecision.Source;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class SluiceMetricsTest {

    private static final Rule API = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
    private static final Rule LOGIN = new Rule("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1), 5, 1,
            FailurePolicy.CLOSED, 5, Duration.ZERO);

    private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    private final List<SluiceMetrics> created = new ArrayList<>();

    @AfterEach
    void unregisterAll() {
        created.forEach(SluiceMetrics::unregister);
    }

    @Test
    void registersOneBeanPerInstanceAndRuleUnderStableNames() throws Exception {
        metrics().register("shop", List.of(API, LOGIN));

        assertThat(server.isRegistered(new ObjectName("dev.sluice:type=RateLimiter,name=shop"))).isTrue();
        assertThat(server.isRegistered(new ObjectName("dev.sluice:type=Rule,name=shop,rule=api"))).isTrue();
        assertThat(server.isRegistered(new ObjectName("dev.sluice:type=Rule,name=shop,rule=login"))).isTrue();
        assertThat(server.getAttribute(new ObjectName("dev.sluice:type=Rule,name=shop,rule=login"), "FailurePolicy"))
                .isEqualTo("closed");
        assertThat(server.getAttribute(new ObjectName("dev.sluice:type=Rule,name=shop,rule=api"), "Algorithm"))
                .isEqualTo("token-bucket");
    }

    @Test
    void unregisterRemovesEveryBean() throws Exception {
        SluiceMetrics m = metrics();
        m.register("gone", List.of(API, LOGIN));

        m.unregister();

        assertThat(server.queryNames(new ObjectName("dev.sluice:name=gone,*"), null)).isEmpty();
    }

    @Test
    void aSecondInstanceWithTheSameNameGetsASuffixInsteadOfFailing() throws Exception {
        metrics().register("app", List.of(API));

        String second = metrics().register("app", List.of(API));

        assertThat(second).isEqualTo("app-2");
        assertThat(server.isRegistered(new ObjectName("dev.sluice:type=Rule,name=app-2,rule=api"))).isTrue();
    }

    @Test
    void namesWithJmxSpecialCharactersAreQuoted() throws Exception {
        metrics().register("/shop:8080", List.of(API));

        ObjectName expected = new ObjectName("dev.sluice:type=RateLimiter,name=" + ObjectName.quote("/shop:8080"));
        assertThat(server.isRegistered(expected)).isTrue();
        assertThat(server.getAttribute(expected, "InstanceName")).isEqualTo("/shop:8080");
    }

    @Test
    void countsAllowedDeniedAndDryRunDenialsPerInstanceAndRule() throws Exception {
        SluiceMetrics m = metrics();
        m.register("counts", List.of(API, LOGIN));

        m.recordDecision(decision(allow(API), allow(LOGIN)), 1_000_000);
        m.recordDecision(decision(allow(API), deny(LOGIN)), 1_000_000);
        m.recordDecision(decision(deny(API)), 1_000_000);
        m.recordDecision(decision(deny(API.withDryRun(true))), 1_000_000); // a shadow rule: the request passed

        ObjectName instance = SluiceMetrics.instanceObjectName("counts");
        assertThat(server.getAttribute(instance, "Allowed")).isEqualTo(1L);
        assertThat(server.getAttribute(instance, "Denied")).isEqualTo(2L);
        assertThat(server.getAttribute(instance, "DryRunDenied")).isEqualTo(1L);
        assertThat(server.getAttribute(instance, "Decisions")).isEqualTo(4L);
        ObjectName api = SluiceMetrics.ruleObjectName("counts", "api");
        assertThat(server.getAttribute(api, "Allowed")).as("charged only when the request passed").isEqualTo(1L);
        assertThat(server.getAttribute(api, "Denied")).isEqualTo(1L);
        assertThat(server.getAttribute(api, "DryRunDenied")).isEqualTo(1L);
        assertThat(server.getAttribute(SluiceMetrics.ruleObjectName("counts", "login"), "Denied")).isEqualTo(1L);
    }

    @Test
    void latencyShowsCountMeanMaxAndP99() throws Exception {
        SluiceMetrics m = metrics();
        m.register("latency", List.of(API));
        Decision ok = decision(allow(API));
        for (int i = 0; i < 990; i++) m.recordDecision(ok, 1_000_000);   // 1 ms
        for (int i = 0; i < 10; i++) m.recordDecision(ok, 40_000_000);   // 40 ms

        ObjectName instance = SluiceMetrics.instanceObjectName("latency");
        assertThat((double) server.getAttribute(instance, "LatencyP99Millis")).isBetween(1.0, 1.125);
        assertThat((double) server.getAttribute(instance, "LatencyMaxMillis")).isEqualTo(40.0);
        assertThat((double) server.getAttribute(instance, "LatencyMeanMillis")).isBetween(1.38, 1.40);
        assertThat(server.getAttribute(instance, "LatencyWindowCount")).isEqualTo(1000L);
    }

    @Test
    void recordingADecisionAllocatesNothing() {
        SluiceMetrics m = metrics();
        m.register("alloc", List.of(API, LOGIN));
        Decision d = decision(allow(API), deny(LOGIN));
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 500_000; i++) m.recordDecision(d, i); // warm up, let the JIT inline

        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++) m.recordDecision(d, i * 10L);
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;

        assertThat(allocated).as("bytes allocated by 100,000 recordings").isLessThan(10_000);
    }

    @Test
    void failoverLimiterReportsRedisFailuresFallbacksRefusalsAndBreakerState() throws Exception {
        SluiceMetrics m = metrics();
        m.register("failover", List.of(API, LOGIN));
        int[] calls = {0};
        RateLimiter redis = acquisitions -> {
            calls[0]++;
            throw new LimiterUnavailableException("Redis call failed", null, calls[0] % 2 == 0);
        };
        RateLimiter local = acquisitions -> decision(allow(acquisitions.get(0).rule()));
        FailoverLimiter limiter = new FailoverLimiter(redis, local,
                new SluiceConfig.BreakerSettings(4, Duration.ofMinutes(1), Duration.ofMinutes(1)), "test", m);
        ObjectName instance = SluiceMetrics.instanceObjectName("failover");
        assertThat(server.getAttribute(instance, "BreakerState")).isEqualTo("CLOSED");

        // as Sluice.decide does: the failover limiter counts per request, the recorded decision per rule
        for (int i = 0; i < 10; i++) {
            m.recordDecision(limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=" + i)))), 0);
        }
        m.recordDecision(limiter.decide(List.of(new Acquisition(LOGIN, ClientKey.parse("ip=1")))), 0);

        assertThat(server.getAttribute(instance, "RedisErrors")).isEqualTo(2L);
        assertThat(server.getAttribute(instance, "RedisTimeouts")).isEqualTo(2L);
        assertThat(server.getAttribute(instance, "BreakerState")).isEqualTo("OPEN");
        assertThat(server.getAttribute(instance, "BreakerOpenings")).isEqualTo(1L);
        assertThat(server.getAttribute(instance, "FallbackDecisions")).isEqualTo(10L);
        assertThat(server.getAttribute(instance, "ClosedRuleRefusals")).isEqualTo(1L);
        assertThat(server.getAttribute(SluiceMetrics.ruleObjectName("failover", "api"), "FallbackDecisions")).isEqualTo(10L);
        assertThat(server.getAttribute(SluiceMetrics.ruleObjectName("failover", "login"), "ClosedRuleRefusals")).isEqualTo(1L);
    }

    @Test
    void histogramBucketsNeverReportLessThanTheValueNorMoreThanAnEighthAbove() {
        java.util.Random random = new java.util.Random(42);
        for (int i = 0; i < 100_000; i++) {
            long micros = random.nextInt(4) == 0 ? random.nextInt(64) : (long) Math.exp(random.nextDouble() * 25);
            long bound = LatencyHistogram.upperBoundMicros(LatencyHistogram.bucket(micros));
            assertThat(bound).isGreaterThanOrEqualTo(micros);
            assertThat((double) bound).isLessThanOrEqualTo(micros * 1.125 + 1);
        }
    }

    private SluiceMetrics metrics() {
        SluiceMetrics m = new SluiceMetrics();
        created.add(m);
        return m;
    }

    private static Decision decision(RuleDecision... rules) {
        return Decision.of(List.of(rules));
    }

    private static RuleDecision allow(Rule r) {
        return new RuleDecision(r, true, 10, 0, 1000, 0, Source.REDIS);
    }

    private static RuleDecision deny(Rule r) {
        return new RuleDecision(r, false, 0, 500, 1000, 0, Source.REDIS);
    }
}
