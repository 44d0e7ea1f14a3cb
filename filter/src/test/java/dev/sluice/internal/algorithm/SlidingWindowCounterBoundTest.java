package dev.sluice.internal.algorithm;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The error bound of {@code sliding-window-counter}, as documented on
 * {@link SlidingWindowCounter}: never more than {@code limit} per aligned window, and in any
 * interval of one window's length ending {@code e} ms into an aligned window, at most
 * {@code limit + previous * e / window} (so always fewer than {@code 2 * limit}), reached only
 * when the previous window's requests bunch at its end. Run on the local engine, which the
 * equivalence suite shows to give the Redis script's answers.
 */
class SlidingWindowCounterBoundTest {

    private static final long LIMIT = 100;
    private static final long WINDOW = 10_000;
    private final Rule rule = Rule.of("swc", Algorithm.SLIDING_WINDOW_COUNTER, LIMIT, Duration.ofMillis(WINDOW));
    private final ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
    private final LocalEngine engine = new LocalEngine(clock, 100);

    private boolean ask() {
        return engine.decide(List.of(new Acquisition(rule, ClientKey.parse("c")))).allowed();
    }

    @Test
    void randomTrafficStaysWithinTheBound() {
        Random rnd = new Random(TestSeed.get());
        List<Long> admitted = new ArrayList<>();
        long worst = 0;
        for (int i = 0; i < 200_000; i++) {
            // bursts and lulls: mostly short gaps, sometimes a pause of up to a window
            clock.advance(rnd.nextInt(10) == 0 ? rnd.nextInt((int) WINDOW) : rnd.nextInt(60));
            if (ask()) admitted.add(clock.millis());
        }
        Map<Long, Long> perWindow = new HashMap<>();
        for (long t : admitted) perWindow.merge(Math.floorDiv(t, WINDOW) * WINDOW, 1L, Long::sum);
        int from = 0;
        int alignedFrom = 0;
        for (int i = 0; i < admitted.size(); i++) {
            long t = admitted.get(i);
            long start = Math.floorDiv(t, WINDOW) * WINDOW;
            while (admitted.get(from) <= t - WINDOW) from++;
            while (admitted.get(alignedFrom) < start) alignedFrom++;
            long sliding = i - from + 1;
            long aligned = i - alignedFrom + 1;
            long previous = perWindow.getOrDefault(start - WINDOW, 0L);
            assertThat(aligned).as("aligned window at %d, %s", t, TestSeed.replay()).isLessThanOrEqualTo(LIMIT);
            assertThat(sliding * WINDOW).as("sliding window ending at %d, %s", t, TestSeed.replay())
                    .isLessThanOrEqualTo(LIMIT * WINDOW + previous * (t - start));
            worst = Math.max(worst, sliding);
        }
        assertThat(admitted.size()).isGreaterThan(10_000);
        System.out.println("sliding-window-counter, random traffic: at most " + worst + " in a sliding window for a limit of " + LIMIT);
    }

    @Test
    void theBoundIsReachedOnlyWhenThePreviousWindowBunchesAtItsEnd() {
        long start = Math.floorDiv(clock.millis(), WINDOW) * WINDOW + WINDOW;
        clock.set(start + WINDOW - 1);
        int burst = 0;
        while (ask()) burst++;
        clock.set(start + 2 * WINDOW - 100); // 99% into the next window: the burst still weighs 1%
        int second = 0;
        while (ask()) second++;
        assertThat(burst).isEqualTo(LIMIT);
        // every one of these 199 lies within the single window-length interval (start + W - 100, start + 2W - 100]
        assertThat(burst + second).isEqualTo(2 * LIMIT - 1);
    }
}
