package dev.sluice.it;

import dev.sluice.it.Crowd.Outcome;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The point of Sluice: three instances sharing one Redis allow, together, what one instance would.
 * 64 concurrent clients hammer the three instances round-robin; every request comes from the
 * same client (127.0.0.1), so all of them compete for one key.
 */
class FleetIT {

    static final int INSTANCES = 3;
    static final int CLIENTS = 64;
    static final int REQUESTS_PER_CLIENT = 8;
    static final int LIMIT = 60;

    static Outcome hammer(String testName, String... ruleParams) throws Exception {
        Map<String, String> params = WebApp.params(testName, ruleParams);
        List<WebApp> fleet = new ArrayList<>();
        try {
            for (int i = 0; i < INSTANCES; i++) {
                fleet.add(WebApp.start(params));
            }
            List<URI> targets = fleet.stream().map(app -> app.uri("/api/fleet")).toList();
            Outcome outcome = Crowd.hammer(targets, CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("FLEET %s: %s%n", testName, outcome);
            return outcome;
        } finally {
            for (WebApp app : fleet) {
                app.close();
            }
        }
    }

    @Test
    void fixedWindowFleetAllowsExactlyTheLimit() throws Exception {
        // a window of a day: the test cannot straddle two windows unless it runs across midnight UTC
        long dayBefore = Crowd.today();
        Outcome o = hammer("fleet-fw", "rule.api.algorithm", "fixed-window",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1d");
        assertThat(o.other()).as("no other status than 200 and 429").isZero();
        o.assertOneDailyWindowAllowed(dayBefore, LIMIT);
        assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);
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
