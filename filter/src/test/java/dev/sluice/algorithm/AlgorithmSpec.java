package dev.sluice.algorithm;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The semantics every engine must give, driven by a fake clock. Run once against the local
 * engine and once against the Redis engine ({@code clock=local}, the same fake clock).
 */
public abstract class AlgorithmSpec {

    protected static final long T0 = ManualClock.MINUTE_BOUNDARY;

    protected ManualClock clock;
    protected RateLimiter engine;

    /** A fresh engine (and, for Redis, a fresh key prefix) reading {@code clock}. */
    protected abstract RateLimiter newEngine(ManualClock clock);

    @BeforeEach
    void startEngine() {
        clock = new ManualClock(T0);
        engine = newEngine(clock);
    }

    @AfterEach
    void closeEngine() {
        engine.close();
    }

    protected static Rule rule(String name, Algorithm algorithm, long limit, Duration window) {
        return Rule.of(name, algorithm, limit, window);
    }

    protected static Rule bucket(String name, Algorithm algorithm, long limit, Duration window, long burst) {
        return new Rule(name, algorithm, limit, window, burst, 1, FailurePolicy.OPEN, limit, Duration.ZERO);
    }

    protected RuleDecision ask(Rule rule, String client) {
        return ask(rule, client, 1);
    }

    protected RuleDecision ask(Rule rule, String client, long cost) {
        return engine.decide(List.of(new Acquisition(rule, client, cost))).rules().get(0);
    }

    protected int admitted(Rule rule, String client, int attempts) {
        int n = 0;
        for (int i = 0; i < attempts; i++) {
            if (ask(rule, client).allowed()) n++;
        }
        return n;
    }

    // ---- fixed-window ----

