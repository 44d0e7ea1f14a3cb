package dev.sluice.it;

import dev.sluice.it.Crowd.Outcome;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three Apache Tomcat 11 instances in one JVM, each running the example WAR, sharing one Redis
 * allow together exactly what one would: 64 concurrent clients hammer them round-robin, all as
 * the same client (127.0.0.1), so every request competes for one key.
 */
class FleetTomcatIT {

    static final int INSTANCES = 3;
    static final int CLIENTS = 64;
    static final int REQUESTS_PER_CLIENT = 8;
    static final int LIMIT = 60;

    @Test
    void fixedWindowFleetAllowsExactlyTheLimit() throws Exception {
        // a window of a day: the test cannot straddle two windows unless it runs across midnight UTC
        long dayBefore = Crowd.today();
        Map<String, String> params = ExampleWar.params("tc-fleet-fw", "rule.api.algorithm", "fixed-window",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1d");
        List<TomcatWebApp> fleet = new ArrayList<>();
        Outcome o;
        try {
            for (int i = 0; i < INSTANCES; i++) {
                fleet.add(TomcatWebApp.start(params));
            }
            List<URI> targets = fleet.stream().map(app -> app.uri("/api/fleet")).toList();
            o = Crowd.hammer(targets, CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("FLEET tomcat fixed-window: %s%n", o);
        } finally {
            for (TomcatWebApp app : fleet) {
                app.close();
            }
        }
        assertThat(o.other()).as("no other status than 200 and 429").isZero();
        assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);
        o.assertOneDailyWindowAllowed(dayBefore, LIMIT);
    }
}
