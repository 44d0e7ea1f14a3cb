package dev.sluice.it;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code leaky-bucket} rule with {@code max-delay} shapes a burst: the requests that fit the
 * queue are all admitted, but the application sees them one drain slot apart (held with the
 * Servlet async API, not a sleeping thread); the rest are refused at once.
 */
class LeakyBucketDelayIT {

    @Test
    void burstIsReleasedOneSlotApart() throws Exception {
        // 10 a second: one slot every 100 ms; up to 6 requests may wait at most 600 ms
        try (WebApp app = WebApp.start(WebApp.params("leaky-delay", "rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "10", "rule.api.window", "1s", "rule.api.burst", "6", "rule.api.max-delay", "600ms"))) {
            Crowd.Burst burst = Crowd.burst(app.uri("/api/shaped"), 12);
            List<Long> admittedAt = burst.admittedAtMs();
            int refused = burst.refused();
            System.out.printf("LEAKY: admitted %d at %s ms, refused %d%n", admittedAt.size(), admittedAt, refused);
            assertThat(admittedAt.size()).as("the queue's worth is admitted").isBetween(6, 8);
            assertThat(refused).isEqualTo(12 - admittedAt.size());
            // the first request passes at once (its response time is the noisiest: cold connections);
            // every later one waits for its own slot, 100 ms after the previous one
            int n = admittedAt.size();
            long spread = admittedAt.get(n - 1) - admittedAt.get(1);
            assertThat(spread).as("admitted requests after the first are released one drain slot apart")
                    .isGreaterThanOrEqualTo((n - 2) * 100L - 100);
        }
    }
}
