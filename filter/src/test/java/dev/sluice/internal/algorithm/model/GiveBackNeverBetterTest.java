package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.sluice.limiter.FailurePolicy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Giving back never makes a client's state better than if the request had never happened, even
 * with other requests admitted between the request and its give-back (other instances, the same
 * client's other requests; other clients have states of their own): for every algorithm, thousands
 * of generated sequences run twice through the reference models. Run A: requests, some of which
 * are given back later (each at a later point, with requests in between, now and then from a
 * lagging clock, as another instance's). Run B: exactly the requests A admitted, at the same times,
 * but for those given back. After every step, no request of any cost at any time from the latest
 * request's on may be admitted by A and denied by B.
 *
 * <p>The models are the reference semantics, and {@code EquivalenceTest} holds the local engine and
 * the Redis script to them, give-backs included; so this holds for both engines. The bound is for
 * figures that stay the same between a request and its give-back (docs/algorithms.md).
 * {@code -Dsluice.giveback.sequences=N} (default 600 per algorithm); {@code -Dsluice.seed=S} replays.
 */
class GiveBackNeverBetterTest {

    static final int SEQUENCES = Integer.getInteger("sluice.giveback.sequences", 600);

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void aGiveBackNeverLeavesAStateBetterThanIfTheRequestHadNeverHappened(Algorithm algorithm) {
        int[] counted = new int[3]; // give-backs that took something, that changed something, probes
        for (int i = 0; i < SEQUENCES; i++) {
            sequence(TestSeed.get() + 5_000_011L * algorithm.ordinal() + i, algorithm, counted);
        }
        assertThat(counted[0]).as("requests given back").isGreaterThan(SEQUENCES);
        assertThat(counted[1]).as("give-backs that left A better than before them").isGreaterThan(SEQUENCES / 2);
        assertThat(counted[2]).as("probes").isGreaterThan(SEQUENCES * 50);
    }

    private static void sequence(long seed, Algorithm algorithm, int[] counted) {
        Random rnd = new Random(seed);
        Rule rule = rnd.nextInt(4) == 0 ? Scenario.largeRule("r", algorithm, rnd) : Scenario.rule("r", algorithm, rnd);
        long window = rule.windowMillis();
        Model a = Model.of(algorithm);
        Model b = Model.of(algorithm);
        StringBuilder log = new StringBuilder(TestSeed.replay()).append(", sequence seed ").append(seed).append(": ").append(rule).append('\n');
        long latest = ManualClock.MINUTE_BOUNDARY + rnd.nextInt(120_000);
        List<long[]> pending = new ArrayList<>(); // {cost, step it is given back at}
        List<Object> pendingTaken = new ArrayList<>();
        int steps = 10 + rnd.nextInt(40);
        for (int step = 0; step < steps; step++) {
            long now;
            if (rnd.nextInt(8) == 0) {
                now = latest - rnd.nextLong(Math.min(Scenario.MAX_LAG_MS, window) + 1); // another instance's lagging clock
            } else {
                now = latest + elapsed(rule, rnd);
                latest = now;
            }
            // give back what is due at this step
            for (int p = pending.size() - 1; p >= 0; p--) {
                if (pending.get(p)[1] != step) continue;
                long cost = pending.get(p)[0];
                Model before = a.copy();
                a.giveBack(rule, now, cost, pendingTaken.get(p));
                counted[0]++;
                if (better(a, before, rule, now)) counted[1]++;
                log.append("  t=").append(now).append(" give back ").append(cost).append('\n');
                pending.remove(p);
                pendingTaken.remove(p);
            }
            long cost = Scenario.cost(rule, rnd);
            boolean admittedByA = a.admits(rule, now, cost);
            log.append("  t=").append(now).append(" x").append(cost).append(admittedByA ? " admitted" : " denied");
            if (admittedByA) {
                boolean withdrawn = step < steps - 1 && rnd.nextInt(3) == 0;
                Object taken = a.take(rule, now, cost);
                if (withdrawn) {
                    pending.add(new long[]{cost, step + 1 + rnd.nextInt(Math.min(6, steps - step - 1))});
                    pendingTaken.add(taken);
                    log.append(", given back later");
                } else {
                    b.take(rule, now, cost); // the same request, taken whether or not B would have admitted it
                }
            }
            log.append('\n');
            counted[2] += probe(a, b, rule, latest, rnd, log);
        }
    }

    /**
     * The limit or burst rises, or the max delay changes, between a request and its give-back (a reload,
     * a plan switch; the window stays: docs/algorithms.md says what a changed window does), and the requests
     * in between are decided under the new figures: the give-back is computed with the
     * request's own figures, bounded by those in force, and still never leaves A better than B. In 0.2
     * a token bucket whose limit grew under the same window was given back the old limit's refill
     * (give-back.lua: the bound counted the time since the take at the old, slower refill).
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void aGiveBackAfterTheFiguresChangedNeverLeavesAStateBetter(Algorithm algorithm) {
        int[] counted = new int[3];
        for (int i = 0; i < SEQUENCES; i++) {
            changingSequence(TestSeed.get() + 7_000_003L * algorithm.ordinal() + i, algorithm, counted);
        }
        assertThat(counted[0]).as("requests given back after a change of figures").isGreaterThan(SEQUENCES / 4);
        assertThat(counted[2]).as("probes").isGreaterThan(SEQUENCES * 50);
    }

    /**
     * The named defect of 0.2, in numbers: a token bucket of 1 a second (burst 2) gives one token at
     * t=0; its limit is raised to 10 a second; at t=100 ms another request takes one (the bucket had
     * refilled to 2 at the new rate, as had the bucket without the first request) and the first is
     * given back. The old limit's bound (the 900 ms until the bucket the first request left would
     * have been full, at 1 a second: 0.9 token) left it 0.9 token better than if the first request had
     * never happened; under the faster refill in force the two buckets are equal, and nothing comes back.
     */
    @org.junit.jupiter.api.Test
    void aTokenBucketGivesBackNothingBeyondWhatTheFasterLimitInForceHasAlreadyRefilled() {
        Rule slow = new Rule("r", Algorithm.TOKEN_BUCKET, 1, Duration.ofSeconds(1), 2, 1, FailurePolicy.OPEN, 1,
                Duration.ZERO);
        Rule fast = new Rule("r", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(1), 2, 1, FailurePolicy.OPEN, 10,
                Duration.ZERO);
        long t0 = ManualClock.MINUTE_BOUNDARY;
        Model a = Model.of(Algorithm.TOKEN_BUCKET);
        Model b = Model.of(Algorithm.TOKEN_BUCKET);
        Object first = a.take(slow, t0, 1);
        a.take(fast, t0 + 100, 1);
        b.take(fast, t0 + 100, 1);

        a.giveBack(slow, fast, t0 + 100, 1, first);

        for (long t = t0 + 100; t <= t0 + 200; t++) {
            assertThat(a.admits(fast, t, 2)).as("x2 at +%d ms", t - t0).isEqualTo(b.admits(fast, t, 2));
        }
    }

    private static void changingSequence(long seed, Algorithm algorithm, int[] counted) {
        Random rnd = new Random(seed);
        Rule rule = Scenario.rule("r", algorithm, rnd);
        Model a = Model.of(algorithm);
        Model b = Model.of(algorithm);
        StringBuilder log = new StringBuilder(TestSeed.replay()).append(", sequence seed ").append(seed).append(": ")
                .append(rule).append('\n');
        long latest = ManualClock.MINUTE_BOUNDARY + rnd.nextInt(120_000);
        List<Object[]> pending = new ArrayList<>(); // {cost, step it is given back at, taken, the rule it was taken under}
        int steps = 10 + rnd.nextInt(40);
        boolean changed = false;
        for (int step = 0; step < steps; step++) {
            if (rnd.nextInt(5) == 0) {
                // a higher limit or burst, another max delay; the same window. (Lower figures are outside what
                // this compares: with a lower limit an admitted request can itself leave the state better later,
                // the refill before it counted at the higher limit, and a burst that falls and rises again
                // while a request is in flight is outside the guarantee: docs/algorithms.md.)
                Rule next = Scenario.rule("r", algorithm, rnd);
                long limit = Math.max(rule.limit(), next.limit());
                long burst = Math.max(rule.burst(), Math.max(limit, next.burst()));
                rule = new Rule("r", algorithm, limit, Duration.ofMillis(rule.windowMillis()), burst, 1,
                        FailurePolicy.OPEN, limit, next.maxDelay());
                changed = true;
                log.append("  figures now ").append(rule).append('\n');
            }
            long now = latest + elapsed(rule, rnd);
            latest = now;
            for (int p = pending.size() - 1; p >= 0; p--) {
                Object[] gb = pending.get(p);
                if ((int) gb[1] != step) continue;
                long cost = (long) gb[0];
                a.giveBack((Rule) gb[3], rule, now, cost, gb[2]);
                if (changed) counted[0]++;
                log.append("  t=").append(now).append(" give back ").append(cost).append(" taken under ").append(gb[3])
                        .append('\n');
                pending.remove(p);
            }
            long cost = Scenario.cost(rule, rnd);
            boolean admittedByA = a.admits(rule, now, cost);
            log.append("  t=").append(now).append(" x").append(cost).append(admittedByA ? " admitted" : " denied");
            if (admittedByA) {
                boolean withdrawn = step < steps - 1 && rnd.nextInt(3) == 0;
                Object taken = a.take(rule, now, cost);
                if (withdrawn) {
                    pending.add(new Object[]{cost, step + 1 + rnd.nextInt(Math.min(6, steps - step - 1)), taken, rule});
                    log.append(", given back later");
                } else {
                    b.take(rule, now, cost);
                }
            }
            log.append('\n');
            counted[2] += probe(a, b, rule, latest, rnd, log);
        }
    }

    /**
     * A cost known only after the response ({@code rule.<r>.actual-cost}): requests admitted at their
     * estimate in run A, each settled later with the cost it really had (less: the difference given back;
     * more: charged, past the limit if need be), with other requests in between, now and then from a lagging
     * clock; in run B the same requests take their actual cost at admission. No request of any cost at any
     * time from the latest on may be admitted by A and denied by B: settling never leaves a client better off
     * than if each request had cost, from the start, what it stated.
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER", "TOKEN_BUCKET", "GCRA"})
    void aSettledCostNeverLeavesAStateBetterThanIfTheRequestHadCostThatMuch(Algorithm algorithm) {
        int[] counted = new int[3]; // charged, given back, probes
        for (int i = 0; i < SEQUENCES; i++) {
            settledSequence(TestSeed.get() + 11_000_027L * algorithm.ordinal() + i, algorithm, counted);
        }
        assertThat(counted[0]).as("requests charged more").isGreaterThan(SEQUENCES);
        assertThat(counted[1]).as("requests that gave some back").isGreaterThan(SEQUENCES / 2);
        assertThat(counted[2]).as("probes").isGreaterThan(SEQUENCES * 20);
    }

    private static void settledSequence(long seed, Algorithm algorithm, int[] counted) {
        Random rnd = new Random(seed);
        Rule rule = rnd.nextInt(4) == 0 ? Scenario.largeRule("r", algorithm, rnd) : Scenario.rule("r", algorithm, rnd);
        if ((double) rule.capacity() * rule.windowMillis() > 1L << 44) {
            // a debt is kept up to 2^51 of the algorithm's units (RateAlgorithm.maxDebtUnits): 128 capacities here at
            // least, beyond what these sequences can owe; a rule near Sluice's largest quota x window owes at most two
            rule = Scenario.rule("r", algorithm, rnd);
        }
        long window = rule.windowMillis();
        Model a = Model.of(algorithm);
        Model b = Model.of(algorithm);
        StringBuilder log = new StringBuilder(TestSeed.replay()).append(", sequence seed ").append(seed).append(": ")
                .append(rule).append('\n');
        long latest = ManualClock.MINUTE_BOUNDARY + rnd.nextInt(120_000);
        List<long[]> pending = new ArrayList<>(); // {estimate, actual, step it is settled at}
        List<Object> pendingTaken = new ArrayList<>();
        int steps = 10 + rnd.nextInt(40);
        for (int step = 0; step < steps; step++) {
            long now;
            if (rnd.nextInt(8) == 0) {
                now = latest - rnd.nextLong(Math.min(Scenario.MAX_LAG_MS, window) + 1);
            } else {
                now = latest + elapsed(rule, rnd);
                latest = now;
            }
            for (int p = pending.size() - 1; p >= 0; p--) {
                long[] due = pending.get(p);
                if (due[2] != step) continue;
                if (due[1] > due[0]) {
                    a.charge(rule, now, due[1] - due[0]);
                    counted[0]++;
                } else if (due[1] < due[0]) {
                    a.giveBack(rule, now, due[0] - due[1], pendingTaken.get(p));
                    counted[1]++;
                }
                log.append("  t=").append(now).append(" settled: cost ").append(due[1]).append(" for ").append(due[0])
                        .append('\n');
                pending.remove(p);
                pendingTaken.remove(p);
            }
            long cost = Math.min(Scenario.cost(rule, rnd), rule.capacity());
            boolean admittedByA = a.admits(rule, now, cost);
            log.append("  t=").append(now).append(" x").append(cost).append(admittedByA ? " admitted" : " denied");
            if (admittedByA) {
                Object taken = a.take(rule, now, cost);
                long actual = rnd.nextInt(4) == 0 ? cost : Math.max(0, cost - 1 + rnd.nextLong(3 * cost + 2) - cost);
                b.take(rule, now, actual); // the request as it really was, taken whether or not B would have admitted it
                if (step < steps - 1) {
                    pending.add(new long[]{cost, actual, step + 1 + rnd.nextInt(Math.min(6, steps - step - 1))});
                    pendingTaken.add(taken);
                    log.append(", really costs ").append(actual);
                } else if (actual != cost) {
                    // the last step's request is settled at once
                    if (actual > cost) a.charge(rule, now, actual - cost);
                    else a.giveBack(rule, now, cost - actual, taken);
                }
            }
            log.append('\n');
            // while a request that costs more than it took is in flight, its charge is still to come: A is not yet
            // where B is (the response's own fields show the estimate, the next ones the settled state)
            if (pending.stream().noneMatch(due -> due[1] > due[0])) counted[2] += probe(a, b, rule, latest, rnd, log);
        }
    }

    /** The time to the next step: none, a few ms, about an interval, up to a window or two. */
    private static long elapsed(Rule rule, Random rnd) {
        long window = rule.windowMillis();
        return switch (rnd.nextInt(5)) {
            case 0 -> 0;
            case 1 -> 1 + rnd.nextInt(5);
            case 2 -> rnd.nextLong(Math.max(1, window / rule.limit()) + 1);
            case 3 -> rnd.nextLong(window + 1);
            default -> rnd.nextLong(2 * window + 1);
        };
    }

    /**
     * Probes A and B with costs from 1 to the capacity at times from {@code latest} on, the latest
     * time any request was made at: a caller whose clock lags behind it is judged as of the latest
     * time a state recorded (time never runs backwards), which a request that was given back may have
     * moved on in A and not in B; the bound is for callers at the same time. Returns how many probes.
     */
    private static int probe(Model a, Model b, Rule rule, long latest, Random rnd, StringBuilder log) {
        int probes = 0;
        long window = rule.windowMillis();
        long[] offsets = {0, 1, 2, rnd.nextLong(window / rule.limit() + 1), rnd.nextLong(window + 1), window - 1, window,
                rnd.nextLong(3 * window + 1)};
        for (long offset : offsets) {
            long t = latest + offset;
            for (int k = 0; k < 6; k++) {
                long cost = k == 0 ? 1 : k == 1 ? rule.capacity() : 1 + rnd.nextLong(rule.capacity());
                if (a.admits(rule, t, cost)) {
                    long at = t;
                    long c = cost;
                    String steps = log.toString();
                    assertThat(b.admits(rule, t, cost)).as(() -> steps + "  probe at t=" + at + " x" + c
                            + ": admitted after the give-back, denied had the request never happened").isTrue();
                }
                probes++;
            }
        }
        return probes;
    }

    /** Whether {@code after} admits, at {@code now}, a cost that {@code before} does not. */
    private static boolean better(Model after, Model before, Rule rule, long now) {
        for (long cost = 1; cost <= Math.min(rule.capacity(), 64); cost++) {
            if (after.admits(rule, now, cost) && !before.admits(rule, now, cost)) return true;
        }
        return after.admits(rule, now, rule.capacity()) && !before.admits(rule, now, rule.capacity());
    }
}
