package dev.sluice.it.support;

import dev.sluice.testing.Poll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A concurrency rule ({@code algorithm=concurrency}) on every container: the example's
 * {@code exports} rule lets a client have at most {@code limit} exports in flight at once, across
 * the fleet. A request holds its slot from its admission until it has answered, synchronously or
 * asynchronously (then until the container reports its completion, which may come a moment after
 * the answer); a request finding no slot free is refused at once with every field of a refusal
 * (no {@code w}, no {@code t}: a slot frees when a request completes, at no time one could promise).
 * How many ran at once is measured by the application itself ({@link ExportStats}), on each
 * instance and across the fleet; the requests come from one client, this machine's address.
 */
public interface ConcurrencyContract extends ContainerTest {

    /** Who the exports rule and the export servlet count the test's requests as: no API key, its address. */
    String CLIENT = "127.0.0.1";

    /**
     * The crowd: this many concurrent clients send this many exports each (1,152 in all), to a fleet of three with
     * this many slots.
     */
    int CROWD_CLIENTS = 48;
    int CROWD_REQUESTS_PER_CLIENT = 24;
    int CROWD_SLOTS = 3;

    /**
     * Two exports hold both of a client's slots, one on the container's thread, the other
     * asynchronously (its servlet returned the thread at once), until the test releases them: a
     * third is refused while they run, and once both have answered their slots are free.
     */
    @Test
    default void aSlotIsHeldUntilItsRequestHasAnsweredSynchronouslyOrAsynchronously() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("slots").with("rule.exports.limit", "2"), 1)) {
            List<CompletableFuture<HttpResponse<String>>> running = List.of(
                    Http.getAsync(app.uri(0, "/exports/a?ms=15000&until=released")),
                    Http.getAsync(app.uri(0, "/exports/b?ms=15000&until=released&async=true")));
            ExportStats.awaitInFlight(app, 0, CLIENT, 2);

            assertRefusedForWantOfASlot(app.get(0, "/exports/c?ms=0"), 2);
            Thread.sleep(500); // the moment to look: the asynchronous export's servlet returned its thread long ago
            assertThat(app.get(0, "/exports/c?ms=0").statusCode()).as("half a second later, both slots still held")
                    .isEqualTo(429);
            assertThat(app.get(0, "/exports/d?ms=0", "X-Api-Key", "demo-pro-key").statusCode())
                    .as("another client has slots of its own").isEqualTo(200);

            assertThat(ExportStats.release(app, 0, "released")).as("both exports ran until released").isEqualTo(2);
            List<Long> freeAfter = new ArrayList<>();
            for (CompletableFuture<HttpResponse<String>> export : running) {
                HttpResponse<String> answered = export.get(10, TimeUnit.SECONDS);
                assertThat(answered.statusCode()).isEqualTo(200);
                freeAfter.add(RateLimitField.freeSlots(answered, "exports"));
            }
            assertThat(freeAfter).as("r: the slots free once each had taken its own").containsExactlyInAnyOrder(1L, 0L);
            // the export on the container's thread freed its slot before its answer left; the asynchronous
            // one frees its slot at its completion, which a container may report a moment after the answer
            // (Jetty's distribution does): both are free within a second, far sooner than the lease (10 s)
            long freedMs = Poll.millisUntil(Duration.ofSeconds(1), "both slots free once both exports answered", () -> {
                HttpResponse<String> after = app.get(0, "/exports/e?ms=0");
                assertThat(after.statusCode()).as("at least the synchronous export's slot is free").isEqualTo(200);
                return RateLimitField.freeSlots(after, "exports") == 1;
            });
            System.out.printf("SLOTS %s: both free %d ms after both answers%n", container().name(), freedMs);
            assertThat(app.mxbeanTotal("SlotsHeld")).as("SlotsHeld over JMX once every export answered").isZero();

            assertThat(ExportStats.of(app, 0).client(CLIENT).maxInFlight()).isEqualTo(2);
            ExportStats.Client reset = ExportStats.reset(app, 0).client(CLIENT);
            assertThat(reset.maxInFlight()).as("the servlet's figures start afresh on a reset").isZero();
            assertThat(reset.runs()).isEmpty();
        }
    }

    /**
     * A plan gives its clients their own number of slots (here the pro plan 2, a client without a plan
     * 1), and a concurrency rule in dry-run counts slots, sends its fields and refuses nobody.
     */
    @Test
    default void aPlanHasItsOwnSlotsAndADryRunRuleRefusesNobody() throws Exception {
        String pro = "demo-pro-key"; // the example's key of a pro customer (ApiKeyFilter: attribute plan=pro)
        try (Deployment app = container().deploy(ExampleApp.named("slot-plans").with("rule.exports.limit", "1",
                "rule.exports.plan", "attr:plan", "rule.exports.plans", "pro", "rule.exports.plan.pro.limit", "2"), 1)) {
            List<CompletableFuture<HttpResponse<String>>> running = List.of(
                    Http.getAsync(app.uri(0, "/exports/a?ms=15000&until=plans")),
                    Http.getAsync(app.uri(0, "/exports/b?ms=15000&until=plans"), "X-Api-Key", pro),
                    Http.getAsync(app.uri(0, "/exports/c?ms=15000&until=plans"), "X-Api-Key", pro));
            ExportStats.awaitInFlight(app, 0, CLIENT, 1);
            ExportStats.awaitInFlight(app, 0, pro, 2);

            assertRefusedForWantOfASlot(app.get(0, "/exports/d?ms=0"), 1);
            assertRefusedForWantOfASlot(app.get(0, "/exports/e?ms=0", "X-Api-Key", pro), 2);
            assertThat(ExportStats.of(app, 0).client(pro).maxInFlight()).as("the pro customer's two at once").isEqualTo(2);

            assertThat(ExportStats.release(app, 0, "plans")).isEqualTo(3);
            for (CompletableFuture<HttpResponse<String>> export : running) {
                assertThat(export.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            }
        }
        try (Deployment app = container().deploy(ExampleApp.named("slot-dry-run").with("rule.exports.limit", "1",
                "rule.exports.mode", "dry-run"), 1)) {
            CompletableFuture<HttpResponse<String>> first = Http.getAsync(app.uri(0, "/exports/a?ms=15000&until=dry"));
            ExportStats.awaitInFlight(app, 0, CLIENT, 1);
            HttpResponse<String> over = app.get(0, "/exports/b?ms=0");
            assertThat(over.statusCode()).as("a second export past the limit, in dry-run: admitted").isEqualTo(200);
            assertThat(over.headers().firstValue("RateLimit-Policy")).hasValue("\"exports\";q=1");
            assertThat(RateLimitField.freeSlots(over, "exports")).as("r: the fields say what enforcing would").isZero();
            assertThat(app.mxbeanTotal("DryRunDenied")).as("counted as a refusal it did not make").isEqualTo(1);
            assertThat(app.mxbeanTotal("Denied")).isZero();
            assertThat(ExportStats.release(app, 0, "dry")).isEqualTo(1);
            assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(ExportStats.of(app, 0).client(CLIENT).maxInFlight()).as("both ran at once").isEqualTo(2);
        }
    }

    /**
     * Concurrent clients send one client's exports (50 ms each) round-robin to three instances
     * sharing one Redis: the exports that ran at once, measured by the servlets themselves and laid
     * side by side, never outnumber the limit, though the crowd keeps every slot filled; the others
     * are refused; no slot outlives its request, in any instance or in Redis.
     */
    @Test
    default void oneClientsCrowdOverThreeInstancesNeverHasMoreThanTheLimitInFlight() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("in-flight")
                .with("rule.exports.limit", Integer.toString(CROWD_SLOTS)), 3)) {
            Crowd.Outcome o = Crowd.hammer(app.uris("/exports/crowd?ms=50"), CROWD_CLIENTS, CROWD_REQUESTS_PER_CLIENT);
            List<ExportStats> stats = ExportStats.ofEvery(app);
            int mostAtOnce = ExportStats.mostAtOnce(stats, CLIENT);
            System.out.printf("IN FLIGHT %s: %s; at most %d at once in the fleet; most on each instance %s%n",
                    container().name(), o, mostAtOnce, stats.stream().map(s -> s.client(CLIENT).maxInFlight()).toList());

            assertThat(o.other()).as("no other status than 200 and 429").isZero();
            assertThat(o.denied()).as("some found no slot free").isPositive();
            assertThat(stats.stream().mapToLong(s -> s.client(CLIENT).ended()).sum())
                    .as("every admitted export ran, and the servlets measured it").isEqualTo(o.allowed());
            for (ExportStats s : stats) {
                assertThat(s.client(CLIENT).maxInFlight()).as("at once on one instance").isLessThanOrEqualTo(CROWD_SLOTS);
            }
            assertThat(mostAtOnce).as("at once across the fleet: never more than the limit, and the crowd filled every slot")
                    .isEqualTo(CROWD_SLOTS);
            assertThat(app.mxbeanTotal("SlotsHeld")).isZero();
            assertThat(app.redisKeys()).as("no slot left in Redis").isZero();
        }
    }

    /** A refusal for want of a slot: 429 and every field, a concurrency rule's items without w and t. */
    private static void assertRefusedForWantOfASlot(HttpResponse<String> refused, int limit) {
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.headers().firstValue("RateLimit-Policy")).hasValue("\"exports\";q=" + limit);
        assertThat(refused.headers().firstValue("RateLimit")).hasValue("\"exports\";r=0");
        assertThat(RateLimitField.freeSlots(refused, "exports")).isZero();
        assertThat(refused.headers().firstValue("X-RateLimit-Limit")).hasValue(Integer.toString(limit));
        assertThat(refused.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
        assertThat(refused.headers().firstValue("X-RateLimit-Reset")).hasValue("1");
        assertThat(refused.headers().firstValue("Cache-Control")).hasValue("no-store");
        assertThat(refused.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
        assertThat(refused.body()).contains("\"status\":429").contains("\"violated-policies\":[\"exports\"]")
                .contains("\"retry-after\":1");
    }
}
