package dev.sluice.internal.approximate;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Give-backs in the approximate mode, searched at random (first written by a review of 0.3): two or three
 * instances take in a fixed-window and a sliding-window-counter rule, alone or both in one request, at costs of
 * 1 to 3, give back any of them at any later time (while a sync is in flight too), and sync; syncs fail before
 * Redis applies them, lose their reply after, or fail in part, before or after. After every instance has synced
 * twice: on one clock without failures, the fleet's count of each window is exactly what was admitted into it
 * less what was given back, and no instance holds anything unsynced; with failures, never less (a count sent
 * twice, a give-back lost, erring strict); with clocks that lag by up to 450 ms, the counter's two windows
 * together never hold less. With {@code clock=redis} and instance clocks 2 to 4 s ahead of Redis's or up to 4 s
 * behind (from a third review): what was admitted into Redis's own window at the time (the rest is by design
 * dropped or moved until an instance has learned Redis's time) is never more than the fleet's current fixed window,
 * nor than the counter's two windows together, and no instance holds anything unsynced.
 */
class ApproximateGiveBackPropertyTest {

    private static final long T0 = ManualClock.MINUTE_BOUNDARY;
    private static final ClientKey CLIENT = ClientKey.parse("ip=203.0.113.7");
    private static final long W = 1_000;
    private static final Rule FIXED = rule("fx", Algorithm.FIXED_WINDOW);
    private static final Rule COUNTER = rule("ct", Algorithm.SLIDING_WINDOW_COUNTER);

    private static Rule rule(String name, Algorithm algorithm) {
        return Rule.builder(name).algorithm(algorithm).limit(1_000_000).window(Duration.ofMillis(W))
                .sync(Duration.ofMillis(100)).build();
    }

    /** The instances' clocks. */
    private enum Clocks { ONE, LAGGING, REDIS_SKEWED }

    /** How the next exchange goes. */
    private enum Outcome { OK, FAILS, REPLY_LOST, PART_FAILS, PART_REPLY_LOST }

    private static final class Flaky implements CountExchange {
        final FleetCounts fleet;
        final ManualClock clock;
        Outcome next = Outcome.OK;

        Flaky(FleetCounts fleet, ManualClock clock) {
            this.fleet = fleet;
            this.clock = clock;
        }

        @Override
        public Reply exchange(List<Delta> deltas, long now) {
            switch (next) {
                case FAILS:
                    throw new LimiterUnavailableException("down", null, true);
                case REPLY_LOST:
                    fleet.exchange(deltas, now);
                    throw new LimiterUnavailableException("read timed out", null, true);
                case PART_FAILS:
                    return new Reply(new ArrayList<>(java.util.Collections.nCopies(deltas.size(), null)),
                            now < 0 ? clock.millis() : now);
                case PART_REPLY_LOST:
                    long at = fleet.exchange(deltas, now).atMillis();
                    return new Reply(new ArrayList<>(java.util.Collections.nCopies(deltas.size(), null)), at);
                default:
                    return fleet.exchange(deltas, now);
            }
        }
    }

    @ParameterizedTest(name = "failures {0}, clocks {1}")
    @CsvSource({"false,ONE", "true,ONE", "false,LAGGING", "true,LAGGING", "false,REDIS_SKEWED", "true,REDIS_SKEWED"})
    void theFleetNeverCountsLessThanWasAdmittedLessGivenBack(boolean failures, Clocks clocks) {
        long seed = TestSeed.get();
        for (int round = 0; round < 400; round++) run(new Random(seed * 31 + round), failures, clocks, round);
    }