    @Test
    void fixedWindowAdmitsTheLimitThenDeniesUntilTheWindowEnds() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
        clock.set(T0 + 10_000);
        for (int i = 4; i >= 0; i--) {
            RuleDecision d = ask(r, "a");
            assertThat(d.allowed()).isTrue();
            assertThat(d.remaining()).isEqualTo(i);
            assertThat(d.resetMs()).isEqualTo(50_000);
        }
        RuleDecision denied = ask(r, "a");
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.remaining()).isZero();
        assertThat(denied.retryAfterMs()).isEqualTo(50_000);
        assertThat(denied.resetMs()).isEqualTo(50_000);

        clock.set(T0 + 59_999);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.set(T0 + 60_000);
        assertThat(ask(r, "a").remaining()).isEqualTo(4);
    }

    @Test
    void fixedWindowsAreAlignedToTheEpochNotToTheFirstRequest() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 2, Duration.ofSeconds(10));
        clock.set(T0 + 9_990);
        assertThat(admitted(r, "a", 3)).isEqualTo(2);
        clock.set(T0 + 10_000); // 10 ms later: a new window, not 10 s after the first request
        assertThat(admitted(r, "a", 3)).isEqualTo(2);
    }

    @Test
    void fixedWindowCountsTheCost() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        assertThat(ask(r, "a", 4).remaining()).isEqualTo(6);
        assertThat(ask(r, "a", 6).remaining()).isZero();
        assertThat(ask(r, "a", 1).allowed()).isFalse();
    }

    @Test
    void deniedRequestTakesNothingSoASmallerOneStillFits() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        ask(r, "a", 8);
        RuleDecision big = ask(r, "a", 3);
        assertThat(big.allowed()).isFalse();
        assertThat(big.remaining()).isEqualTo(2);
        assertThat(ask(r, "a", 2).allowed()).isTrue();
    }

    @Test
    void clientsAreCountedSeparately() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        assertThat(ask(r, "a").allowed()).isTrue();
        assertThat(ask(r, "b").allowed()).isTrue();
        assertThat(ask(r, "a").allowed()).isFalse();
    }

    @Test
    void fixedWindowCallerWithALaggingClockCountsAgainstTheWindowAlreadyStarted() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 3, Duration.ofSeconds(10));
        clock.set(T0 + 10_500);
        assertThat(admitted(r, "a", 3)).isEqualTo(3);
        clock.set(T0 + 9_900); // an instance 600 ms behind, still in the previous window by its clock
        RuleDecision late = ask(r, "a");
        assertThat(late.allowed()).isFalse();
        assertThat(late.retryAfterMs()).as("until the later window ends, on the caller's clock").isEqualTo(10_100);
    }

    @Test
    void costAboveTheLimitIsNeverAdmitted() {
        Rule r = rule("fw", Algorithm.FIXED_WINDOW, 3, Duration.ofSeconds(10));
        RuleDecision d = ask(r, "a", 4);
        assertThat(d.allowed()).isFalse();
        assertThat(d.remaining()).isEqualTo(3);
        assertThat(d.retryAfterMs()).isEqualTo(10_000);
        assertThat(ask(r, "a", 3).allowed()).isTrue();
    }

    // ---- token-bucket ----

    @Test
    void tokenBucketAdmitsItsCapacityAtOnceThenRefillsAtTheLimitPerWindow() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10)); // one token a second
        assertThat(admitted(r, "a", 11)).isEqualTo(10);
        clock.advance(999);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.advance(1);
        RuleDecision d = ask(r, "a");
        assertThat(d.allowed()).isTrue();
        assertThat(d.remaining()).isZero();
        clock.advance(3_500);
        assertThat(admitted(r, "a", 5)).isEqualTo(3);
    }

    @Test
    void tokenBucketRetryAfterIsTheTimeUntilTheCostHasRefilled() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofSeconds(1)); // a token every 333.3 ms
        assertThat(admitted(r, "a", 3)).isEqualTo(3);
        RuleDecision one = ask(r, "a");
        assertThat(one.allowed()).isFalse();
        assertThat(one.retryAfterMs()).isEqualTo(334);
        assertThat(one.resetMs()).isEqualTo(1_000);
        RuleDecision two = ask(r, "a", 2);
        assertThat(two.retryAfterMs()).isEqualTo(667);

        clock.advance(333);
        assertThat(ask(r, "a").allowed()).as("333 ms refill 0.999 tokens").isFalse();
        clock.advance(1);
        assertThat(ask(r, "a").allowed()).isTrue();
    }

    @Test
    void tokenBucketResetIsTheTimeUntilTheBucketIsFull() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10));
        RuleDecision first = ask(r, "a", 4);
        assertThat(first.remaining()).isEqualTo(6);
        assertThat(first.resetMs()).isEqualTo(4_000);
        clock.advance(1_500);
        RuleDecision second = ask(r, "a");
        assertThat(second.remaining()).isEqualTo(6); // 6 + 1.5 - 1 = 6.5
        assertThat(second.resetMs()).isEqualTo(3_500);
    }

    @Test
    void tokenBucketBurstLargerThanTheLimit() {
        Rule r = bucket("tb", Algorithm.TOKEN_BUCKET, 1, Duration.ofSeconds(1), 5);
        assertThat(admitted(r, "a", 6)).isEqualTo(5);
        clock.advance(2_000);
        assertThat(admitted(r, "a", 3)).isEqualTo(2);
        RuleDecision d = ask(r, "a");
        assertThat(d.retryAfterMs()).isEqualTo(1_000);
        assertThat(d.resetMs()).isEqualTo(5_000);
    }

    @Test
    void tokenBucketCallerWithALaggingClockCannotMintTokens() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10));
        clock.set(T0 + 20_000);
        assertThat(admitted(r, "a", 10)).isEqualTo(10);
        clock.set(T0 + 15_000); // 5 s behind: it must not see 5 s of refill "since" its own time
        RuleDecision late = ask(r, "a");
        assertThat(late.allowed()).isFalse();
        assertThat(late.retryAfterMs()).as("1 s of refill after the stored time, on the caller's clock").isEqualTo(6_000);
        clock.set(T0 + 21_000);
        assertThat(admitted(r, "a", 2)).isEqualTo(1);
    }

    @Test
    void tokenBucketCostAboveTheBurstIsNeverAdmitted() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofSeconds(10));
        RuleDecision d = ask(r, "a", 4);
        assertThat(d.allowed()).isFalse();
        assertThat(d.retryAfterMs()).isEqualTo(10_000);
        assertThat(ask(r, "a", 3).allowed()).isTrue();
    }

    // ---- several rules ----

    @Test
    void deniedRequestTakesNothingFromOtherRules() {
        Rule perMinute = rule("minute", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
        Rule perSecond = rule("second", Algorithm.FIXED_WINDOW, 2, Duration.ofSeconds(1));
        List<Acquisition> request = List.of(new Acquisition(perMinute, "a"), new Acquisition(perSecond, "a"));
        assertThat(engine.decide(request).allowed()).isTrue();
        assertThat(engine.decide(request).allowed()).isTrue();
        for (int i = 0; i < 5; i++) {
            Decision denied = engine.decide(request);
            assertThat(denied.allowed()).isFalse();
            assertThat(denied.violated()).extracting(d -> d.rule().name()).containsExactly("second");
            RuleDecision untouched = denied.rules().get(0);
            assertThat(untouched.allowed()).as("the minute rule would admit").isTrue();
            assertThat(untouched.remaining()).as("and took nothing").isEqualTo(98);
            assertThat(untouched.retryAfterMs()).isZero();
        }
        assertThat(ask(perMinute, "a").remaining()).isEqualTo(97);
    }

    @Test
    void admittedRequestTakesFromEveryRuleAndReportsEach() {
        Rule a = rule("a", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        Rule b = rule("b", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1));
        Decision d = engine.decide(List.of(new Acquisition(a, "x", 2), new Acquisition(b, "y", 3)));
        assertThat(d.allowed()).isTrue();
        assertThat(d.rules()).extracting(RuleDecision::remaining).containsExactly(8L, 2L);
        assertThat(d.rules()).extracting(x -> x.rule().name()).containsExactly("a", "b");
        assertThat(ask(a, "x").remaining()).isEqualTo(7);
        assertThat(ask(b, "y").remaining()).isEqualTo(1);
    }

    @Test
    void noAcquisitionsIsNoDecision() {
        assertThat(engine.decide(List.of())).isSameAs(Decision.none());
    }
}
