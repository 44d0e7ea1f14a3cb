package dev.sluice.it;

import dev.sluice.it.support.Crowd;
import dev.sluice.it.support.Crowd.Outcome;
import dev.sluice.it.support.Deployment;
import dev.sluice.it.support.ExampleApp;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What each algorithm allows fleet-wide: three instances of the example WAR on embedded Jetty 12.1
 * (ee10) sharing one Redis, hammered round-robin by 64 concurrent clients, all from 127.0.0.1 and
 * so competing for one key. What a fleet allows depends on the algorithm, not on the container:
 * {@link dev.sluice.it.support.FleetContract} checks the fleet-wide limit on every container.
 */
class FleetIT {

    static final int INSTANCES = 3;
    static final int CLIENTS = 64;
    static final int REQUESTS_PER_CLIENT = 8;
    static final int LIMIT = 60;

    private final Embedded jetty = new Embedded("Jetty 12.1 ee10 (embedded)", params -> WebApp.start(new JettyEe10(), params));

    /** Three instances with the api rule set by {@code ruleParams}, hammered by the crowd, then stopped. */
    Outcome hammer(String testName, String... ruleParams) throws Exception {
        try (Deployment fleet = jetty.deploy(ExampleApp.named(testName).with(ruleParams), INSTANCES)) {
            Outcome outcome = Crowd.hammer(fleet.uris("/api/fleet"), CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("FLEET %s %s: %s%n", getClass().getSimpleName(), testName, outcome);
            return outcome;
        }
    }

    @Test
    void fixedWindowFleetAllowsExactlyTheLimit() throws Exception {
        // a window of a day: the test cannot straddle two windows unless it runs across midnight UTC
        long dayBefore = Crowd.today();
        Outcome o = hammer("fleet-fw", "rule.api.algorithm", "fixed-window",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1d");
        assertThat(o.other()).as("no other status than 200 and 429").isZero();
        assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);
        o.assertOneDailyWindowAllowed(dayBefore, LIMIT);
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
