package dev.sluice.internal;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.failover.CircuitBreaker;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The composition's order, and what each layer may and may not do to the others. */
class LimiterStackTest {

    private static final Rule API = Rule.of("api", Algorithm.FIXED_WINDOW, 1000, Duration.ofMinutes(1));
    private static final Rule FLOOD = Rule.of("flood", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));

    /** Redis as the stack sees it: decides (denying the flood rule) until told to fail, counting calls. */
    private static final class ScriptedRedis implements dev.sluice.limiter.RateLimiter {
        volatile boolean failing;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            calls.incrementAndGet();
            if (failing) {
                failures.incrementAndGet();
                throw new LimiterUnavailableException("partitioned", null, true);
            }
            List<RuleDecision> out = new ArrayList<>();
            for (Acquisition a : acquisitions) {
                boolean deny = a.rule().name().equals("flood");
                out.add(new RuleDecision(a.rule(), !deny, deny ? 0 : 999, deny ? 3_600_000 : 0, 60_000, 0,
                        RuleDecision.Source.REDIS));
            }
            return Decision.of(out);
        }
    }

    private static LimiterStack stack(ScriptedRedis redis) {
        // the breaker stays open for a minute once open: no probe, whatever time the test's loop takes on a busy machine
        SluiceConfig config = SluiceConfig.builder().rule(API).rule(FLOOD).redisUrl("redis://127.0.0.1:1")
                .breakerOpenBase(Duration.ofMinutes(1)).breakerOpenMax(Duration.ofMinutes(1)).build();
        return LimiterStack.build(config, Clock.SYSTEM, null, new SluiceMetrics(), engine -> redis);
    }

    /**
     * The defect a review found in 0.1: the cache sat inside the failure handling, so every denial it
     * answered during a partition counted as a Redis success and reset the breaker's failure count;
     * one denied client's flood kept the breaker closed and everybody else paid the timeout.
     */
    @Test
    void aDeniedClientsFloodDoesNotKeepTheBreakerFromOpening() {
        ScriptedRedis redis = new ScriptedRedis();
        try (LimiterStack stack = stack(redis)) {
            List<Acquisition> flood = List.of(new Acquisition(FLOOD, ClientKey.parse("ip=203.0.113.66")));
            assertThat(stack.limiter().decide(flood).allowed()).isFalse();
            redis.failing = true; // partitioned

            for (int i = 0; i < 100; i++) {
                for (int f = 0; f < 50; f++) {
                    Decision d = stack.limiter().decide(flood);
                    assertThat(d.allowed()).as("denied until its retry-after, Redis or no Redis").isFalse();
                    assertThat(d.rules().get(0).source()).isEqualTo(RuleDecision.Source.CACHE);
                }
                Decision other = stack.limiter().decide(List.of(new Acquisition(API, ClientKey.parse("ip=10.0.0." + i))));
                assertThat(other.allowed()).isTrue();
            }

            assertThat(stack.failover().breakerState()).isNotEqualTo(CircuitBreaker.State.CLOSED);
            assertThat(redis.failures.get()).as("calls that paid the timeout: the breaker's threshold, then none")
                    .isEqualTo(3);
        }
    }

    @Test
    void whenRedisAnswersAgainAfterAnOutageEveryRememberedDenialIsForgotten() throws Exception {
        ScriptedRedis redis = new ScriptedRedis();
        try (LimiterStack stack = stack(redis)) {
            List<Acquisition> flood = List.of(new Acquisition(FLOOD, ClientKey.parse("ip=203.0.113.66")));
            stack.limiter().decide(flood);
            assertThat(stack.cache().size()).isEqualTo(1);

            redis.failing = true;
            stack.limiter().decide(List.of(new Acquisition(API, ClientKey.parse("ip=10.0.0.1"))));
            redis.failing = false;
            stack.limiter().decide(List.of(new Acquisition(API, ClientKey.parse("ip=10.0.0.1"))));

            assertThat(stack.cache().size()).as("Redis may be back without its data").isZero();
            int before = redis.calls.get();
            stack.limiter().decide(flood);
            assertThat(redis.calls.get()).as("the flood's next request asks Redis").isEqualTo(before + 1);
        }
    }

    @Test
    void theLocalBackendIsTheLocalEngineAlone() {
        SluiceConfig config = SluiceConfig.builder().rule(API).backend(SluiceConfig.Backend.LOCAL).build();
        try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, new SluiceMetrics())) {
            assertThat(stack.limiter()).isSameAs(stack.local());
            assertThat(stack.redis()).isNull();
            assertThat(stack.cache()).isNull();
            assertThat(stack.limiter().decide(List.of(new Acquisition(API, ClientKey.of("x")))).rules().get(0).source())
                    .isEqualTo(RuleDecision.Source.LOCAL);
        }
    }
}
