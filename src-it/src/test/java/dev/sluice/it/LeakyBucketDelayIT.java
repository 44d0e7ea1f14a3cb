package dev.sluice.it;

import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code leaky-bucket} rule with {@code max-delay} shapes a burst: the requests that fit the
 * queue are all admitted, but the application sees them one drain slot apart (held with the
 * Servlet async API, not a sleeping thread); the rest are refused at once. Every held request is
 * answered, on undeploy and on the container's async timeout too ({@link HeldRequests}). On Jetty:
 * in the ee10 environment here, in ee11 in {@link LeakyBucketDelayEe11IT}.
 */
class LeakyBucketDelayIT {

    /** The Jetty environment the WAR runs in. */
    WebApp.Environment environment() {
        return new JettyEe10();
    }

    @Test
    void undeployAnswersEveryHeldRequestAtOnce() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (WebApp app = WebApp.start(environment(), WebApp.params("leaky-undeploy", HeldRequests.SLOW_DRAIN),
                new QueuedThreadPool(), probe)) {
            HeldRequests.undeployAnswersEveryHeldRequest(app, probe, 6);
        }
    }

    @Test
    void heldRequestsOccupyNoServerThread() throws Exception {
        HoldProbe probe = new HoldProbe();
        // 8 threads in all: one acceptor and one selector leased, the rest for requests
        try (WebApp app = WebApp.start(environment(), WebApp.params("leaky-threads", HeldRequests.SLOW_DRAIN),
                new QueuedThreadPool(8, 8), probe)) {
            HeldRequests.heldRequestsOccupyNoContainerThread(app, probe);
        }
    }

    @Test
    void withoutAsyncAHeldRequestParksItsThreadUntilUndeploy() throws Exception {
        try (WebApp app = WebApp.start(environment(), WebApp.params("leaky-parked", HeldRequests.SLOW_DRAIN),
                new QueuedThreadPool(), HoldProbe.synchronous())) {
            HeldRequests.parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(app);
        }
    }

    @Test
    void asyncTimeoutWhileHeldIsAnsweredBySluice() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (WebApp app = WebApp.start(environment(), WebApp.params("leaky-timeout", HeldRequests.SLOW_DRAIN),
                new QueuedThreadPool(), probe)) {
            HeldRequests.asyncTimeoutAnswersTheHeldRequest(app, probe);
        }
    }

    @Test
    void burstIsReleasedOneSlotApart() throws Exception {
        // 10 a second: one slot every 100 ms; up to 6 requests may wait at most 600 ms
        try (WebApp app = WebApp.start(environment(), WebApp.params("leaky-delay", "rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "10", "rule.api.window", "1s", "rule.api.burst", "6", "rule.api.max-delay", "600ms"))) {
            ExecutorService pool = Executors.newFixedThreadPool(12);
            CountDownLatch go = new CountDownLatch(1);
            List<CompletableFuture<long[]>> calls = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < 12; i++) {
                calls.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    long sentAt = (System.nanoTime() - start) / 1_000_000;
                    HttpResponse<String> r = Http.get(app.uri("/api/shaped"));
                    return new long[]{r.statusCode(), (System.nanoTime() - start) / 1_000_000, sentAt};
                }, pool));
            }
            go.countDown();
            List<Long> admittedAt = new ArrayList<>();
            int refused = 0;
            long firstSentAt = Long.MAX_VALUE;
            long lastRefusedAt = 0;
            for (CompletableFuture<long[]> call : calls) {
                long[] result = call.get();
                firstSentAt = Math.min(firstSentAt, result[2]);
                if (result[0] == 200) {
                    admittedAt.add(result[1]);
                } else if (result[0] == 429) {
                    refused++;
                    lastRefusedAt = Math.max(lastRefusedAt, result[1]);
                } else {
                    throw new AssertionError("unexpected status " + result[0]);
                }
            }
            Collections.sort(admittedAt);
            System.out.printf("LEAKY: admitted %d at %s ms, refused %d%n", admittedAt.size(), admittedAt, refused);
            // requests that arrive later find more slots drained: one more per 100 ms the burst took to arrive
            long lastResponse = Math.max(admittedAt.get(admittedAt.size() - 1), lastRefusedAt);
            int drained = (int) ((lastResponse - firstSentAt) / 100) + 1;
            assertThat(admittedAt.size()).as("the queue's worth is admitted, plus what drained meanwhile")
                    .isBetween(6, 6 + drained);
            assertThat(refused).isEqualTo(12 - admittedAt.size());
            // the first request passes at once (its response time is the noisiest: cold connections);
            // every later one waits for its own slot, 100 ms after the previous one
            int n = admittedAt.size();
            long spread = admittedAt.get(n - 1) - admittedAt.get(1);
            // unshaped, they would all answer within a few ms of each other; a loaded machine may delay
            // single responses, so half the ideal spread is required
            assertThat(spread).as("admitted requests after the first are released one drain slot apart")
                    .isGreaterThanOrEqualTo((n - 2) * 100L / 2);
            pool.shutdownNow();
        }
    }
}
