package dev.sluice.internal.metrics;

import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.RuleDecision.Source;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The meters follow the counters when the rules change (a reload), and count reloads. */
class MicrometerMetersTest {

    private static final Rule API = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
    private static final Rule LOGIN = Rule.of("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
    private static final Rule SEARCH = Rule.of("search", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final SluiceMetrics metrics = new SluiceMetrics();

    @AfterEach
    void unregister() {
        metrics.unregister();
    }

    @Test
    void aRuleKeptByAChangeKeepsItsCountsANewOneGetsMetersADroppedOneLosesThem() throws Exception {
        metrics.register("mm-change", List.of(API, LOGIN));
        Micrometer.bind(metrics, registry, config());
        metrics.recordDecision(Decision.of(List.of(allow(API), allow(LOGIN))), 1000);

        Rule raised = Rule.of("api", Algorithm.TOKEN_BUCKET, 500, Duration.ofMinutes(1));
        metrics.updateRules(List.of(raised, SEARCH));
        metrics.recordDecision(Decision.of(List.of(allow(raised), allow(SEARCH))), 1000);

        assertThat(allowed("api")).isEqualTo(2);
        assertThat(allowed("search")).isEqualTo(1);
        assertThat(registry.find("sluice.decisions").tag("rule", "login").meters()).isEmpty();
        var server = ManagementFactory.getPlatformMBeanServer();
        assertThat(server.getAttribute(SluiceMetrics.ruleObjectName("mm-change", "api"), "Limit")).isEqualTo(500L);
        assertThat(server.isRegistered(SluiceMetrics.ruleObjectName("mm-change", "search"))).isTrue();
        assertThat(server.isRegistered(SluiceMetrics.ruleObjectName("mm-change", "login"))).isFalse();
        assertThat(server.queryNames(new ObjectName("dev.sluice:name=mm-change,*"), null)).hasSize(3);
    }

    @Test
    void reloadsAreCountedBySuccessAndFailure() {
        metrics.updateRules(List.of(API));
        Micrometer.bind(metrics, registry, config());

        metrics.recordReload(true, "rule.api.limit 100 -> 500");
        metrics.recordReload(false, "rule.api.limit='ten': not a number");
        metrics.recordReload(false, "the file is gone");

        assertThat(registry.get("sluice.reloads").tags("result", "success").functionCounter().count()).isEqualTo(1);
        assertThat(registry.get("sluice.reloads").tags("result", "failure").functionCounter().count()).isEqualTo(2);
    }

    @Test
    void aBreakerGaugePerNodeFollowsItsStateAndGoesWithTheNode() {
        metrics.updateRules(List.of(API));
        java.util.Map<String, String> states = new java.util.concurrent.ConcurrentHashMap<>(
                java.util.Map.of("127.0.0.1:7001", "CLOSED", "127.0.0.1:7002", "CLOSED"));
        metrics.breakers(() -> java.util.Map.copyOf(states));
        Micrometer.bind(metrics, registry, config());

        var first = registry.get("sluice.breaker.state").tag("node", "127.0.0.1:7001").gauge();
        var second = registry.get("sluice.breaker.state").tag("node", "127.0.0.1:7002").gauge();
        assertThat(first.value()).isZero();
        states.put("127.0.0.1:7001", "OPEN");
        metrics.recordBreakerState("CLOSED", "OPEN");
        assertThat(first.value()).isEqualTo(2);
        assertThat(second.value()).as("the other master's breaker").isZero();
        states.put("127.0.0.1:7001", "HALF_OPEN");
        assertThat(first.value()).isEqualTo(1);
        assertThat(registry.get("sluice.breaker.openings").functionCounter().count()).isEqualTo(1);
        assertThat(metrics.view().getBreakerState()).isEqualTo("HALF_OPEN");
        assertThat(metrics.view().getBreakerStates()).containsEntry("127.0.0.1:7001", "HALF_OPEN");

        states.remove("127.0.0.1:7001"); // failed over: its replica took its place
        states.put("127.0.0.1:7004", "CLOSED");
        metrics.breakersChanged();

        assertThat(registry.find("sluice.breaker.state").gauges()).extracting(g -> g.getId().getTag("node"))
                .containsExactlyInAnyOrder("127.0.0.1:7002", "127.0.0.1:7004");
    }

    @Test
    void recordingADecisionWithMetersAllocatesNothing() {
        metrics.updateRules(List.of(API, LOGIN));
        Micrometer.bind(metrics, registry, config());
        Decision d = Decision.of(List.of(allow(API), new RuleDecision(LOGIN, false, 0, 500, 1000, 0, Source.REDIS)));
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 500_000; i++) metrics.recordDecision(d, i); // warm up, let the JIT inline

        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 100_000; i++) metrics.recordDecision(d, i * 10L);
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;

        assertThat(allocated).as("bytes allocated by 100,000 recordings with a timer").isLessThan(10_000);
        assertThat(registry.get("sluice.decision.latency").tag("source", "redis").timer().count()).isEqualTo(600_000);
    }

    private double allowed(String rule) {
        return registry.get("sluice.decisions").tags("rule", rule, "outcome", "allowed").functionCounter().count();
    }

    private static SluiceConfig config() {
        return SluiceConfig.builder().rule(API).build();
    }

    private static RuleDecision allow(Rule r) {
        return new RuleDecision(r, true, 10, 0, 1000, 0, Source.REDIS);
    }
}
