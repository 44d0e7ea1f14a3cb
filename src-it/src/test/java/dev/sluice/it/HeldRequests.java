package dev.sluice.it;

import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What happens to requests a {@code leaky-bucket} rule holds for their slot, the same on every
 * container: each gets an answer whatever happens while it waits (an undeploy, the container's
 * async timeout), and none holds a container thread while it waits. The container-specific tests
 * deploy the WAR with a {@link HoldProbe} in front and run these.
 */
final class HeldRequests {

    /** One drain slot every 5 s: the first request passes, every later one is held for seconds. */
    static final String[] SLOW_DRAIN = {"rule.api.algorithm", "leaky-bucket", "rule.api.limit", "1",
            "rule.api.window", "5s", "rule.api.burst", "40", "rule.api.max-delay", "5m"};
    static final long SLOT_MS = 5_000;

    private HeldRequests() {
    }

    /** A response and when it came, in ms since the requests were sent. */
    record Answer(HttpResponse<String> response, long atMs) {
        int status() {
            return response.statusCode();
        }

        String header(String name) {
            return response.headers().firstValue(name).orElse(null);
        }
    }

    /**
     * {@code held} requests wait for their slots, 5 s apart; the web application is undeployed:
     * every one is answered at once with 503, {@code Retry-After} and a problem body, none reaches
     * the application.
     */
    static void undeployAnswersEveryHeldRequest(DeployedWar app, HoldProbe probe, int held) throws Exception {
        assertThat(Http.get(app.uri("/api/first")).statusCode()).as("the empty bucket's free slot").isEqualTo(200);
        long start = System.nanoTime();
        List<CompletableFuture<Answer>> answers = send(app.uri("/api/held"), held, start);
        Poll.until(Duration.ofSeconds(10), held + " requests held", () -> probe.suspended() == held);

        long undeployedAtMs = sinceMs(start);
        app.undeploy();

        for (CompletableFuture<Answer> pending : answers) {
            Answer a = pending.get(10, TimeUnit.SECONDS);
            assertThat(a.status()).as("a held request is answered 503 on undeploy: %s", a.response().body()).isEqualTo(503);
            assertThat(Long.parseLong(a.header("Retry-After"))).as("until its slot").isBetween(1L, SLOT_MS / 1000 * held);
            assertThat(a.header("Cache-Control")).isEqualTo("no-store");
            assertThat(a.header("Content-Type")).startsWith("application/problem+json");
            assertThat(a.response().body()).contains("\"status\":503").contains("shutting down");
            assertThat(a.atMs() - undeployedAtMs).as("answered at the undeploy, not at its slot").isLessThan(3_000);
        }
    }

    /**
     * More requests than the container has threads wait for their slots at once, and the
     * container's request threads stay free: an excluded path answers at once meanwhile.
     */
    static void heldRequestsOccupyNoContainerThread(DeployedWar app, HoldProbe probe) throws Exception {
        int held = 2 * app.maxRequestThreads() + 2;
        assertThat(Http.get(app.uri("/api/first")).statusCode()).isEqualTo(200);
        long start = System.nanoTime();
        List<CompletableFuture<Answer>> answers = send(app.uri("/api/held"), held, start);
        Poll.until(Duration.ofSeconds(10), held + " requests held", () -> probe.suspended() == held);

        int busy = app.busyRequestThreads();
        long healthStart = System.nanoTime();
        HttpResponse<String> health = Http.get(app.uri("/health"));
        long healthMs = sinceMs(healthStart);
        System.out.printf("HELD: %d requests held on at most %d request threads; %d busy; /health in %d ms%n",
                probe.suspended(), app.maxRequestThreads(), busy, healthMs);

        assertThat(probe.mostSuspended()).as("requests held at once, more than the container's threads")
                .isEqualTo(held).isGreaterThan(app.maxRequestThreads());
        assertThat(busy).as("request threads busy while %d requests are held", held).isLessThanOrEqualTo(1);
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(healthMs).as("a free thread answers at once").isLessThan(2_000);
    }

    /**
     * Control for the thread count above: with a filter on the path that does not support async,
     * each held request parks its container thread, and the count sees them; an undeploy still
     * answers them at once with 503.
     */
    static void parkedRequestsHoldThreadsUntilAnsweredOnUndeploy(DeployedWar app) throws Exception {
        int held = 2;
        assertThat(Http.get(app.uri("/api/first")).statusCode()).isEqualTo(200);
        long start = System.nanoTime();
        List<CompletableFuture<Answer>> answers = send(app.uri("/api/held"), held, start);
        // parked in Sluice's hold itself, not merely busy (a decision waiting for its Redis round trip is busy too)
        Poll.until(Duration.ofSeconds(10), held + " request threads parked in Sluice's hold",
                () -> threadsParkedInTheHold() >= held && app.busyRequestThreads() >= held);

        long undeployedAtMs = sinceMs(start);
        app.undeploy();

        for (CompletableFuture<Answer> pending : answers) {
            Answer a = pending.get(10, TimeUnit.SECONDS);
            assertThat(a.status()).as("a parked request is answered 503 on undeploy: %s", a.response().body()).isEqualTo(503);
            assertThat(a.header("Retry-After")).isNotNull();
            // Tomcat first waits up to its unloadDelay (2 s) for requests inside a servlet's chain
            assertThat(a.atMs() - undeployedAtMs).as("answered at the undeploy, not at its slot").isLessThan(5_000);
        }
    }

    /** Threads of this JVM (the embedded container's) waiting inside Sluice's hold for a slot. */
    static long threadsParkedInTheHold() {
        return java.util.Arrays.stream(java.lang.management.ManagementFactory.getThreadMXBean().dumpAllThreads(false, false))
                .filter(info -> java.util.Arrays.stream(info.getStackTrace())
                        .anyMatch(frame -> frame.getClassName().startsWith("dev.sluice.internal.http.DelayedAdmission")))
                .count();
    }

    /**
     * The container's async timeout ends a hold before its slot: the request is answered 503
     * with {@code Retry-After} (not the container's 500), and its slot later does nothing.
     */
    static void asyncTimeoutAnswersTheHeldRequest(DeployedWar app, HoldProbe probe) throws Exception {
        assertThat(Http.get(app.uri("/api/first")).statusCode()).isEqualTo(200);
        long start = System.nanoTime();
        Answer a = send(app.uri("/api/held"), 1, start, HoldProbe.ASYNC_TIMEOUT_HEADER, "300").get(0)
                .get(10, TimeUnit.SECONDS);

        assertThat(a.status()).as("a timed-out hold is answered by Sluice: %s", a.response().body()).isEqualTo(503);
        assertThat(Long.parseLong(a.header("Retry-After"))).as("until its slot").isBetween(1L, SLOT_MS / 1000);
        assertThat(a.header("Cache-Control")).isEqualTo("no-store");
        assertThat(a.response().body()).contains("\"status\":503").contains("timeout");
        assertThat(a.atMs()).as("answered at the timeout, before its slot").isLessThan(SLOT_MS);
        Poll.until(Duration.ofSeconds(5), "the timed-out request to complete", () -> probe.suspended() == 0);
    }

    /** {@code n} concurrent GETs of {@code uri}, sent now. */
    static List<CompletableFuture<Answer>> send(URI uri, int n, long start, String... headers) {
        List<CompletableFuture<Answer>> answers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET();
            for (int h = 0; h + 1 < headers.length; h += 2) request.header(headers[h], headers[h + 1]);
            answers.add(Http.CLIENT.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString())
                    .thenApply(r -> new Answer(r, sinceMs(start))));
        }
        return answers;
    }

    private static long sinceMs(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
