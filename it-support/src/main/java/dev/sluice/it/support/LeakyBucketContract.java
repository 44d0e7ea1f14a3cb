package dev.sluice.it.support;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code leaky-bucket} rule with {@code max-delay} shapes a burst, on every container: the
 * requests that fit the queue are all admitted, one drain slot apart (held with the Servlet async
 * API), the rest refused at once. Measured by the client; src-it's Tomcat test measures inside the
 * container too, and what becomes of held requests is src-it's {@code HeldRequests}.
 */
public interface LeakyBucketContract extends ContainerTest {

    @Test
    default void aBurstIsReleasedOneDrainSlotApart() throws Exception {
        // 10 a second: one slot every 100 ms; up to 6 requests may wait at most 600 ms
        try (Deployment app = container().deploy(ExampleApp.named("leaky").with("rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "10", "rule.api.window", "1s", "rule.api.burst", "6", "rule.api.max-delay", "600ms"), 1)) {
            Crowd.burst(app.uri(0, "/health"), 12); // warm connections and servlet: the burst measures Sluice
            Crowd.Burst b = Crowd.burst(app.uri(0, "/api/shaped"), 12);
            System.out.printf("LEAKY %s: admitted %d at %s ms, refused %d%n", container().name(), b.admittedAtMs().size(),
                    b.admittedAtMs(), b.refused());
            List<Long> at = b.admittedAtMs();
            // requests that arrive later find more slots drained: one more per 100 ms the burst took
            int drained = (int) (b.lastAnswerMs() / 100) + 1;
            assertThat(at.size()).as("the queue's worth is admitted, plus what drained meanwhile").isBetween(6, 6 + drained);
            assertThat(b.refused()).isEqualTo(12 - at.size());
            // the first passes at once (its response time is the noisiest); every later one waits for its
            // own slot. Unshaped, they would all answer within a few ms of each other; a loaded machine may
            // delay single responses, so half the ideal spread is required
            long spread = at.get(at.size() - 1) - at.get(1);
            assertThat(spread).as("admitted requests after the first are released one drain slot apart")
                    .isGreaterThanOrEqualTo((at.size() - 2) * 100L / 2);
        }
    }
}
