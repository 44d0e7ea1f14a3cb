package dev.sluice.it;

import org.junit.jupiter.api.Test;

/**
 * A {@code leaky-bucket} rule's held requests on Undertow, WildFly's servlet container: each is
 * answered on undeploy and on the async timeout, and none holds a worker thread while it waits
 * ({@link HeldRequests}).
 */
class LeakyBucketDelayUndertowIT {

    @Test
    void undeployAnswersEveryHeldRequestAtOnce() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-leaky-undeploy", HeldRequests.SLOW_DRAIN),
                8, probe)) {
            HeldRequests.undeployAnswersEveryHeldRequest(app, probe, 6);
        }
    }

    @Test
    void heldRequestsOccupyNoWorkerThread() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-leaky-threads", HeldRequests.SLOW_DRAIN),
                4, probe)) {
            HeldRequests.heldRequestsOccupyNoContainerThread(app, probe);
        }
    }

    @Test
    void withoutAsyncAHeldRequestParksItsThreadUntilUndeploy() throws Exception {
        try (UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-leaky-parked", HeldRequests.SLOW_DRAIN),
                8, HoldProbe.synchronous())) {
            HeldRequests.parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(app);
        }
    }

    @Test
    void asyncTimeoutWhileHeldIsAnsweredBySluice() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-leaky-timeout", HeldRequests.SLOW_DRAIN),
                8, probe)) {
            HeldRequests.asyncTimeoutAnswersTheHeldRequest(app, probe);
        }
    }
}
