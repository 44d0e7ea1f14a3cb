package dev.sluice.internal.failover;

import dev.sluice.key.ClientKey;
import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RenewalIncomplete;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.limiter.Settlement;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RecordingLogger;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FailoverLimiterTest {

    static final Rule API = new Rule("api", Algorithm.FIXED_WINDOW, 100, Duration.ofMinutes(1), 100, 1,
            FailurePolicy.OPEN, 10, Duration.ZERO);
    static final Rule LOGIN = new Rule("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1), 5, 1,
            FailurePolicy.CLOSED, 5, Duration.ZERO);
    static final SluiceConfig.BreakerSettings BREAKER =
            new SluiceConfig.BreakerSettings(3, Duration.ofSeconds(1), Duration.ofSeconds(8));

    private final ManualClock now = new ManualClock(1_000_000);
    private final FakeRedis redis = new FakeRedis();
    private final FakeLocal local = new FakeLocal();
    private final RecordingLogger log = new RecordingLogger("test");
    private final SluiceMetrics metrics = new SluiceMetrics();
    private final FailoverLimiter limiter =
            new FailoverLimiter(redis, local, BREAKER, "redis://127.0.0.1:6390/0", metrics, now, log, 60_000);

    @Test
    void redisDecidesEverythingWhileItAnswers() {
        for (int i = 0; i < 10; i++) {
            Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")), new Acquisition(LOGIN, ClientKey.parse("ip=1"))));
            assertThat(d.rules()).extracting(RuleDecision::source).containsOnly(Source.REDIS);
        }
        assertThat(redis.calls).isEqualTo(10);
        assertThat(local.received).isEmpty();
        assertThat(log.lines()).isEmpty();
    }

    @Test
    void openRuleFallsBackToLocalEngineAtItsFallbackLimit() {
        redis.failing = true;

        Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"), 2)));

        assertThat(d.allowed()).isTrue();
        assertThat(d.rules()).singleElement().satisfies(r -> {
            assertThat(r.source()).isEqualTo(Source.BACKSTOP);
            assertThat(r.rule().limit()).isEqualTo(10);
        });
        assertThat(local.received).singleElement().satisfies(a -> {
            assertThat(a.rule().limit()).isEqualTo(API.fallbackLimit());
            assertThat(a.clientKey()).isEqualTo(ClientKey.parse("ip=1"));
            assertThat(a.cost()).isEqualTo(2);
        });
    }

    @Test
    void localEngineDenialsStandDuringAnOutage() {
        redis.failing = true;
        local.allow = false;

        Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(d.allowed()).isFalse();
        assertThat(d.unavailable()).isFalse();
    }

    @Test
    void closedRuleIsRefusedAsUnavailableWithRetryAfterOfAtLeastOneSecond() {
        redis.failing = true;

        Decision d = limiter.decide(List.of(new Acquisition(LOGIN, ClientKey.parse("ip=1"))));

        assertThat(d.allowed()).isFalse();
        assertThat(d.unavailable()).isTrue();
        assertThat(d.retryAfterMs()).isEqualTo(1000);
        assertThat(d.rules()).singleElement().satisfies(r -> {
            assertThat(r.allowed()).isFalse();
            assertThat(r.source()).isEqualTo(Source.UNAVAILABLE);
        });
        assertThat(local.received).isEmpty();
    }

    @Test
    void requestWithAClosedRuleIsRefusedAndItsOpenRulesAreNotCharged() {
        redis.failing = true;

        Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")), new Acquisition(LOGIN, ClientKey.parse("ip=1"))));

        assertThat(d.allowed()).isFalse();
        assertThat(d.unavailable()).isTrue();
        assertThat(d.violated()).extracting(r -> r.rule().name()).containsExactly("login");
        assertThat(d.rules()).extracting(r -> r.rule().name()).containsExactly("api", "login");
        assertThat(local.received).as("open rules must take nothing from the backstop").isEmpty();
    }

    @Test
    void openBreakerSkipsRedisEntirely() {
        redis.failing = true;
        for (int i = 0; i < BREAKER.failureThreshold(); i++) {
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        }
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.OPEN);
        int callsWhenOpened = redis.calls;

        for (int i = 0; i < 100; i++) {
            Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=" + i))));
            assertThat(d.rules().get(0).source()).isEqualTo(Source.BACKSTOP);
        }

        assertThat(redis.calls).isEqualTo(callsWhenOpened);
    }

    @Test
    void closedRuleRetryAfterIsTheTimeUntilTheNextProbe() {
        redis.failing = true;
        tripBreaker();
        now.advance(200);
        // second probe failing doubles the interval to 2 s
        now.advance(800);
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.OPEN);
        now.advance(500);

        Decision d = limiter.decide(List.of(new Acquisition(LOGIN, ClientKey.parse("ip=1"))));

        assertThat(d.retryAfterMs()).isEqualTo(1500);
    }

    @Test
    void decisionsReturnToRedisWhenTheProbeSucceeds() {
        redis.failing = true;
        tripBreaker();
        redis.failing = false;
        int callsWhenOpened = redis.calls;

        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        assertThat(redis.calls).as("no call before the open interval ends").isEqualTo(callsWhenOpened);

        now.advance(1000);
        Decision probe = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(probe.rules().get(0).source()).isEqualTo(Source.REDIS);
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.CLOSED);
        assertThat(limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))).rules().get(0).source()).isEqualTo(Source.REDIS);
    }

    @Test
    void outageIsLoggedOnceWhenLostAndOnceWhenBackWithTheCountOfFallbacks() {
        redis.failing = true;
        for (int i = 0; i < 50; i++) {
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=" + i))));
        }
        for (int i = 0; i < 7; i++) {
            limiter.decide(List.of(new Acquisition(LOGIN, ClientKey.parse("ip=" + i))));
        }
        redis.failing = false;
        now.advance(1000);
        for (int i = 0; i < 50; i++) {
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=" + i))));
        }

        assertThat(log.at(Level.WARN)).singleElement().satisfies(l -> {
            assertThat(l.message()).contains("redis://127.0.0.1:6390/0", "unavailable", "Connection refused");
        });
        assertThat(log.at(Level.INFO)).singleElement().satisfies(l -> {
            assertThat(l.message()).contains("answers again", "50 decisions used the local backstop", "7 were refused");
        });
    }

    @Test
    void flappingRedisWarnsAtMostOncePerQuietPeriodAndSaysHowManyOutagesWereNotAnnounced() {
        for (int flap = 0; flap < 5; flap++) {
            redis.failing = true;
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
            redis.failing = false;
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
            now.advance(1000);
        }
        assertThat(log.at(Level.WARN)).hasSize(1);
        assertThat(log.at(Level.INFO)).hasSize(1);

        now.advance(60_000);
        redis.failing = true;
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(log.at(Level.WARN)).hasSize(2);
        assertThat(log.at(Level.WARN).get(1).message()).contains("4 shorter outages since the last warning");
    }

    @Test
    void anOutageThatStartsInTheQuietPeriodIsAnnouncedWhenTheQuietPeriodEnds() {
        redis.failing = true;
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        redis.failing = false;
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        now.advance(5_000);
        redis.failing = true;
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        assertThat(log.at(Level.WARN)).hasSize(1);

        now.advance(60_000);
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(log.at(Level.WARN)).hasSize(2);
        assertThat(log.at(Level.WARN).get(1).message()).contains("since 60000 ms");
    }

    @Test
    void logLinesNeverShowCredentialsFromACauseMessage() {
        redis.failing = true;
        redis.failure = new LimiterUnavailableException("Redis call failed",
                new IllegalStateException("could not reach rediss://sluice:s3cret-pass@10.0.0.1:6380"), false);

        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(log.lines()).isNotEmpty().allSatisfy(l -> assertThat(l.message()).doesNotContain("s3cret"));
        assertThat(log.at(Level.WARN).get(0).message()).contains("rediss://****@10.0.0.1:6380");
    }

    @Test
    void unexpectedEngineErrorsAlsoFallBackInsteadOfFailingTheRequest() {
        redis.failing = true;
        redis.failure = new ClassCastException("unexpected reply");

        Decision d = limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));

        assertThat(d.allowed()).isTrue();
        assertThat(d.rules().get(0).source()).isEqualTo(Source.BACKSTOP);
    }

    @Test
    void aCallersMistakeIsNotAnOutage() {
        redis.failing = true;
        redis.failure = new IllegalArgumentException("rule api is asked twice for client ip=1");

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(log.lines()).isEmpty();
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    /**
     * A renewal takes a permit of the breaker like a decision: Redis's slots that could not be renewed are
     * reported as not reached (to be tried again soon), the backstop's are renewed in the backstop, and
     * failed renewals open the breaker, which then keeps renewals from a Redis that is away.
     */
    @Test
    void aRenewalThatCannotReachRedisSaysWhichSlotsItMissedAndCountsAsAFailure() {
        Rule exports = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(2).build();
        ClientKey acme = ClientKey.parse("h=acme");
        List<Acquisition> slots = List.of(new Acquisition(exports, acme), new Acquisition(exports, acme));
        List<RuleDecision> taken = List.of(held(exports, Source.REDIS),
                held(exports, Source.BACKSTOP));
        assertThat(limiter.renew(slots, taken)).as("both held").containsExactly(true, true);
        assertThat(redis.renewed).as("Redis renews only its own slot").isEqualTo(1);
        assertThat(local.renewedRules).as("the backstop its own, under the fallback rule")
                .containsExactly(exports.asFallback());

        redis.failing = true;
        for (int i = 0; i < BREAKER.failureThreshold(); i++) {
            assertThatThrownBy(() -> limiter.renew(slots, taken)).isInstanceOfSatisfying(RenewalIncomplete.class, e -> {
                assertThat(e.reached()).containsExactly(false, true);
                assertThat(e.held()[1]).as("the backstop's slot renewed all the same").isTrue();
            });
        }
        assertThat(limiter.breakerState()).as("renewals that fail open the breaker").isEqualTo(CircuitBreaker.State.OPEN);
        int asked = redis.calls;
        assertThatThrownBy(() -> limiter.renew(slots, taken)).isInstanceOf(RenewalIncomplete.class);
        assertThat(redis.calls).as("not asked while its breaker is open").isEqualTo(asked);

        now.advance(BREAKER.openBase().toMillis());
        redis.failing = false;
        assertThat(limiter.renew(slots, taken)).as("the renewal is the probe that closes it").containsExactly(true, true);
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.CLOSED);
    }

    /** While the breaker is open a settlement for Redis is not sent (it would wait for a timeout); the backstop's is. */
    @Test
    void settlementsSkipRedisOnlyWhileTheBreakerIsOpen() {
        Rule exports = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(2).build();
        Acquisition slot = new Acquisition(exports, ClientKey.parse("h=acme"));
        RuleDecision byRedis = held(exports, Source.REDIS);
        limiter.settle(List.of(Settlement.giveBack(slot, byRedis)));
        assertThat(redis.settled).isEqualTo(1);
        redis.failing = true;
        tripBreaker();
        limiter.settle(List.of(Settlement.giveBack(slot, byRedis),
                Settlement.giveBack(slot, held(exports, Source.BACKSTOP))));
        assertThat(redis.settled).as("not sent to a Redis known to be away").isEqualTo(1);
        assertThat(local.settled).as("the backstop's released").isEqualTo(1);
        now.advance(BREAKER.openBase().toMillis());
        redis.failing = false;
        limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))); // the probe, which closes it
        limiter.settle(List.of(Settlement.giveBack(slot, byRedis)));
        assertThat(redis.settled).as("Redis is back: sent again").isEqualTo(2);
    }

    @Test
    void noRuleAppliedMeansNoCallAtAll() {
        assertThat(limiter.decide(List.of())).isSameAs(Decision.none());
        assertThat(redis.calls).isZero();
    }

    /** A slot of {@code rule} taken by {@code source}. */
    private static RuleDecision held(Rule rule, Source source) {
        return new RuleDecision(rule, true, 1, 0, 1000, 0, 0, new RuleDecision.Take(1_030_000, 0, 0, 7), source);
    }

    private void tripBreaker() {
        for (int i = 0; i < BREAKER.failureThreshold(); i++) {
            limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1"))));
        }
        assertThat(limiter.breakerState()).isEqualTo(CircuitBreaker.State.OPEN);
    }

    /** Answers "allowed" from Redis, or fails like a dead Redis. */
    static final class FakeRedis implements RateLimiter {
        volatile boolean failing;
        volatile RuntimeException failure = new LimiterUnavailableException("Redis call failed",
                new java.net.ConnectException("Connection refused"), false);
        int calls;

        @Override
        public synchronized Decision decide(List<Acquisition> acquisitions) {
            calls++;
            if (failing) throw failure;
            List<RuleDecision> out = new ArrayList<>();
            for (Acquisition a : acquisitions) {
                out.add(new RuleDecision(a.rule(), true, a.rule().limit() - 1, 0, 1000, 0, Source.REDIS));
            }
            return Decision.of(out);
        }

        int renewed;
        int settled;

        @Override
        public synchronized boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
            calls++;
            if (failing) throw failure;
            renewed += acquisitions.size();
            boolean[] held = new boolean[acquisitions.size()];
            java.util.Arrays.fill(held, true);
            return held;
        }

        @Override
        public synchronized void settle(List<Settlement> settlements) {
            calls++;
            if (failing) throw failure;
            settled += settlements.size();
        }
    }

    /** Records what the backstop was asked; decides without setting the source, which the limiter must fix. */
    static final class FakeLocal implements RateLimiter {
        final List<Acquisition> received = new ArrayList<>();
        volatile boolean allow = true;

        @Override
        public synchronized Decision decide(List<Acquisition> acquisitions) {
            received.addAll(acquisitions);
            List<RuleDecision> out = new ArrayList<>();
            for (Acquisition a : acquisitions) {
                out.add(new RuleDecision(a.rule(), allow, 0, allow ? 0 : 500, 1000, 0, Source.REDIS));
            }
            return Decision.of(out);
        }

        final List<Rule> renewedRules = new ArrayList<>();
        int settled;

        @Override
        public synchronized boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
            boolean[] held = new boolean[acquisitions.size()];
            for (int i = 0; i < held.length; i++) {
                renewedRules.add(acquisitions.get(i).rule());
                held[i] = true;
            }
            return held;
        }

        @Override
        public synchronized void settle(List<Settlement> settlements) {
            settled += settlements.size();
        }
    }
}
