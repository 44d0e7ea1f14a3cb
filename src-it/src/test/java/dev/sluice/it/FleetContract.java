package dev.sluice.it;

import dev.sluice.it.Crowd.Outcome;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The point of Sluice, on each container: three instances of the example WAR in one JVM, sharing
 * one Redis, allow together what one instance would. 64 concurrent clients hammer the three
 * instances round-robin; every request comes from the same client (127.0.0.1), so all of them
 * compete for one key.
 */
abstract class FleetContract {

    static final int INSTANCES = 3;
    static final int CLIENTS = 64;
    static final int REQUESTS_PER_CLIENT = 8;
    static final int LIMIT = 60;

    /** Starts one instance of the example WAR with these init-params. */
    abstract DeployedWar start(Map<String, String> params) throws Exception;

    /** Three instances with the api rule set by {@code ruleParams}, hammered by the crowd, then stopped. */
    Outcome hammer(String testName, String... ruleParams) throws Exception {
        Map<String, String> params = ExampleWar.params(testName, ruleParams);
        List<DeployedWar> fleet = new ArrayList<>();
        try {
            for (int i = 0; i < INSTANCES; i++) {
                fleet.add(start(params));
            }
            List<URI> targets = fleet.stream().map(app -> app.uri("/api/fleet")).toList();
            Outcome outcome = Crowd.hammer(targets, CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("FLEET %s %s: %s%n", getClass().getSimpleName(), testName, outcome);
            return outcome;
        } finally {
            for (DeployedWar app : fleet) {
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
        assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);
        o.assertOneDailyWindowAllowed(dayBefore, LIMIT);
    }
}
