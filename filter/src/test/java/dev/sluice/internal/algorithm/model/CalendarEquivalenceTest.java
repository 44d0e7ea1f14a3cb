package dev.sluice.internal.algorithm.model;

import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Calendar rules ({@code rule.<r>.calendar}) in the reference model, the local engine and the Redis
 * script: the same answers for sequences that crowd around the windows' boundaries (the last
 * millisecond of a month, hours and days across daylight-saving changes, half- and quarter-hour
 * zones), with lagging clocks; with figures that change (a reload or a plan switching zone, calendar
 * window, or to windows aligned to the epoch: the count lasts until its end, then the new windows
 * apply); and on Redis's clock, where the script picks, by {@code TIME}, among the boundaries the
 * engine sent. Harness and seeds as {@link EquivalenceTest}'s.
 */
class CalendarEquivalenceTest {

    static final int SEQUENCES = Math.max(1, EquivalenceTest.SEQUENCES / 5);

    @BeforeAll
    static void connect() {
        EquivalenceTest.connect();
    }

    @AfterAll
    static void disconnect() {
        EquivalenceTest.disconnect();
    }

    @Test
    void modelsLocalEngineAndRedisScriptAgreeAtTheCalendarsEdges() {
        EquivalenceTest.Coverage coverage = new EquivalenceTest.Coverage();
        for (int i = 0; i < SEQUENCES; i++) {
            Scenario scenario = Scenario.generateCalendar(TestSeed.get() + 5_000_011 + i, 3, 30, false);
            String mismatch = EquivalenceTest.replay(scenario, coverage);
            if (mismatch != null) throw new AssertionError(TestSeed.replay() + ": " + mismatch);
        }
        System.out.println("calendar equivalence: " + SEQUENCES + " sequences, " + coverage);
        int fixed = Algorithm.FIXED_WINDOW.ordinal();
        assertThat(coverage.admitted[fixed]).isGreaterThan(SEQUENCES);
        assertThat(coverage.denied[fixed]).isGreaterThan(SEQUENCES / 5);
        assertThat(coverage.lagging).isGreaterThan(SEQUENCES / 5);
        assertThat(coverage.givenBack[fixed]).isGreaterThan(SEQUENCES / 20);
    }

    @Test
    void theyAgreeWhenAReloadOrAPlanChangesTheZoneOrTheWindow() {
        EquivalenceTest.Coverage coverage = new EquivalenceTest.Coverage();
        for (int i = 0; i < SEQUENCES; i++) {
            Scenario scenario = Scenario.generateCalendar(TestSeed.get() + 6_000_013 + i, 3, 30, true);
            String mismatch = EquivalenceTest.replay(scenario, coverage);
            if (mismatch != null) throw new AssertionError(TestSeed.replay() + ": " + mismatch);
        }
        System.out.println("calendar equivalence with changing figures: " + SEQUENCES + " sequences, " + coverage);
        assertThat(coverage.changedFigures[Algorithm.FIXED_WINDOW.ordinal()]).isGreaterThan(SEQUENCES / 2);
    }

    @Test
    void theyAgreeOnTheRedisClock() throws InterruptedException {
        int sequences = Math.max(1, SEQUENCES / 3);
        EquivalenceTest.Coverage coverage = new EquivalenceTest.Coverage();
        RedisEngine redis = new RedisEngine(EquivalenceTest.jedis(), TestRedis.uniquePrefix("calendar-redis-clock"), true,
                Clock.SYSTEM, false);
        for (int i = 0; i < sequences; i++) {
            Scenario scenario = Scenario.generateCalendar(TestSeed.get() + 7_000_017 + i, 3, 20, false);
            String mismatch = EquivalenceTest.replayOnTheRedisClock(redis, scenario, coverage);
            if (mismatch != null) throw new AssertionError(TestSeed.replay() + ": " + mismatch);
        }
        System.out.println("calendar equivalence on the Redis clock: " + sequences + " sequences, " + coverage);
        assertThat(coverage.admitted[Algorithm.FIXED_WINDOW.ordinal()]).isGreaterThan(sequences);
        assertThat(coverage.denied[Algorithm.FIXED_WINDOW.ordinal()]).isGreaterThan(0);
    }
}
