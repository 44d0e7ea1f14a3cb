package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * When late slot releases are sent and when they are given up, on a fake clock, with
 * {@link LateReleases#releaseDue()} driven by the test instead of its thread and a recording sender.
 */
class LateReleasesTest {

    private static final Rule EXPORTS = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(2)
            .lease(Duration.ofSeconds(9)).build();
    private static final Rule API = Rule.builder("api").limit(10).window(Duration.ofMinutes(1)).build();

    private final AtomicLong nanos = new AtomicLong(1_000);
    private final List<List<Long>> calls = new ArrayList<>();
    /** What Redis answers to a call: its tokens in, which it answered out (throw: none). */
    private Function<List<Long>, boolean[]> redis = tokens -> all(tokens.size());
    private final LateReleases late = new LateReleases(this::send, () -> "test", nanos::get, false);

    @AfterEach
    void close() {
        late.close();
    }

    private boolean[] send(List<Settlement> releases) {
        List<Long> tokens = new ArrayList<>();
        for (Settlement s : releases) tokens.add(s.taken().take().token());
        calls.add(tokens);
        return redis.apply(tokens);
    }

    private static boolean[] all(int n) {
        boolean[] b = new boolean[n];
        java.util.Arrays.fill(b, true);
        return b;
    }

    private static Settlement release(Rule rule, long token) {
        RuleDecision took = new RuleDecision(rule, true, 0, 0, 0, 0, 0, new RuleDecision.Take(0, 0, 0, token),
                RuleDecision.Source.REDIS);
        return Settlement.giveBack(new Acquisition(rule, ClientKey.of("acme")), took);
    }

    private void advanceMillis(long ms) {
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    private List<Long> sentNow() {
        calls.clear();
        late.releaseDue();
        return calls.isEmpty() ? List.of() : calls.get(0);
    }

    @Test
    void aFailedReleaseIsSentAgainEachSecondUntilRedisAnswersItOnce() {
        redis = tokens -> {
            throw new LimiterUnavailableException("Redis away", null, true);
        };
        late.add(List.of(release(EXPORTS, 7)), false);
        assertThat(sentNow()).as("sent at once").containsExactly(7L);
        advanceMillis(999);
        assertThat(sentNow()).as("not before a second").isEmpty();
        advanceMillis(1);
        assertThat(sentNow()).containsExactly(7L);
        redis = tokens -> all(tokens.size());
        advanceMillis(1_000);
        assertThat(sentNow()).containsExactly(7L);
        assertThat(late.pending()).as("answered once: done").isZero();
        advanceMillis(5_000);
        assertThat(sentNow()).isEmpty();
    }

    @Test
    void aSlotADecisionMayHaveTakenIsReleasedUntilRedisAnswersTwiceASecondApart() {
        late.add(List.of(release(EXPORTS, 7)), true);
        assertThat(sentNow()).containsExactly(7L);
        assertThat(late.pending()).as("the take may land after the first release").isOne();
        advanceMillis(500);
        assertThat(sentNow()).isEmpty();
        advanceMillis(500);
        assertThat(sentNow()).containsExactly(7L);
        assertThat(late.pending()).isZero();
    }

    /** Redis stalled for longer than a lease runs the take when it resumes: its release waits for Redis's answer. */
    @Test
    void aSlotADecisionMayHaveTakenWaitsForRedisPastItsLeaseAndIsReleasedTwiceEvenOnAOneSecondLease() {
        Rule short1s = Rule.builder("short").algorithm(Algorithm.CONCURRENCY).limit(1).lease(Duration.ofSeconds(1)).build();
        redis = tokens -> {
            throw new LimiterUnavailableException("Redis stalled", null, true);
        };
        late.add(List.of(release(short1s, 7)), true);
        for (int s = 0; s < 9; s++) {
            assertThat(sentNow()).as("second %d of Redis's stall", s).containsExactly(7L);
            advanceMillis(1_000);
        }
        redis = tokens -> all(tokens.size());
        assertThat(sentNow()).as("Redis answers at last").containsExactly(7L);
        advanceMillis(1_000);
        assertThat(sentNow()).as("the second release, though the lease is a second").containsExactly(7L);
        assertThat(late.pending()).isZero();
    }

    @Test
    void aSlotADecisionMayHaveTakenIsGivenUpAfterTenLeasesWithoutAnAnswer() {
        redis = tokens -> {
            throw new LimiterUnavailableException("Redis away", null, true);
        };
        late.add(List.of(release(EXPORTS, 7)), true);
        advanceMillis(LateReleases.UNCERTAIN_LEASES * 9_000 - 1);
        assertThat(sentNow()).containsExactly(7L);
        advanceMillis(1);
        assertThat(sentNow()).isEmpty();
        assertThat(late.pending()).isZero();
    }

    @Test
    void theThreadSendsByItselfAndStartsAgainForReleasesAfterItEnded() throws InterruptedException {
        java.util.concurrent.BlockingQueue<Long> sent = new java.util.concurrent.LinkedBlockingQueue<>();
        java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger(1);
        try (LateReleases threaded = new LateReleases(releases -> {
            releases.forEach(r -> sent.add(r.taken().take().token()));
            if (failures.getAndDecrement() > 0) throw new LimiterUnavailableException("Redis away", null, true);
            return all(releases.size());
        }, () -> "test", System::nanoTime, true)) {
            threaded.add(List.of(release(EXPORTS, 7)), false);
            assertThat(sent.poll(5, TimeUnit.SECONDS)).isEqualTo(7L);
            assertThat(sent.poll(5, TimeUnit.SECONDS)).as("again, a second later").isEqualTo(7L);
            dev.sluice.testing.Poll.until(Duration.ofSeconds(5), "the release answered",
                    () -> threaded.pending() == 0 && !threadRunning());
            threaded.add(List.of(release(EXPORTS, 8)), false);
            assertThat(sent.poll(5, TimeUnit.SECONDS)).as("a new thread for a new release").isEqualTo(8L);
        }
        dev.sluice.testing.Poll.until(Duration.ofSeconds(5), "the thread gone after close", () -> !threadRunning());
    }

    private static boolean threadRunning() {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("sluice-releases-test"));
    }

    @Test
    void aReleaseIsGivenUpWhenItsSlotsLeaseHasEndedByItself() {
        redis = tokens -> {
            throw new LimiterUnavailableException("Redis away", null, true);
        };
        late.add(List.of(release(EXPORTS, 7)), false);
        for (int s = 0; s < 8; s++) {
            assertThat(sentNow()).as("second %d", s).containsExactly(7L);
            advanceMillis(1_000);
        }
        advanceMillis(999);
        assertThat(sentNow()).as("8.999 s after: still within the 9 s lease").containsExactly(7L);
        advanceMillis(1);
        assertThat(sentNow()).as("the lease has ended: nothing left to release").isEmpty();
        assertThat(late.pending()).isZero();
    }

    @Test
    void onlyConcurrencyReleasesWaitAndTheirNumberIsBounded() {
        late.add(List.of(release(API, 1)), false);
        assertThat(late.pending()).as("a rate rule's give-back is not retried").isZero();
        List<Settlement> many = new ArrayList<>();
        for (long t = 0; t < LateReleases.MAX_PENDING + 5; t++) many.add(release(EXPORTS, t));
        late.add(many, false);
        assertThat(late.pending()).isEqualTo(LateReleases.MAX_PENDING);
        calls.clear();
        assertThat(late.releaseDue()).isEqualTo(LateReleases.MAX_PENDING);
        assertThat(calls).as("in calls of at most 500").hasSize(LateReleases.MAX_PENDING / LateReleases.MAX_PER_CALL)
                .allSatisfy(call -> assertThat(call).hasSize(LateReleases.MAX_PER_CALL));
        assertThat(late.pending()).isZero();
    }

    @Test
    void afterACallRedisDidNotAnswerTheRestWaitForTheNextTurnAndPartAnswersArePartDone() {
        List<Settlement> many = new ArrayList<>();
        for (long t = 0; t < 2 * LateReleases.MAX_PER_CALL; t++) many.add(release(EXPORTS, t));
        late.add(many, false);
        redis = tokens -> {
            throw new LimiterUnavailableException("Redis away", null, true);
        };
        calls.clear();
        late.releaseDue();
        assertThat(calls).as("one call failed: Redis is away, the second waits").hasSize(1);
        // a Cluster: one master answers, the other does not
        redis = tokens -> {
            boolean[] answered = new boolean[tokens.size()];
            for (int i = 0; i < answered.length; i++) answered[i] = tokens.get(i) % 2 == 0;
            return answered;
        };
        advanceMillis(1_000);
        calls.clear();
        assertThat(late.releaseDue()).isEqualTo(LateReleases.MAX_PER_CALL);
        assertThat(calls).hasSize(2);
        assertThat(late.pending()).isEqualTo(LateReleases.MAX_PER_CALL);
        advanceMillis(1_000);
        assertThat(sentNow()).as("only those not answered").allSatisfy(t -> assertThat(t % 2).isOne());
    }

    @Test
    void closingGivesUpWhatIsWaiting() {
        late.add(List.of(release(EXPORTS, 7)), false);
        late.close();
        assertThat(late.pending()).isZero();
        late.add(List.of(release(EXPORTS, 8)), false);
        assertThat(late.pending()).as("none taken after close").isZero();
        assertThat(sentNow()).isEmpty();
    }
}
