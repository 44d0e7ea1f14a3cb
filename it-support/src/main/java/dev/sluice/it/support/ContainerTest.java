package dev.sluice.it.support;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;

/**
 * A behaviour test written once and run on every container. How to add one:
 *
 * <pre>{@code
 * public interface OneFleetContract extends ContainerTest {
 *
 *     @Test
 *     default void aLimitOfOneIsOneForTheWholeFleet() throws Exception {
 *         try (Deployment fleet = container().deploy(ExampleApp.named("one")
 *                 .with("rule.api.limit", "1", "rule.api.window", "1h"), 3)) {
 *             assertThat(fleet.send(0, "GET", "/api/x?q=1", null, "Accept", "text/plain").statusCode()).isEqualTo(200);
 *             assertThat(fleet.get(1, "/api/x").statusCode()).isEqualTo(429);
 *             assertThat(fleet.redisKeys()).as("the rule's counter").isPositive();
 *             assertThat(fleet.log(2)).contains("sluice] started: ");
 *             assertThat(fleet.mxbeanTotal("Denied")).isEqualTo(1);
 *         }
 *     }
 * }
 * }</pre>
 *
 * then add {@code OneFleetContract} to the {@code extends} list of {@link EveryContainer}: every
 * container's IT class implements that (src-it: {@code ContractsIT} on Jetty ee10,
 * {@code ContractsEe11IT}, {@code ContractsTomcatIT}, {@code ContractsUndertowIT}; dist-it:
 * {@code Tomcat10DistIT}, {@code Tomcat11DistIT}, {@code JettyEe10DistIT}, {@code JettyEe11DistIT},
 * {@code WildFlyDistIT}), so the test runs on all nine. A test that holds on some containers only
 * goes into that container's own IT class instead, with a comment saying why.
 *
 * <p>What a test has: {@link Container#deploy} starts a fleet of N instances of the container
 * running {@link ExampleApp} (its Sluice keys, the settings its placeholders read), sharing the one
 * test Redis under a key prefix of its own; the {@link Deployment} sends any request to instance
 * {@code i}, counts the Redis keys under its prefix, reads the container's log and Sluice's MXBeans.
 * Close it (try-with-resources): the WAR is undeployed. A deployment in dist-it takes seconds (real
 * servers, real deployment scanners): deploy once per test, not once per assertion.
 *
 * <p>One instance of the test class runs all its tests ({@link TestInstance.Lifecycle#PER_CLASS}),
 * so that dist-it's servers, started once, serve them all; they stop after the last.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public interface ContainerTest {

    /** The container the tests run on: each IT class returns the one it made. */
    Container container();

    @AfterAll
    default void stopContainer() throws Exception {
        container().close();
    }
}