    private static void run(Random random, boolean failures, Clocks mode, int round) {
        ManualClock clock = new ManualClock(T0 + random.nextInt(1000)); // Redis's
        FleetCounts fleet = new FleetCounts(clock);
        Flaky flaky = new Flaky(fleet, clock);
        int n = 2 + random.nextInt(2);
        List<ApproximateEngine> engines = new ArrayList<>();
        List<ManualClock> clocks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ManualClock own = i == 0 || mode == Clocks.ONE ? clock
                    : mode == Clocks.LAGGING ? new ManualClock(clock.millis() - random.nextInt(450))
                    : new ManualClock(clock.millis() + (random.nextBoolean() ? 2_000 + random.nextInt(2_001)
                            : -random.nextInt(4_001)));
            clocks.add(own);
            engines.add(new ApproximateEngine(own, mode == Clocks.REDIS_SKEWED, flaky, "t:", 100, false, () -> "test"));
        }
        Map<String, Map<Long, Long>> net = Map.of("fx", new HashMap<>(), "ct", new HashMap<>());
        List<ApproximateEngine.Result> open = new ArrayList<>();
        List<ApproximateEngine> openBy = new ArrayList<>();
        List<boolean[]> openCounted = new ArrayList<>();
        StringBuilder log = new StringBuilder();
        Runnable act = () -> {
            int e = random.nextInt(n);
            if (random.nextInt(10) < 5) {
                List<Acquisition> request = new ArrayList<>();
                int which = random.nextInt(3);
                long cost = 1 + random.nextInt(3);
                if (which != 1) request.add(new Acquisition(FIXED, CLIENT, cost));
                if (which != 0) request.add(new Acquisition(COUNTER, CLIENT, cost));
                ApproximateEngine.Result r = engines.get(e).reserve(request);
                if (r.takenAt == null) return;
                long redisWindow = Math.floorDiv(clock.millis(), W) * W;
                boolean[] counted = new boolean[request.size()];
                for (int i = 0; i < request.size(); i++) {
                    // with clock=redis, only what was admitted into Redis's window counts (and so its give-back)
                    counted[i] = r.taken(i) && (mode != Clocks.REDIS_SKEWED || r.windows[i] == redisWindow);
                    if (counted[i]) net.get(request.get(i).rule().name()).merge(r.windows[i], cost, Long::sum);
                }
                log.append(" take(e").append(e).append(',').append(which).append(',').append(cost).append(")@")
                        .append(clock.millis() - T0);
                open.add(r);
                openBy.add(engines.get(e));
                openCounted.add(counted);
            } else if (!open.isEmpty()) {
                int j = random.nextInt(open.size());
                ApproximateEngine.Result r = open.remove(j);
                ApproximateEngine by = openBy.remove(j);
                boolean[] counted = openCounted.remove(j);
                by.release(r);
                for (int i = 0; i < r.states.length; i++) {
                    if (counted[i]) {
                        net.get(r.acquisitions.get(i).rule().name()).merge(r.windows[i], -r.acquisitions.get(i).cost(),
                                Long::sum);
                    }
                }
                log.append(" giveBack(e").append(engines.indexOf(by)).append(")@").append(clock.millis() - T0);
            }
        };
        for (int step = 0; step < 60; step++) {
            int k = random.nextInt(10);
            if (k < 5) {
                act.run();
            } else if (k < 8) {
                int e = random.nextInt(n);
                flaky.next = failures && random.nextInt(3) == 0 ? Outcome.values()[1 + random.nextInt(4)] : Outcome.OK;
                int inFlight = random.nextInt(3);
                fleet.during(d -> {
                    for (int i = 0; i < inFlight; i++) act.run();
                });
                log.append(" sync(e").append(e).append(',').append(flaky.next).append(",in flight ").append(inFlight)
                        .append(')');
                engines.get(e).sync();
                fleet.during(d -> { });
                flaky.next = Outcome.OK;
            } else {
                long ms = random.nextInt(250);
                clock.advance(ms);
                for (ManualClock c : clocks) {
                    if (c != clock) c.advance(ms);
                }
                log.append(" +").append(ms);
            }
            if (step % 4 == 3) check(engines, fleet, clock, net, failures, mode, round + log.toString());
        }
    }

    private static void check(List<ApproximateEngine> engines, FleetCounts fleet, ManualClock clock,
                              Map<String, Map<Long, Long>> net, boolean failures, Clocks mode, String log) {
        for (int i = 0; i < 3; i++) {
            for (ApproximateEngine e : engines) assertThat(e.sync()).isTrue();
        }
        long x = Math.floorDiv(clock.millis(), W) * W;
        String what = TestSeed.replay() + ", round " + log;
        if (mode == Clocks.REDIS_SKEWED) {
            Map<Long, Long> fx = net.get("fx");
            Map<Long, Long> ct = net.get("ct");
            String fixedKey = "t:{fx:" + CLIENT.value() + "}";
            String counterKey = "t:{ct:" + CLIENT.value() + "}";
            assertThat(fleet.count(fixedKey, x, W)).as("fixed window, " + what)
                    .isGreaterThanOrEqualTo(fx.getOrDefault(x, 0L));
            assertThat(fleet.count(counterKey, x, W) + fleet.count(counterKey, x - W, W))
                    .as("the counter's two windows, " + what)
                    .isGreaterThanOrEqualTo(ct.getOrDefault(x, 0L) + ct.getOrDefault(x - W, 0L));
            for (ApproximateEngine e : engines) {
                long own = Math.floorDiv(e.now(), W) * W;
                for (Rule rule : List.of(FIXED, COUNTER)) {
                    ApproximateEngine.KeyCounts c = e.stateOf(rule, CLIENT);
                    if (c == null) continue;
                    c.lock();
                    try {
                        assertThat(c.unsynced(x) + c.unsynced(own) + c.unsynced(own - W))
                                .as("unsynced " + rule.name() + ", " + what).isZero();
                    } finally {
                        c.unlock();
                    }
                }
            }
            return;
        }
        if (mode == Clocks.LAGGING) {
            String key = "t:{ct:" + CLIENT.value() + "}";
            Map<Long, Long> ct = net.get("ct");
            assertThat(fleet.count(key, x, W) + fleet.count(key, x - W, W)).as("the counter's two windows, " + what)
                    .isGreaterThanOrEqualTo(ct.getOrDefault(x, 0L) + ct.getOrDefault(x - W, 0L));
            return;
        }
        for (Rule rule : List.of(FIXED, COUNTER)) {
            String key = "t:{" + rule.name() + ":" + CLIENT.value() + "}";
            for (long window : rule == COUNTER ? List.of(x, x - W) : List.of(x)) {
                long want = net.get(rule.name()).getOrDefault(window, 0L);
                long got = fleet.count(key, window, W);
                String which = rule.name() + " window " + (window - T0) + ", " + what;
                if (failures) {
                    assertThat(got).as(which).isGreaterThanOrEqualTo(want);
                } else {
                    assertThat(got).as(which).isEqualTo(want);
                }
            }
            for (ApproximateEngine e : engines) {
                ApproximateEngine.KeyCounts c = e.stateOf(rule, CLIENT);
                if (c == null) continue;
                c.lock();
                try {
                    assertThat(c.unsynced(x)).as("unsynced " + rule.name() + ", " + what).isZero();
                } finally {
                    c.unlock();
                }
            }
        }
    }
}
