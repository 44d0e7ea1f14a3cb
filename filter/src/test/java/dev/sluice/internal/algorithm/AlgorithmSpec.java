package dev.sluice.internal.algorithm;

import dev.sluice.testing.Rates;
import dev.sluice.key.ClientKey;
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

import java.math.BigInteger;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.Period;
import java.time.ZoneId;
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
        return engine.decide(List.of(new Acquisition(rule, ClientKey.parse(client), cost))).rules().get(0);
    }

    protected int admitted(Rule rule, String client, int attempts) {
        int n = 0;
        for (int i = 0; i < attempts; i++) {
            if (ask(rule, client).allowed()) n++;
        }
        return n;
    }

    // ---- fixed-window ----

    /** A calendar month in Berlin: the last millisecond of January counts in January, the next in February (28 days). */
    @Test
    void aCalendarFixedWindowEndsWithItsZonesMonth() {
        Rule monthly = Rule.builder("monthly").algorithm(Algorithm.FIXED_WINDOW).limit(1)
                .calendar(ZoneId.of("Europe/Berlin")).window(Period.ofMonths(1)).build();
        long lastOfJanuary = OffsetDateTime.parse("2027-01-31T23:59:59.999+01:00").toInstant().toEpochMilli();
        clock.set(lastOfJanuary);
        RuleDecision january = ask(monthly, "a");
        assertThat(january.allowed()).isTrue();
        assertThat(january.resetMs()).isEqualTo(1);
        assertThat(january.windowMs()).isEqualTo(31 * 86_400_000L);
        assertThat(ask(monthly, "a").retryAfterMs()).isEqualTo(1);
        clock.set(lastOfJanuary + 1);
        RuleDecision february = ask(monthly, "a");
        assertThat(february.allowed()).isTrue();
        assertThat(february.windowMs()).isEqualTo(2_419_200_000L);
        assertThat(february.resetMs()).isEqualTo(2_419_200_000L);
    }

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

    // ---- gcra ----

    @Test
    void gcraAdmitsTheBurstThenOneRequestPerEmissionInterval() {
        Rule r = rule("gcra", Algorithm.GCRA, 10, Duration.ofSeconds(10)); // one per second
        assertThat(admitted(r, "a", 11)).isEqualTo(10);
        RuleDecision denied = ask(r, "a");
        assertThat(denied.retryAfterMs()).isEqualTo(1_000);
        assertThat(denied.resetMs()).isEqualTo(10_000);
        clock.advance(999);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.advance(1);
        assertThat(ask(r, "a").allowed()).isTrue();
    }

    @Test
    void gcraAnswersExactlyAsTheTokenBucketWithTheSameBurst() {
        Rule gcra = bucket("g", Algorithm.GCRA, 7, Duration.ofSeconds(3), 4);
        Rule bucket = bucket("t", Algorithm.TOKEN_BUCKET, 7, Duration.ofSeconds(3), 4);
        long[] steps = {0, 0, 1, 0, 0, 130, 1, 429, 428, 0, 0, 2_000, 1, 1, 1, 5_000, 0, 0, 0, 0, 0};
        long[] costs = {1, 2, 1, 1, 3, 1, 1, 1, 2, 1, 1, 4, 1, 1, 1, 1, 2, 2, 1, 1, 1};
        for (int i = 0; i < steps.length; i++) {
            clock.advance(steps[i]);
            RuleDecision g = ask(gcra, "a", costs[i]);
            RuleDecision t = ask(bucket, "a", costs[i]);
            assertThat(List.of(g.allowed(), g.remaining(), g.retryAfterMs(), g.resetMs()))
                    .as("step %d", i).isEqualTo(List.of(t.allowed(), t.remaining(), t.retryAfterMs(), t.resetMs()));
        }
    }

    @Test
    void gcraCallerWithALaggingClockIsStricterNeverLooser() {
        Rule r = rule("gcra", Algorithm.GCRA, 10, Duration.ofSeconds(10));
        clock.set(T0 + 20_000);
        assertThat(admitted(r, "a", 10)).isEqualTo(10);
        clock.set(T0 + 15_000);
        RuleDecision late = ask(r, "a");
        assertThat(late.allowed()).isFalse();
        assertThat(late.retryAfterMs()).isEqualTo(6_000);
    }

    // ---- leaky-bucket ----

    private static Rule leaky(long limit, Duration window, long burst, Duration maxDelay) {
        return new Rule("leaky", Algorithm.LEAKY_BUCKET, limit, window, burst, 1, FailurePolicy.OPEN, limit, maxDelay);
    }

    @Test
    void leakyBucketWithoutMaxDelayAdmitsOnlyAtAFreeSlot() {
        Rule r = leaky(10, Duration.ofSeconds(1), 10, Duration.ZERO); // a slot every 100 ms
        RuleDecision first = ask(r, "a");
        assertThat(first.allowed()).isTrue();
        assertThat(first.delayMs()).isZero();
        assertThat(first.remaining()).as("the next slot is not free yet").isZero();
        RuleDecision second = ask(r, "a");
        assertThat(second.allowed()).isFalse();
        assertThat(second.retryAfterMs()).isEqualTo(100);
        clock.advance(99);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.advance(1);
        assertThat(ask(r, "a").allowed()).isTrue();
    }

    @Test
    void leakyBucketDelaysARequestUntilItsSlotUpToMaxDelay() {
        Rule r = leaky(10, Duration.ofSeconds(1), 10, Duration.ofMillis(250));
        assertThat(ask(r, "a").delayMs()).isZero();
        RuleDecision second = ask(r, "a");
        assertThat(second.allowed()).isTrue();
        assertThat(second.delayMs()).isEqualTo(100);
        RuleDecision third = ask(r, "a");
        assertThat(third.delayMs()).isEqualTo(200);
        assertThat(third.remaining()).as("a fourth would wait 300 ms").isZero();
        assertThat(third.resetMs()).isEqualTo(300);
        RuleDecision fourth = ask(r, "a");
        assertThat(fourth.allowed()).isFalse();
        assertThat(fourth.retryAfterMs()).isEqualTo(50);
        clock.advance(50);
        RuleDecision later = ask(r, "a");
        assertThat(later.allowed()).isTrue();
        assertThat(later.delayMs()).isEqualTo(250);
    }

    @Test
    void leakyBucketBurstCapsHowManyMayWait() {
        Rule r = leaky(10, Duration.ofSeconds(1), 3, Duration.ofSeconds(10));
        assertThat(ask(r, "a").delayMs()).isZero();
        assertThat(ask(r, "a").delayMs()).isEqualTo(100);
        RuleDecision third = ask(r, "a");
        assertThat(third.delayMs()).isEqualTo(200);
        assertThat(third.remaining()).isZero();
        RuleDecision fourth = ask(r, "a");
        assertThat(fourth.allowed()).isFalse();
        assertThat(fourth.retryAfterMs()).isEqualTo(100);
        clock.advance(100);
        assertThat(ask(r, "a").delayMs()).isEqualTo(200);
    }

    @Test
    void leakyBucketWithFractionalSlotsNeverReleasesEarly() {
        Rule r = leaky(3, Duration.ofSeconds(1), 3, Duration.ofSeconds(1)); // a slot every 333.3 ms
        assertThat(ask(r, "a").delayMs()).isZero();
        assertThat(ask(r, "a").delayMs()).isEqualTo(334);
        assertThat(ask(r, "a").delayMs()).isEqualTo(667);
        clock.advance(334);
        RuleDecision d = ask(r, "a");
        assertThat(d.allowed()).isTrue();
        assertThat(d.delayMs()).isEqualTo(666); // slot at 1000 ms, now 334
    }

    // ---- sliding-window-counter ----

    @Test
    void slidingWindowCounterWeightsThePreviousWindowByItsOverlap() {
        Rule r = rule("swc", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofSeconds(10));
        clock.set(T0 + 5_000);
        assertThat(admitted(r, "a", 11)).isEqualTo(10);
        clock.set(T0 + 12_500); // a quarter into the next window: 10 x 0.75 = 7.5 still count
        RuleDecision first = ask(r, "a");
        assertThat(first.allowed()).isTrue();
        assertThat(first.remaining()).isEqualTo(1);
        assertThat(ask(r, "a").allowed()).isTrue();
        RuleDecision denied = ask(r, "a");
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.retryAfterMs()).as("at 3 s in, 10 x 0.7 + 2 + 1 = 10").isEqualTo(500);
        assertThat(denied.resetMs()).as("the end of the next window").isEqualTo(17_500);
        clock.advance(499);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.advance(1);
        assertThat(ask(r, "a").allowed()).isTrue();
    }

    @Test
    void slidingWindowCounterRetryAfterCanFallInTheNextWindow() {
        Rule r = rule("swc", Algorithm.SLIDING_WINDOW_COUNTER, 4, Duration.ofSeconds(10));
        clock.set(T0 + 8_000);
        assertThat(admitted(r, "a", 4)).isEqualTo(4);
        RuleDecision denied = ask(r, "a");
        // next window: 4 x (10 - e)/10 + 1 <= 4 from e = 2.5 s, i.e. 4.5 s from now
        assertThat(denied.retryAfterMs()).isEqualTo(4_500);
        clock.advance(4_499);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.advance(1);
        assertThat(ask(r, "a").allowed()).isTrue();
    }

    // ---- sliding-window-log ----

    @Test
    void slidingWindowLogIsExact() {
        Rule r = rule("swl", Algorithm.SLIDING_WINDOW_LOG, 3, Duration.ofSeconds(10));
        for (int i = 0; i < 3; i++) {
            assertThat(ask(r, "a").allowed()).isTrue();
            clock.advance(1_000);
        }
        clock.set(T0 + 5_000);
        RuleDecision denied = ask(r, "a");
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.retryAfterMs()).as("until the first entry leaves the window").isEqualTo(5_000);
        assertThat(denied.resetMs()).as("until the newest has").isEqualTo(7_000);
        clock.set(T0 + 9_999);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.set(T0 + 10_000);
        RuleDecision d = ask(r, "a");
        assertThat(d.allowed()).isTrue();
        assertThat(d.remaining()).isZero();
        assertThat(ask(r, "a").retryAfterMs()).isEqualTo(1_000);
    }

    @Test
    void slidingWindowLogCountsACostAsThatManyEntries() {
        Rule r = rule("swl", Algorithm.SLIDING_WINDOW_LOG, 5, Duration.ofSeconds(10));
        assertThat(ask(r, "a", 2).remaining()).isEqualTo(3);
        clock.advance(1_000);
        assertThat(ask(r, "a", 2).remaining()).isEqualTo(1);
        clock.advance(1_000);
        RuleDecision three = ask(r, "a", 3);
        assertThat(three.allowed()).isFalse();
        assertThat(three.retryAfterMs()).as("both of the first request's entries must leave").isEqualTo(8_000);
        RuleDecision four = ask(r, "a", 4);
        assertThat(four.retryAfterMs()).as("and one of the second's").isEqualTo(9_000);
        assertThat(ask(r, "a", 1).allowed()).isTrue();
        assertThat(ask(r, "a", 1).retryAfterMs()).isEqualTo(8_000);
    }

    @Test
    void slidingWindowLogCallerWithALaggingClockLogsAtTheNewestTime() {
        Rule r = rule("swl", Algorithm.SLIDING_WINDOW_LOG, 2, Duration.ofSeconds(10));
        clock.set(T0 + 20_000);
        assertThat(ask(r, "a").allowed()).isTrue();
        clock.set(T0 + 15_000);
        RuleDecision late = ask(r, "a");
        assertThat(late.allowed()).isTrue();
        assertThat(late.resetMs()).as("its entry is logged at the newest time").isEqualTo(15_000);
        clock.set(T0 + 29_999);
        assertThat(ask(r, "a").allowed()).isFalse();
        clock.set(T0 + 30_000);
        assertThat(admitted(r, "a", 3)).isEqualTo(2);
    }

    // ---- several rules ----

    @Test
    void deniedRequestTakesNothingFromAnyAlgorithm() {
        List<Rule> rules = List.of(
                rule("fw", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1)),
                rule("swc", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofMinutes(1)),
                rule("swl", Algorithm.SLIDING_WINDOW_LOG, 10, Duration.ofMinutes(1)),
                rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1)),
                leaky(10, Duration.ofMinutes(1), 10, Duration.ofMinutes(1)),
                rule("gcra", Algorithm.GCRA, 10, Duration.ofMinutes(1)));
        Rule strict = rule("strict", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        List<Acquisition> request = new java.util.ArrayList<>();
        for (Rule r : rules) request.add(new Acquisition(r, ClientKey.parse("a"), 2));
        request.add(new Acquisition(strict, ClientKey.parse("a")));

        Decision first = engine.decide(request);
        assertThat(first.allowed()).isTrue();
        List<Long> remainingAfterFirst = first.rules().stream().map(RuleDecision::remaining).toList();
        for (int i = 0; i < 5; i++) {
            clock.advance(1);
            Decision denied = engine.decide(request);
            assertThat(denied.allowed()).isFalse();
            assertThat(denied.violated()).extracting(d -> d.rule().name()).containsExactly("strict");
        }
        Decision probe = engine.decide(request.subList(0, rules.size()));
        assertThat(probe.allowed()).isTrue();
        for (int i = 0; i < rules.size(); i++) {
            assertThat(probe.rules().get(i).remaining()).as(rules.get(i).name())
                    .isEqualTo(Math.max(0, remainingAfterFirst.get(i) - 2));
        }
    }


    @Test
    void deniedRequestTakesNothingFromOtherRules() {
        Rule perMinute = rule("minute", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
        Rule perSecond = rule("second", Algorithm.FIXED_WINDOW, 2, Duration.ofSeconds(1));
        List<Acquisition> request = List.of(new Acquisition(perMinute, ClientKey.parse("a")), new Acquisition(perSecond, ClientKey.parse("a")));
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
    void aShadowRuleThatDeniesRefusesNothingAndTakesNothing() {
        Rule api = rule("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1));
        Rule shadow = rule("trial", Algorithm.FIXED_WINDOW, 2, Duration.ofMinutes(1)).withDryRun(true);
        List<Acquisition> request = List.of(new Acquisition(api, ClientKey.parse("a")), new Acquisition(shadow, ClientKey.parse("a")));
        for (int i = 0; i < 5; i++) {
            Decision d = engine.decide(request);
            assertThat(d.allowed()).as("request %d", i).isTrue();
            assertThat(d.rules().get(0).remaining()).as("the enforcing rule takes every time").isEqualTo(9 - i);
            assertThat(d.rules().get(1).allowed()).as("the shadow rule admits twice").isEqualTo(i < 2);
        }
        Decision d = engine.decide(List.of(new Acquisition(shadow, ClientKey.parse("a"), 1)));
        assertThat(d.rules().get(0).remaining()).as("the shadow rule took only while it admitted").isZero();
        assertThat(d.shadowDenied()).hasSize(1);
        assertThat(d.allowed()).isTrue();
    }

    @Test
    void anEnforcingDenialTakesNothingFromAShadowRule() {
        Rule strict = rule("strict", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        Rule shadow = rule("trial", Algorithm.SLIDING_WINDOW_LOG, 10, Duration.ofMinutes(1)).withDryRun(true);
        List<Acquisition> request = List.of(new Acquisition(shadow, ClientKey.parse("a")), new Acquisition(strict, ClientKey.parse("a")));
        assertThat(engine.decide(request).allowed()).isTrue();
        for (int i = 0; i < 3; i++) {
            Decision denied = engine.decide(request);
            assertThat(denied.allowed()).isFalse();
            assertThat(denied.violated()).extracting(r -> r.rule().name()).containsExactly("strict");
            assertThat(denied.rules().get(0).remaining()).as("the shadow rule took nothing").isEqualTo(9);
        }
    }

    @Test
    void admittedRequestTakesFromEveryRuleAndReportsEach() {
        Rule a = rule("a", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        Rule b = rule("b", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1));
        Decision d = engine.decide(List.of(new Acquisition(a, ClientKey.parse("x"), 2), new Acquisition(b, ClientKey.parse("y"), 3)));
        assertThat(d.allowed()).isTrue();
        assertThat(d.rules()).extracting(RuleDecision::remaining).containsExactly(8L, 2L);
        assertThat(d.rules()).extracting(x -> x.rule().name()).containsExactly("a", "b");
        assertThat(ask(a, "x").remaining()).isEqualTo(7);
        assertThat(ask(b, "y").remaining()).isEqualTo(1);
    }

    @Test
    void nextIsWhenMoreQuotaComesNotWhenTheQuotaIsFull() {
        // 10 a minute, two requests at once 15 s into a minute: remaining 8 for each algorithm, but
        // more quota comes at very different times (the draft's t), and the quota is full later still
        clock.set(T0 + 15_000);
        Rule leaky = new Rule("lb", Algorithm.LEAKY_BUCKET, 10, Duration.ofMinutes(1), 10, 1, FailurePolicy.OPEN, 10,
                Duration.ofMinutes(1));
        assertTwoRequestsLeave(rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1)), 6_000, 12_000);
        assertTwoRequestsLeave(rule("gcra", Algorithm.GCRA, 10, Duration.ofMinutes(1)), 6_000, 12_000);
        assertTwoRequestsLeave(leaky, 6_000, 12_000);
        assertTwoRequestsLeave(rule("fw", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1)), 45_000, 45_000);
        // the two requests weigh 2 x (1 - e/60s) into the next window: at most 1 from e = 30 s on
        assertTwoRequestsLeave(rule("swc", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofMinutes(1)), 75_000, 105_000);
        assertTwoRequestsLeave(rule("swl", Algorithm.SLIDING_WINDOW_LOG, 10, Duration.ofMinutes(1)), 60_000, 60_000);
    }

    private void assertTwoRequestsLeave(Rule rule, long nextMs, long resetMs) {
        ask(rule, "a");
        RuleDecision second = ask(rule, "a");
        assertThat(List.of(second.remaining(), second.nextMs(), second.resetMs())).as(rule.algorithm().id())
                .containsExactly(8L, nextMs, resetMs);
    }

    @Test
    void aFullQuotaHasNothingMoreToCome() {
        Rule impossible = rule("impossible", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        for (Algorithm algorithm : Rates.ALL) {
            Rule r = rule(algorithm.id(), algorithm, 10, Duration.ofMinutes(1));
            // denied by the other rule: this one takes nothing and shows its untouched, full state
            Decision d = engine.decide(List.of(new Acquisition(r, ClientKey.parse("a"), 1), new Acquisition(impossible, ClientKey.parse("a"), 2)));
            RuleDecision untouched = d.rules().get(0);
            // without max-delay, a leaky bucket admits one request at a time, whatever waiting
            long full = algorithm == Algorithm.LEAKY_BUCKET ? 1 : 10;
            assertThat(List.of(untouched.allowed(), untouched.remaining(), untouched.nextMs(), untouched.resetMs()))
                    .as(algorithm.id()).containsExactly(true, full, 0L, 0L);
            assertThat(d.rules().get(1).nextMs()).as("a denying rule's next is its retry-after")
                    .isEqualTo(d.rules().get(1).retryAfterMs()).isEqualTo(60_000);
        }
    }

    // ---- giving back (rule.<r>.count): never better than if the request had never happened ----

    private void giveBack(RuleDecision taken, String client, long cost) {
        engine.giveBack(List.of(new Acquisition(taken.rule(), ClientKey.parse(client), cost)), List.of(taken));
    }

    @Test
    void aGiveBackRightAfterTheRequestLeavesTheStateAsIfItNeverHappened() {
        for (Algorithm algorithm : Rates.ALL) {
            Rule r = algorithm == Algorithm.LEAKY_BUCKET ? leaky(10, Duration.ofMinutes(1), 10, Duration.ofMinutes(1))
                    : rule(algorithm.id(), algorithm, 10, Duration.ofMinutes(1));
            clock.set(T0 + 15_000);
            ask(r, "a", 3);
            RuleDecision taken = ask(r, "a", 2);
            assertThat(taken.taken()).as(algorithm.id()).isTrue();
            giveBack(taken, "a", 2);
            RuleDecision after = ask(r, "a", 2);
            ask(r, "b", 3);
            RuleDecision never = ask(r, "b", 2);
            assertThat(List.of(after.remaining(), after.resetMs(), after.nextMs(), after.delayMs())).as(algorithm.id())
                    .isEqualTo(List.of(never.remaining(), never.resetMs(), never.nextMs(), never.delayMs()));
        }
    }

    @Test
    void aFixedWindowGivesBackTheCostWhileItsWindowLastsAndNothingAfter() {
        Rule r = rule("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
        clock.set(T0 + 10_000);
        RuleDecision first = ask(r, "a", 2);
        ask(r, "a", 1); // another request of the same client, in between
        giveBack(first, "a", 2);
        assertThat(ask(r, "a", 1).remaining()).as("only the first request's 2 came back").isEqualTo(3);
        RuleDecision late = ask(r, "a", 2);
        clock.set(T0 + 60_000); // the next window
        giveBack(late, "a", 2);
        assertThat(ask(r, "a", 1).remaining()).as("a count that has ended gives nothing back").isEqualTo(4);
    }

    @Test
    void aSlidingWindowCounterGivesBackFromThePreviousWindowOnceTheWindowTurned() {
        Rule r = rule("swc", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofMinutes(1));
        clock.set(T0 + 30_000);
        RuleDecision taken = ask(r, "a", 4);
        clock.set(T0 + 90_000); // half way into the next window: the 4 weigh 2
        RuleDecision before = ask(r, "a", 11); // denied: takes nothing, shows the state
        giveBack(taken, "a", 4);
        RuleDecision after = ask(r, "a", 11);
        assertThat(before.remaining()).isEqualTo(8);
        assertThat(after.remaining()).as("the previous window's 4 are gone").isEqualTo(10);
    }

    @Test
    void aTokenBucketGivesBackNoMoreThanWouldHaveRefilledIntoAFullBucket() {
        Rule r = rule("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1)); // a token every 6 s
        RuleDecision taken = ask(r, "a", 2);
        clock.advance(9_000); // 1.5 tokens refilled: without the request, the bucket would have stayed full
        giveBack(taken, "a", 2);
        RuleDecision d = ask(r, "a", 1);
        assertThat(List.of(d.remaining(), d.nextMs())).as("full again, not 10.5 tokens").containsExactly(9L, 6_000L);
    }

    @Test
    void gcraGivesBackWhatTheRequestPushedAtMostWhileItIsStillAhead() {
        Rule r = rule("gcra", Algorithm.GCRA, 10, Duration.ofMinutes(1)); // a token every 6 s
        ask(r, "a", 4); // 24 s from full
        RuleDecision taken = ask(r, "a", 2); // 36 s from full
        clock.advance(3_000);
        giveBack(taken, "a", 2);
        RuleDecision d = ask(r, "a", 11); // denied, takes nothing
        assertThat(d.resetMs()).as("as if only the 4 had been taken 3 s ago").isEqualTo(21_000);
    }

    @Test
    void twoRequestsGivenBackNeverGiveBackMoreThanIfNeitherHadHappened() {
        for (Algorithm algorithm : List.of(Algorithm.TOKEN_BUCKET, Algorithm.GCRA)) {
            Rule r = rule(algorithm.id(), algorithm, 10, Duration.ofMinutes(1)); // a token every 6 s
            RuleDecision one = ask(r, "a", 2);
            RuleDecision two = ask(r, "a", 2);
            clock.advance(1_000);
            giveBack(one, "a", 2); // 11 s before the bucket the first left would have been full: 1 5/6 tokens
            // the rest: 23 s, less what was given back since, which the refund counter holds in whole ms
            // for GCRA (11 s: full, as if neither had happened) and in whole tokens for the token bucket
            // (2: it regains 2 of 2 1/6, never more than had neither happened, under a token less per
            // refund in between)
            giveBack(two, "a", 2);
            assertThat(List.of(ask(r, "a", 11).remaining(), ask(r, "a", 1).nextMs())).as(algorithm.id())
                    .containsExactly(algorithm == Algorithm.GCRA ? 10L : 9L, algorithm == Algorithm.GCRA ? 6_000L : 1_000L);
            RuleDecision three = ask(r, "b", 2);
            RuleDecision four = ask(r, "b", 2);
            clock.advance(1_000);
            giveBack(four, "b", 2); // nothing happened since: undone
            giveBack(three, "b", 2); // then nothing since this one either
            assertThat(List.of(ask(r, "b", 11).remaining(), ask(r, "b", 1).nextMs())).as(algorithm.id())
                    .containsExactly(10L, 6_000L);
            RuleDecision five = ask(r, "c", 2);
            RuleDecision six = ask(r, "c", 2);
            ask(r, "c", 1); // kept
            clock.advance(1_000);
            giveBack(six, "c", 2); // 23 s before the bucket six left would have been full: all 2
            giveBack(five, "c", 2); // 11 s, less the 2 given back since: nothing
            assertThat(ask(r, "c", 11).remaining()).as("%s: never more than if neither had happened", algorithm.id())
                    .isEqualTo(7);
        }
    }

    @Test
    void aRuleThatTookNothingHasNothingToGiveBack() {
        Rule strict = rule("strict", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        Rule shadow = rule("trial", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1)).withDryRun(true);
        ask(strict, "a");
        ask(shadow, "a");
        Decision d = engine.decide(List.of(new Acquisition(shadow, ClientKey.parse("a")), new Acquisition(strict, ClientKey.parse("b"))));
        assertThat(d.allowed()).isTrue();
        assertThat(d.rules()).extracting(RuleDecision::taken).containsExactly(false, true);
        Decision denied = engine.decide(List.of(new Acquisition(strict, ClientKey.parse("a"))));
        assertThat(denied.rules().get(0).taken()).isFalse();
    }

    // ---- changed figures: a plan switch, a reload (the state belongs to the rule's name and the client) ----

    @Test
    void aClientMovingToAnotherPlanKeepsItsCount() {
        Rule free = rule("api", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
        Rule pro = free.toBuilder().limit(20).plan("pro").build();
        clock.set(T0 + 10_000);
        assertThat(admitted(free, "a", 7)).isEqualTo(5);
        RuleDecision upgraded = ask(pro, "a");
        assertThat(upgraded.allowed()).isTrue();
        assertThat(upgraded.remaining()).as("the 5 of the free plan count against the pro plan's 20").isEqualTo(14);
        assertThat(ask(free, "a").allowed()).as("and the 6 against the free plan's 5").isFalse();
    }

    @Test
    void aFixedWindowCountLastsUntilItsWindowEndsWhenTheWindowChanges() {
        Rule hourly = rule("api", Algorithm.FIXED_WINDOW, 100, Duration.ofHours(1));
        Rule perMinute = hourly.toBuilder().limit(10).window(Duration.ofMinutes(1)).build();
        long hour = Math.floorDiv(T0, 3_600_000L) * 3_600_000L + 3_600_000L;
        clock.set(hour + 600_000); // 10 minutes into an hour
        assertThat(admitted(hourly, "a", 50)).isEqualTo(50);
        clock.set(hour + 1_200_000);
        RuleDecision d = ask(perMinute, "a");
        assertThat(d.allowed()).as("the hour's 50 still count").isFalse();
        assertThat(d.retryAfterMs()).as("until the hour they were counted in ends").isEqualTo(2_400_000);
        clock.set(hour + 3_600_000);
        assertThat(ask(perMinute, "a").remaining()).as("then the minutes count afresh").isEqualTo(9);
    }

    @Test
    void aTokenBucketKeepsItsTokensCappedAtTheNewBurst() {
        Rule basic = rule("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1));
        Rule big = basic.toBuilder().limit(100).plan("big").build();
        Rule small = bucket("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1), 3);
        assertThat(admitted(basic, "a", 4)).isEqualTo(4);
        assertThat(ask(big, "a").remaining()).as("6 tokens kept, not filled up to 100").isEqualTo(5);
        assertThat(ask(small, "a").remaining()).as("5 capped at the burst of 3").isEqualTo(2);
    }

    @Test
    void aTokenBucketsTokensAreRescaledExactlyWhenItsWindowChanges() {
        // windows of about 3,000 and 8,000 years, chosen where floor(r x w2 / w1) in doubles rounds up
        long w1 = 94_677_758_210_393L;
        long w2 = 259_956_414_370_521L;
        long fraction = 77_437_676_164_617L;
        Rule before = bucket("api", Algorithm.TOKEN_BUCKET, 1, Duration.ofMillis(w1), 2);
        Rule after = bucket("api", Algorithm.TOKEN_BUCKET, 1, Duration.ofMillis(w2), 2);
        assertThat(ask(before, "a", 2).allowed()).isTrue();
        clock.advance(w1 + fraction); // refilled 1 token and `fraction` units of w1
        assertThat(ask(before, "a", 1).allowed()).isTrue(); // leaves exactly `fraction` units
        RuleDecision d = ask(after, "a", 2);
        long rescaled = BigInteger.valueOf(fraction).multiply(BigInteger.valueOf(w2)).divide(BigInteger.valueOf(w1)).longValueExact();
        assertThat(d.allowed()).isFalse();
        assertThat(d.retryAfterMs()).as("1 unit of w2 refills per ms").isEqualTo(2 * w2 - rescaled);
    }

    @Test
    void gcraKeepsTheMomentItsBucketIsFullWhenItsFiguresChange() {
        Rule slow = rule("api", Algorithm.GCRA, 10, Duration.ofMinutes(1)); // a token every 6 s
        Rule fast = slow.toBuilder().limit(1000).plan("fast").build(); // a token every 60 ms
        assertThat(admitted(slow, "a", 5)).isEqualTo(5);
        RuleDecision d = ask(fast, "a");
        assertThat(d.resetMs()).as("still 30 s from full, and the new interval applies").isEqualTo(30_060);
        assertThat(d.remaining()).as("half empty under the new plan too").isEqualTo(499);
    }

    @Test
    void aLeakyBucketsAdmittedRequestsKeepTheirSlotsWhenItsFiguresChange() {
        Rule slow = leaky(10, Duration.ofSeconds(1), 10, Duration.ofSeconds(1)); // a slot every 100 ms
        Rule fast = leaky(100, Duration.ofSeconds(1), 100, Duration.ofSeconds(1)); // every 10 ms
        assertThat(ask(slow, "a").delayMs()).isZero();
        assertThat(ask(slow, "a").delayMs()).isEqualTo(100);
        RuleDecision d = ask(fast, "a");
        assertThat(d.delayMs()).as("the next free slot stays where it was").isEqualTo(200);
        assertThat(d.resetMs()).as("then the new slots follow").isEqualTo(210);
    }

    @Test
    void aRuleThatChangesAlgorithmStartsItsClientsAfresh() {
        Rule window = rule("api", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
        Rule bucket = rule("api", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1));
        assertThat(admitted(window, "a", 6)).isEqualTo(5);
        assertThat(ask(bucket, "a").remaining()).isEqualTo(4);
        assertThat(ask(window, "a").remaining()).as("and back again: afresh once more").isEqualTo(4);
    }

    @Test
    void noAcquisitionsIsNoDecision() {
        assertThat(engine.decide(List.of())).isSameAs(Decision.none());
    }

    // ---- concurrency: requests in flight ----

    protected static Rule concurrency(String name, long limit, Duration lease) {
        return Rule.builder(name).algorithm(Algorithm.CONCURRENCY).limit(limit).lease(lease).build();
    }

    private void release(RuleDecision taken, String client) {
        engine.giveBack(List.of(new Acquisition(taken.rule(), ClientKey.parse(client))), List.of(taken));
    }

    private boolean renew(RuleDecision taken, String client) {
        return engine.renew(List.of(new Acquisition(taken.rule(), ClientKey.parse(client))), List.of(taken))[0];
    }

    @Test
    void concurrencyAdmitsTheLimitInFlightThenDeniesUntilOneCompletes() {
        Rule exports = concurrency("exports", 3, Duration.ofSeconds(30));
        RuleDecision first = ask(exports, "a");
        assertThat(List.of(first.allowed(), first.remaining())).containsExactly(true, 2L);
        assertThat(ask(exports, "a").remaining()).isEqualTo(1);
        assertThat(ask(exports, "a").remaining()).isZero();
        RuleDecision refused = ask(exports, "a");
        assertThat(List.of(refused.allowed(), refused.remaining(), refused.retryAfterMs(), refused.resetMs()))
                .as("a hint of a second: when a slot frees depends on requests that have not finished")
                .containsExactly(false, 0L, 1000L, 1000L);
        assertThat(refused.taken()).isFalse();
        assertThat(ask(exports, "b").remaining()).as("another client's slots").isEqualTo(2);

        clock.advance(10_000); // nothing comes back with time while the requests run
        assertThat(ask(exports, "a").allowed()).isFalse();
        release(first, "a");
        RuleDecision next = ask(exports, "a");
        assertThat(List.of(next.allowed(), next.remaining())).containsExactly(true, 0L);
    }

    @Test
    void aSlotReleasedTwiceIsFreedOnce() {
        Rule exports = concurrency("exports", 2, Duration.ofSeconds(30));
        RuleDecision first = ask(exports, "a");
        ask(exports, "a");
        release(first, "a");
        release(first, "a");
        assertThat(ask(exports, "a").allowed()).isTrue();
        assertThat(ask(exports, "a").allowed()).as("one slot was freed, not two").isFalse();
    }

    @Test
    void aSlotWhoseLeaseEndedIsFreeWithoutARelease() {
        Rule exports = concurrency("exports", 1, Duration.ofSeconds(5));
        assertThat(ask(exports, "a").allowed()).isTrue();
        clock.advance(4_999);
        assertThat(ask(exports, "a").allowed()).as("the lease holds until its end").isFalse();
        clock.advance(1);
        assertThat(ask(exports, "a").allowed()).as("an instance that stopped renewing leaves it free at the lease's end")
                .isTrue();
    }

    @Test
    void aRenewedSlotOutlivesItsFirstLeaseAndAnEndedOneIsNotBroughtBack() {
        Rule exports = concurrency("exports", 1, Duration.ofSeconds(6));
        RuleDecision held = ask(exports, "a");
        clock.advance(2_000);
        assertThat(renew(held, "a")).isTrue();
        clock.advance(5_000); // 7 s after the take, 5 s after the renewal
        assertThat(ask(exports, "a").allowed()).as("renewed: a lease from the renewal").isFalse();
        clock.advance(1_000);
        assertThat(ask(exports, "a").allowed()).as("a lease from the renewal has ended: free").isTrue();
        RuleDecision other = ask(exports, "b");
        clock.advance(6_000);
        assertThat(renew(other, "b")).as("a lease that has ended may be counted free already: not renewed").isFalse();
        assertThat(ask(exports, "b").allowed()).isTrue();
    }

    @Test
    void aConcurrencyRuleTakesNoSlotForARequestAnotherRuleDenies() {
        Rule exports = concurrency("exports", 1, Duration.ofSeconds(30));
        Rule impossible = rule("impossible", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        Decision d = engine.decide(List.of(new Acquisition(exports, ClientKey.parse("a")),
                new Acquisition(impossible, ClientKey.parse("a"), 2)));
        assertThat(d.allowed()).isFalse();
        assertThat(d.rules().get(0).allowed()).as("it would admit").isTrue();
        assertThat(d.rules().get(0).taken()).isFalse();
        assertThat(ask(exports, "a").allowed()).as("its slot was never taken").isTrue();
    }

    @Test
    void aRequestRefusedForWantOfASlotTakesNothingFromItsOtherRules() {
        Rule exports = concurrency("exports", 1, Duration.ofSeconds(30));
        Rule api = rule("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1));
        ask(exports, "a");
        Decision d = engine.decide(List.of(new Acquisition(api, ClientKey.parse("a")), new Acquisition(exports, ClientKey.parse("a"))));
        assertThat(d.allowed()).isFalse();
        assertThat(ask(api, "a").remaining()).as("the refused request took no token").isEqualTo(9);
    }

    @Test
    void aConcurrencyLimitLoweredWhileSlotsAreHeldCountsThemAgainstTheNewLimit() {
        Rule five = concurrency("exports", 5, Duration.ofSeconds(30));
        Rule two = concurrency("exports", 2, Duration.ofSeconds(30));
        for (int i = 0; i < 3; i++) assertThat(ask(five, "a").allowed()).isTrue();
        RuleDecision d = ask(two, "a");
        assertThat(List.of(d.allowed(), d.remaining())).containsExactly(false, 0L);
    }

    // ---- actual cost, settled after the response ----

    private void settle(RuleDecision taken, String client, long actual) {
        Acquisition a = new Acquisition(taken.rule(), ClientKey.parse(client), taken.rule().cost());
        dev.sluice.limiter.Settlement s = dev.sluice.limiter.Settlement.ofActualCost(a, taken, actual);
        if (s != null) engine.settle(List.of(s));
    }

    @Test
    void aTokenBucketChargedPastEmptyIsInDebtUntilTheRefillRepaysIt() {
        Rule llm = rule("llm", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10)); // a token a second
        RuleDecision estimate = ask(llm, "a");
        assertThat(estimate.remaining()).isEqualTo(9);
        settle(estimate, "a", 15); // 14 more: 5 tokens of debt
        RuleDecision refused = ask(llm, "a");
        assertThat(List.of(refused.allowed(), refused.remaining(), refused.retryAfterMs()))
                .as("5 tokens owed and one to take: 6 s").containsExactly(false, 0L, 6_000L);
        assertThat(refused.resetMs()).as("then 10 s to a full bucket").isEqualTo(15_000);
        clock.advance(5_999);
        assertThat(ask(llm, "a").allowed()).isFalse();
        clock.advance(1);
        assertThat(ask(llm, "a").allowed()).isTrue();
    }

    @Test
    void aGcraChargedPastItsBurstIsInDebtUntilTheTatComesBack() {
        Rule llm = rule("llm", Algorithm.GCRA, 10, Duration.ofSeconds(10));
        RuleDecision estimate = ask(llm, "a");
        settle(estimate, "a", 15);
        RuleDecision refused = ask(llm, "a");
        assertThat(List.of(refused.allowed(), refused.remaining(), refused.retryAfterMs()))
                .as("as the token bucket").containsExactly(false, 0L, 6_000L);
        clock.advance(6_000);
        assertThat(ask(llm, "a").allowed()).isTrue();
    }

    @Test
    void aFixedWindowChargedPastItsLimitRefusesUntilTheWindowEnds() {
        Rule llm = rule("llm", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        clock.set(T0 + 20_000);
        RuleDecision estimate = ask(llm, "a");
        settle(estimate, "a", 25);
        RuleDecision refused = ask(llm, "a");
        assertThat(List.of(refused.allowed(), refused.remaining(), refused.retryAfterMs())).containsExactly(false, 0L, 40_000L);
        clock.set(T0 + 60_000);
        assertThat(ask(llm, "a").remaining()).as("a new window: the debt was this window's").isEqualTo(9);
    }

    @Test
    void aSlidingWindowCounterChargedPastItsLimitCarriesTheWeightedDebtIntoTheNextWindow() {
        Rule llm = rule("llm", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofSeconds(10));
        RuleDecision estimate = ask(llm, "a");
        settle(estimate, "a", 20); // 20 in this window: the next window starts with 20 x (1 - elapsed share)
        clock.set(T0 + 10_000);
        assertThat(ask(llm, "a").allowed()).as("20 weighted fully at the next window's start").isFalse();
        clock.set(T0 + 15_500); // 20 x 0.45 = 9: one fits
        assertThat(ask(llm, "a").allowed()).isTrue();
    }

    @Test
    void aRequestThatCostLessThanItsEstimateGivesBackTheDifference() {
        for (Algorithm algorithm : List.of(Algorithm.FIXED_WINDOW, Algorithm.SLIDING_WINDOW_COUNTER, Algorithm.TOKEN_BUCKET,
                Algorithm.GCRA)) {
            Rule llm = Rule.builder("llm-" + algorithm.id()).algorithm(algorithm).limit(100).window(Duration.ofMinutes(1))
                    .cost(50).build();
            RuleDecision estimate = ask(llm, "a", 50);
            settle(estimate, "a", 20);
            RuleDecision after = ask(llm, "a", 1);
            ask(llm, "b", 20);
            RuleDecision asIfItCost20 = ask(llm, "b", 1);
            assertThat(List.of(after.remaining(), after.resetMs(), after.nextMs())).as(algorithm.id())
                    .isEqualTo(List.of(asIfItCost20.remaining(), asIfItCost20.resetMs(), asIfItCost20.nextMs()));
        }
    }

    @Test
    void aChargeOnAStateThatHasExpiredCountsAfresh() {
        Rule llm = rule("llm", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10));
        RuleDecision estimate = ask(llm, "a");
        clock.advance(60_000); // the request streamed for a minute: its bucket is long full again
        settle(estimate, "a", 13); // 12 more than it took, on a full bucket of 10: 2 owed
        assertThat(ask(llm, "a").retryAfterMs()).isEqualTo(3_000);
    }
}
