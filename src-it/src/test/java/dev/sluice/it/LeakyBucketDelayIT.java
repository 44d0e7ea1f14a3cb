package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.junit.jupiter.api.Test;

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
        try (WebApp app = WebApp.start(environment(), ExampleApp.named("leaky-undeploy").with(HeldRequests.SLOW_DRAIN).sluice(),
                new QueuedThreadPool(), probe)) {
            HeldRequests.undeployAnswersEveryHeldRequest(app, probe, 6);
        }
    }

    @Test
    void heldRequestsOccupyNoServerThread() throws Exception {
        HoldProbe probe = new HoldProbe();
        // 8 threads in all: one acceptor and one selector leased, the rest for requests
        try (WebApp app = WebApp.start(environment(), ExampleApp.named("leaky-threads").with(HeldRequests.SLOW_DRAIN).sluice(),
                new QueuedThreadPool(8, 8), probe)) {
            HeldRequests.heldRequestsOccupyNoContainerThread(app, probe);
        }
    }

    @Test
    void withoutAsyncAHeldRequestParksItsThreadUntilUndeploy() throws Exception {
        try (WebApp app = WebApp.start(environment(), ExampleApp.named("leaky-parked").with(HeldRequests.SLOW_DRAIN).sluice(),
                new QueuedThreadPool(), HoldProbe.synchronous())) {
            HeldRequests.parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(app);
        }
    }

    @Test
    void asyncTimeoutWhileHeldIsAnsweredBySluice() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (WebApp app = WebApp.start(environment(), ExampleApp.named("leaky-timeout").with(HeldRequests.SLOW_DRAIN).sluice(),
                new QueuedThreadPool(), probe)) {
            HeldRequests.asyncTimeoutAnswersTheHeldRequest(app, probe);
        }
    }

}
