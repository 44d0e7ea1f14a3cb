package dev.sluice.it.support;

import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A concurrency slot's lease ({@code rule.<r>.lease}) bounds how long a slot outlives an instance
 * that stopped answering for it, never how long a request may run: a request longer than the lease
 * keeps its slot throughout, its instance renewing it while it runs. src-it runs it on embedded Jetty
 * ee10 and Tomcat; not on every container, as it takes five seconds, and renewal is Sluice's own
 * thread, not the container's. How long the slots of a killed instance stay taken is dist-it's
 * {@code KilledInstanceDistIT} (it needs a process to kill).
 */
public interface LeaseRenewalContract extends ContainerTest {

    @Test
    default void aRequestLongerThanItsLeaseKeepsItsSlotWhileItRuns() throws Exception {
        // an export that runs until released, 4.5 s after it began (at most 15 s): more than twice its lease
        try (Deployment app = container().deploy(ExampleApp.named("renewal")
                .with("rule.exports.limit", "1", "rule.exports.lease", "2s"), 1)) {
            CompletableFuture<HttpResponse<String>> export = Http.getAsync(app.uri(0, "/exports/long?ms=15000&until=done"));
            ExportStats.awaitInFlight(app, 0, ConcurrencyContract.CLIENT, 1);
            long started = System.nanoTime();
            for (long atMs : List.of(1_000L, 3_000L, 4_500L)) {
                long wait = started + TimeUnit.MILLISECONDS.toNanos(atMs) - System.nanoTime();
                if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait); // the moment to look, not a wait for anything
                assertThat(app.get(0, "/exports/probe?ms=0").statusCode())
                        .as("%d ms into the export, its slot's lease 2 s", atMs).isEqualTo(429);
            }
            assertThat(app.mxbeanTotal("LeasesLost")).isZero();

            assertThat(ExportStats.release(app, 0, "done")).as("the export ran until released").isEqualTo(1);
            assertThat(export.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
            assertThat(app.get(0, "/exports/after?ms=0").statusCode()).as("answered: its slot is free").isEqualTo(200);
        }
    }
}
