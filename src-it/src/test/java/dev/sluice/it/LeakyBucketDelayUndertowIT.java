package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
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
        try (UndertowWebApp app = UndertowWebApp.start(ExampleApp.named("ut-leaky-undeploy").with(HeldRequests.SLOW_DRAIN).sluice(),
                8, probe)) {
            HeldRequests.undeployAnswersEveryHeldRequest(app, probe, 6);
        }
    }

    @Test
    void heldRequestsOccupyNoWorkerThread() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (UndertowWebApp app = UndertowWebApp.start(ExampleApp.named("ut-leaky-threads").with(HeldRequests.SLOW_DRAIN).sluice(),
                4, probe)) {
            HeldRequests.heldRequestsOccupyNoContainerThread(app, probe);
        }
    }

    @Test
    void withoutAsyncAHeldRequestParksItsThreadUntilUndeploy() throws Exception {
        try (UndertowWebApp app = UndertowWebApp.start(ExampleApp.named("ut-leaky-parked").with(HeldRequests.SLOW_DRAIN).sluice(),
                8, HoldProbe.synchronous())) {
            HeldRequests.parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(app);
        }
    }

    @Test
    void asyncTimeoutWhileHeldIsAnsweredBySluice() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (UndertowWebApp app = UndertowWebApp.start(ExampleApp.named("ut-leaky-timeout").with(HeldRequests.SLOW_DRAIN).sluice(),
                8, probe)) {
            HeldRequests.asyncTimeoutAnswersTheHeldRequest(app, probe);
        }
    }
}
