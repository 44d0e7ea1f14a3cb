package dev.sluice.it;

import dev.sluice.it.Crowd.Outcome;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link FleetContract} on embedded Jetty 12.1 (ee10), and the other algorithms' fleet-wide
 * figures: what a fleet allows depends on the algorithm, not on the container.
 */
class FleetIT extends FleetContract {

    @Override
    DeployedWar start(Map<String, String> params) throws Exception {
        return WebApp.start(params);
    }

    @Test
    void slidingWindowLogFleetAllowsExactlyTheLimit() throws Exception {
        Outcome o = hammer("fleet-swl", "rule.api.algorithm", "sliding-window-log",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1h");
        assertThat(o.other()).isZero();
        assertThat(o.allowed()).isEqualTo(LIMIT);
    }

    @Test
    void slidingWindowCounterFleetAllowsTheLimitWithinItsErrorBound() throws Exception {
        // in the first window of a key the previous window weighs nothing: the counter is exact;
        // across a boundary it may admit up to the limit again, weighted by the overlap
        long dayBefore = Crowd.today();
        Outcome o = hammer("fleet-swc", "rule.api.algorithm", "sliding-window-counter",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1d");
        assertThat(o.other()).isZero();
        o.assertOneDailyWindowAllowed(dayBefore, LIMIT);
    }

    @Test
    void tokenBucketFleetAllowsTheLimitPlusWhatRefilled() throws Exception {
        Outcome o = hammer("fleet-tb", "rule.api.algorithm", "token-bucket",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1h");
        assertThat(o.other()).isZero();
        assertThat(o.allowed()).isBetween(LIMIT, LIMIT + refilled(o, LIMIT, 3_600_000));
    }

    @Test
    void gcraFleetAllowsTheBurstPlusWhatRefilled() throws Exception {
        Outcome o = hammer("fleet-gcra", "rule.api.algorithm", "gcra",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1h");
        assertThat(o.other()).isZero();
        assertThat(o.allowed()).isBetween(LIMIT, LIMIT + refilled(o, LIMIT, 3_600_000));
    }

    @Test
    void leakyBucketFleetAdmitsOnePerDrainSlotPlusTheQueue() throws Exception {
        // 600 a minute: one slot every 100 ms; up to 5 requests may wait (at most 500 ms) for their slot
        Outcome o = hammer("fleet-leaky", "rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "600", "rule.api.window", "1m", "rule.api.burst", "5", "rule.api.max-delay", "500ms");
        assertThat(o.other()).isZero();
        long slots = o.elapsedMs() / 100;
        assertThat(o.allowed()).as("the queue fills at once").isGreaterThanOrEqualTo(5);
        assertThat(o.allowed()).as("never more than the queue plus one per elapsed slot").isLessThanOrEqualTo((int) (5 + slots + 1));
    }

    /** Whole tokens that can have refilled during the run, at {@code limit} per {@code windowMs}. */
    static int refilled(Outcome o, int limit, long windowMs) {
        return (int) Math.ceil(o.elapsedMs() * (double) limit / windowMs);
    }
}
