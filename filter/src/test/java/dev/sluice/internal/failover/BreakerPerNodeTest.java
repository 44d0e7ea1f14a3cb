package dev.sluice.internal.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RecordingLogger;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A breaker per Redis node: on a Cluster whose master "a" is lost, only the clients whose keys live on
 * it fall to the failure policy; the clients of the other masters stay decided by Redis, and a request
 * whose rules live on several masters is decided by Redis where it can.
 */
class BreakerPerNodeTest {

    private static final Rule API = FailoverLimiterTest.API;
    private static final Rule LOGIN = FailoverLimiterTest.LOGIN;
    private static final Rule ORDERS = new Rule("orders", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1), 100, 1,
            FailurePolicy.OPEN, 10, Duration.ZERO);
    private static final SluiceConfig.BreakerSettings BREAKER = FailoverLimiterTest.BREAKER;

    private final ManualClock now = new ManualClock(1_000_000);
    private final FakeCluster redis = new FakeCluster();
    private final FailoverLimiterTest.FakeLocal local = new FailoverLimiterTest.FakeLocal();
    private final SluiceMetrics metrics = new SluiceMetrics();
    /** The master of a key: the first letter of the client key's value ("a1" lives on "a"). */
    private final Set<Object> masters = ConcurrentHashMap.newKeySet();
    private final FailoverLimiter limiter = new FailoverLimiter(redis, local, BREAKER, "cluster", metrics,
            Nodes.of(FakeCluster::nodeOf, () -> Set.copyOf(masters), true), now, new RecordingLogger("test"), 60_000);

    {
        masters.addAll(List.of("a", "b", "c"));
    }

    private static Acquisition on(Rule rule, String client) {
        return new Acquisition(rule, ClientKey.of(client));
    }

    /**
     * The defect of 0.2: one breaker for the cluster, whose failure count every success on a healthy
     * master reset, so it never opened, and every request for the lost master's slots paid a timeout.
     */
    @Test
    void aLostMastersBreakerOpensWhileTheOtherMastersClientsStayOnRedis() {
        redis.down.add("a");

        for (int i = 0; i < 100; i++) {
            for (String client : List.of("a" + i, "b" + i, "c" + i)) {
                Decision d = limiter.decide(List.of(on(API, client)));
                assertThat(d.allowed()).isTrue();
                assertThat(d.rules().get(0).source()).as(client).isEqualTo(client.startsWith("a") ? Source.BACKSTOP : Source.REDIS);
            }
        }

        assertThat(redis.callsTo("a")).as("calls to the lost master: its breaker's threshold, then none").isEqualTo(3);
        assertThat(redis.callsTo("b")).isEqualTo(100);
        assertThat(limiter.breakerStates()).containsEntry("a", CircuitBreaker.State.OPEN)
                .containsEntry("b", CircuitBreaker.State.CLOSED).containsEntry("c", CircuitBreaker.State.CLOSED);
        assertThat(metrics.view().getBreakerStates()).containsEntry("a", "OPEN").containsEntry("b", "CLOSED");
        assertThat(metrics.view().getBreakerState()).isEqualTo("OPEN");
    }

    @Test
    void theMasterAPromotionMakesGetsABreakerOfItsOwnAndTheLostOnesGoes() {
        limiter.decide(List.of(on(API, "b1")));
        limiter.decide(List.of(on(API, "c1")));
        redis.down.add("a");
        for (int i = 0; i < 3; i++) limiter.decide(List.of(on(API, "a" + i)));
        assertThat(limiter.breakerStates()).containsEntry("a", CircuitBreaker.State.OPEN);

        masters.remove("a"); // its replica "d" was promoted and now serves its slots
        masters.add("d");
        FakeCluster.promoted.put("a", "d");
        try {
            Decision d = limiter.decide(List.of(on(API, "a7")));

            assertThat(d.rules().get(0).source()).as("decided by the new master at once").isEqualTo(Source.REDIS);
            assertThat(limiter.breakerStates()).containsOnlyKeys("b", "c", "d").doesNotContainKey("a");
        } finally {
            FakeCluster.promoted.clear();
        }
    }

    @Test
    void aRequestWithRulesOnALostMasterHasThemDecidedByTheBackstopAndTheOthersByRedis() {
        redis.down.add("a");
        for (int i = 0; i < 3; i++) limiter.decide(List.of(on(API, "a" + i))); // its breaker opens
        int callsToA = redis.callsTo("a");

        Decision d = limiter.decide(List.of(on(API, "a9"), on(ORDERS, "b9")));

        assertThat(d.allowed()).isTrue();
        assertThat(d.rules()).extracting(RuleDecision::source).containsExactly(Source.BACKSTOP, Source.REDIS);
        assertThat(redis.callsTo("a")).isEqualTo(callsToA);
    }

    @Test
    void whenTheBackstopDeniesWhatRedisTookIsGivenBack() {
        redis.down.add("a");
        for (int i = 0; i < 3; i++) limiter.decide(List.of(on(API, "a" + i)));
        local.allow = false;

        Decision d = limiter.decide(List.of(on(ORDERS, "b9"), on(API, "a9")));

        assertThat(d.allowed()).isFalse();
        assertThat(redis.givenBack).as("a denied request takes nothing").containsExactly(on(ORDERS, "b9"));
    }

    @Test
    void aClosedRuleOnALostMasterRefusesTheRequestWithoutCallingTheOthers() {
        redis.down.add("a");
        for (int i = 0; i < 3; i++) limiter.decide(List.of(on(API, "a" + i)));
        int calls = redis.calls;

        Decision d = limiter.decide(List.of(on(ORDERS, "b9"), on(LOGIN, "a9")));

        assertThat(d.unavailable()).isTrue();
        assertThat(redis.calls).as("nothing taken from the healthy master").isEqualTo(calls);
    }

    /**
     * Found in a review of 0.3: a request refused for a closed rule on one master still away took the
     * probe of another master come back, and never sent it; that master's clients stayed on the
     * backstop for another interval.
     */
    @Test
    void aProbeNotSentForARefusedRequestPassesToTheNextCaller() {
        redis.down.addAll(List.of("a", "b"));
        for (int i = 0; i < 3; i++) {
            limiter.decide(List.of(on(API, "a" + i)));
            limiter.decide(List.of(on(API, "b" + i)));
        }
        assertThat(limiter.breakerStates()).containsEntry("a", CircuitBreaker.State.OPEN).containsEntry("b", CircuitBreaker.State.OPEN);
        redis.down.remove("a"); // back; "b" is still away
        now.advance(BREAKER.openBase().toMillis());
        limiter.decide(List.of(on(API, "b8"))); // "b"'s probe fails: open again

        Decision refused = limiter.decide(List.of(on(API, "a8"), on(LOGIN, "b9")));
        assertThat(refused.unavailable()).as("a closed rule on the master away").isTrue();

        Decision next = limiter.decide(List.of(on(API, "a9")));
        assertThat(next.rules().get(0).source()).as("decided by the master that came back").isEqualTo(Source.REDIS);
        assertThat(limiter.breakerStates()).containsEntry("a", CircuitBreaker.State.CLOSED);
    }

    /**
     * A master lost under a request whose rules are decided one call each: the failed call's master
     * hears of the failure, the other master of the success, and the request is decided again with the
     * lost master's rule on the backstop.
     */
    @Test
    void aCallThatFailsPartWayIsAFailureOfItsOwnMasterOnly() {
        redis.down.add("b");

        for (int i = 0; i < 3; i++) {
            Decision d = limiter.decide(List.of(on(API, "a" + i), on(ORDERS, "b" + i)));
            assertThat(d.rules()).extracting(RuleDecision::source).containsExactly(Source.REDIS, Source.BACKSTOP);
        }

        assertThat(limiter.breakerStates()).containsEntry("a", CircuitBreaker.State.CLOSED)
                .containsEntry("b", CircuitBreaker.State.OPEN);
        assertThat(redis.givenBack).as("what the first rule took before the second failed").hasSize(3);
    }

    /** Rule by rule, as the Redis engine on a Cluster: a failing master's call fails, after the earlier ones are given back. */
    static final class FakeCluster implements RateLimiter {
        static final java.util.Map<String, String> promoted = new ConcurrentHashMap<>();
        final Set<String> down = ConcurrentHashMap.newKeySet();
        final java.util.Map<String, Integer> callsByNode = new ConcurrentHashMap<>();
        final List<Acquisition> givenBack = new ArrayList<>();
        int calls;

        static Object nodeOf(Acquisition a) {
            String value = a.clientKey().value();
            String master = value.substring(value.indexOf('=') + 1, value.indexOf('=') + 2);
            return promoted.getOrDefault(master, master);
        }

        int callsTo(String node) {
            return callsByNode.getOrDefault(node, 0);
        }

        @Override
        public synchronized Decision decide(List<Acquisition> acquisitions) {
            List<RuleDecision> out = new ArrayList<>();
            for (int i = 0; i < acquisitions.size(); i++) {
                Acquisition a = acquisitions.get(i);
                String node = (String) nodeOf(a);
                calls++;
                callsByNode.merge(node, 1, Integer::sum);
                if (down.contains(node)) {
                    LimiterUnavailableException e = new LimiterUnavailableException("timed out", null, true);
                    if (acquisitions.size() == 1) throw e;
                    for (int j = 0; j < i; j++) givenBack.add(acquisitions.get(j));
                    throw new PartialFailure(i, e);
                }
                out.add(new RuleDecision(a.rule(), true, a.rule().limit() - 1, 0, 1000, 0, 0,
                        new RuleDecision.Take(1, 0, 0), Source.REDIS));
            }
            return Decision.of(out);
        }

        @Override
        public synchronized void settle(List<Settlement> settlements) {
            for (Settlement s : settlements) givenBack.add(s.acquisition());
        }
    }
}
