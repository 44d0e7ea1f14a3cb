package dev.sluice.it.support;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The point of Sluice, on every container: three instances of the example WAR sharing one Redis
 * allow together what one instance would. Concurrent clients hammer the instances round-robin;
 * every request comes from the same client (127.0.0.1), so all of them compete for one key.
 */
public interface FleetContract extends ContainerTest {

    int INSTANCES = 3;
    int CLIENTS = 48;
    int REQUESTS_PER_CLIENT = 6;
    int LIMIT = 60;

    @Test
    default void threeInstancesSharingOneRedisAllowExactlyTheLimit() throws Exception {
        // a sliding-window-log is exact, with no window boundary to straddle
        ExampleApp fleet = ExampleApp.named("fleet").with("rule.api.algorithm", "sliding-window-log",
                "rule.api.limit", Integer.toString(LIMIT), "rule.api.window", "1h");
        try (Deployment app = container().deploy(fleet, INSTANCES)) {
            Crowd.Outcome o = Crowd.hammer(app.uris("/api/fleet"), CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("FLEET %s: %s%n", container().name(), o);
            assertThat(o.other()).as("no other status than 200 and 429").isZero();
            assertThat(o.allowed()).as("the instances together allow exactly the limit").isEqualTo(LIMIT);
            assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);

            // the MXBeans of each instance, read over JMX as an operator would, account for the same requests
            assertThat(app.mxbean("BreakerState")).hasSize(INSTANCES).containsOnly("CLOSED");
            assertThat(app.mxbeanTotal("FallbackDecisions")).isZero();
            assertThat(app.mxbeanTotal("Allowed")).as("Allowed over JMX, every instance").isEqualTo(o.allowed());
            assertThat(app.mxbeanTotal("Denied")).as("Denied over JMX, every instance").isEqualTo(o.denied());
            assertThat(app.redisKeys()).as("the shared counter, under the deployment's own prefix").isPositive();
            for (int i = 0; i < INSTANCES; i++) {
                assertThat(app.log(i)).as("what instance %d's container logged since the deployment", i)
                        .containsPattern("Sluice \\[([^\\]/]+/)?sluice\\] started: ");
            }
        }
    }
}
