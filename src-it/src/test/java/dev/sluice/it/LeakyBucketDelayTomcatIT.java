package dev.sluice.it;

import dev.sluice.it.support.Crowd;
import dev.sluice.it.support.ExampleApp;
import dev.sluice.testing.Poll;
import jakarta.servlet.ServletException;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@code leaky-bucket} rule with {@code max-delay} on Tomcat 11: a burst's admitted requests
 * reach the application one drain slot apart, held with the Servlet async API (Tomcat's container
 * thread is handed back while a request waits), and the rest are refused at once.
 *
 * <p>Arrival and release times are taken inside Tomcat, by a valve in front of the application,
 * so that a busy machine's client-side scheduling cannot blur them: a request is released when
 * the application gets it (its first dispatch if it passed at once, its async re-dispatch if held).
 * Every held request is answered, on undeploy and on the container's async timeout too
 * ({@link HeldRequests}).
 */
class LeakyBucketDelayTomcatIT {

    @Test
    void undeployAnswersEveryHeldRequestAtOnce() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-leaky-undeploy").with(HeldRequests.SLOW_DRAIN).sluice(),
                0, probe)) {
            HeldRequests.undeployAnswersEveryHeldRequest(app, probe, 6);
            assertThat(app.leakWarnings()).as("Sluice leaves no thread running after an undeploy")
                    .noneMatch(w -> w.contains("sluice"));
        }
    }

    @Test
    void heldRequestsOccupyNoConnectorThread() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-leaky-threads").with(HeldRequests.SLOW_DRAIN).sluice(),
                4, probe)) {
            HeldRequests.heldRequestsOccupyNoContainerThread(app, probe);
        }
    }

    @Test
    void withoutAsyncAHeldRequestParksItsThreadUntilUndeploy() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-leaky-parked").with(HeldRequests.SLOW_DRAIN).sluice(),
                0, HoldProbe.synchronous())) {
            HeldRequests.parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(app);
        }
    }

    @Test
    void asyncTimeoutWhileHeldIsAnsweredBySluice() throws Exception {
        HoldProbe probe = new HoldProbe();
        try (TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-leaky-timeout").with(HeldRequests.SLOW_DRAIN).sluice(),
                0, probe)) {
            HeldRequests.asyncTimeoutAnswersTheHeldRequest(app, probe);
        }
    }

    static final long SLOT_MS = 100;
    static final int BURST = 6;
    static final int REQUESTS = 12;
    static final long MAX_DELAY_MS = 600;

    @Test
    void burstIsReleasedOneSlotApartWithoutHoldingContainerThreads() throws Exception {
        // 10 a second: one slot every 100 ms; up to 6 requests may be in the bucket, none waits more than 600 ms
        try (TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-leaky-delay").with("rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "10", "rule.api.window", "1s", "rule.api.burst", Integer.toString(BURST),
                "rule.api.max-delay", MAX_DELAY_MS + "ms").sluice())) {
            Crowd.burst(app.uri("/health"), REQUESTS); // open the client's connections: the burst then arrives together
            Releases releases = new Releases();
            app.context().getPipeline().addValve(releases);

            Crowd.Burst burst = Crowd.burst(app.uri("/api/shaped"), REQUESTS);
            // a response can reach the client just before the valve has recorded it
            Poll.until(Duration.ofSeconds(5), "the valve to see every request end", () -> releases.seen.size() >= REQUESTS);

            List<Releases.Seen> seen = releases.seen;
            List<Releases.Seen> admitted = seen.stream().filter(s -> s.status == 200).toList();
            long firstArrival = seen.stream().mapToLong(Releases.Seen::arrivedNanos).min().orElseThrow();
            long arrivalSpreadMs = (seen.stream().mapToLong(Releases.Seen::arrivedNanos).max().orElseThrow()
                    - firstArrival) / 1_000_000;
            List<Long> releasedAtMs = admitted.stream().map(s -> (s.releasedNanos - firstArrival) / 1_000_000).sorted().toList();
            long suspended = admitted.stream().filter(Releases.Seen::suspended).count();
            List<String> timeline = admitted.stream().sorted(Comparator.comparingLong(Releases.Seen::releasedNanos))
                    .map(s -> (s.arrivedNanos - firstArrival) / 1_000_000 + "->" + (s.releasedNanos - firstArrival) / 1_000_000
                            + (s.suspended ? " async" : "")).toList();
            System.out.printf("LEAKY tomcat: %d requests arrived within %d ms; %d admitted (arrived->released ms): %s; "
                    + "%d refused%n", seen.size(), arrivalSpreadMs, admitted.size(), timeline, burst.refused());

            assertThat(seen).as("every request of the burst passed the valve once, answered").hasSize(REQUESTS);
            assertThat(burst.admittedAtMs()).hasSameSizeAs(admitted);
            assertThat(burst.refused()).isEqualTo(REQUESTS - admitted.size());
            // a slot frees every 100 ms: while the burst arrives, a few more than the bucket's worth fit
            long slotsWhileArriving = arrivalSpreadMs / SLOT_MS + 1;
            assertThat(admitted.size()).as("the bucket's worth is admitted")
                    .isBetween(BURST, (int) (BURST + slotsWhileArriving));
            // each admitted request has its own slot and is never released before it: the k-th release
            // comes at least k slots after the first, however late a busy machine runs the timer
            int n = admitted.size();
            for (int k = 1; k < n; k++) {
                assertThat(releasedAtMs.get(k) - releasedAtMs.get(0))
                        .as("release %d of %s: admitted requests are released one drain slot apart", k, timeline)
                        .isGreaterThanOrEqualTo(k * SLOT_MS - 10);
            }
            for (Releases.Seen s : admitted) {
                assertThat((s.releasedNanos - s.arrivedNanos) / 1_000_000)
                        .as("a held request waits about max-delay at most (plus a busy machine's lateness): %s", timeline)
                        .isLessThan(MAX_DELAY_MS + 1_000);
            }
            // only a request that found its slot free passes at once; every other one waited, suspended
            assertThat(n - suspended)
                    .as("admitted requests that passed on their first dispatch (a thread held for the delay would count here)")
                    .isBetween(1L, slotsWhileArriving);
        }
    }

    /** Records when each request reached Tomcat and when the application got it, and how it ended. */
    private static final class Releases extends ValveBase {

        record Seen(long arrivedNanos, long releasedNanos, boolean suspended, int status) {
        }

        private static final String ARRIVED = Releases.class.getName() + ".arrived";

        final List<Seen> seen = new CopyOnWriteArrayList<>();

        Releases() {
            super(true); // a valve that does not support async would make every request synchronous
        }

        @Override
        public void invoke(Request request, Response response) throws IOException, ServletException {
            long now = System.nanoTime();
            boolean redispatch = request.isAsyncDispatching();
            if (!redispatch) {
                request.setAttribute(ARRIVED, now);
            }
            getNext().invoke(request, response);
            long arrived = (Long) request.getAttribute(ARRIVED);
            if (redispatch) {
                seen.add(new Seen(arrived, now, true, response.getStatus()));
            } else if (!request.isAsync()) {
                seen.add(new Seen(arrived, now, false, response.getStatus()));
            } // else suspended: recorded when re-dispatched
        }
    }
}
