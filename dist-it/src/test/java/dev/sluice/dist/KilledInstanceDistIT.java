package dev.sluice.dist;

import dev.sluice.it.support.ConcurrencyContract;
import dev.sluice.it.support.ExampleWar;
import dev.sluice.it.support.ExportStats;
import dev.sluice.it.support.Http;
import dev.sluice.it.support.RateLimitField;
import dev.sluice.testing.Poll;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The slots of an instance that dies while holding them stay taken for at most their lease and a
 * second ({@code rule.<r>.lease}), and no shorter than the lease of its last renewal: two Apache
 * Tomcat 11 instances share one Redis, the example's {@code exports} rule at its 2 slots with the
 * lease an operator exports as {@code SLUICE_EXPORTS_LEASE=3s}. Killing needs a process of its own,
 * so one distribution shows it, with servers of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KilledInstanceDistIT {

    private static final long LEASE_MS = 3_000;

    private List<Server> fleet;

    @BeforeAll
    void startFleet() {
        Map<String, String> env = new LinkedHashMap<>(Servers.environment("killed"));
        env.put("SLUICE_EXPORTS_LEASE", LEASE_MS / 1_000 + "s");
        Path tomcat = Server.dirProperty("dist.tomcat11.home");
        fleet = Servers.startAll(List.of(TomcatServer.create("killed-a", tomcat, env),
                TomcatServer.create("killed-b", tomcat, env)));
    }

    @AfterAll
    void stopFleet() {
        if (fleet != null) Servers.closeAll(fleet);
    }

    /**
     * Instance A takes both of a client's slots with exports longer than the test, and keeps them
     * past their first lease (renewing them); meanwhile B refuses the client. A is killed with
     * SIGKILL. B admits the client again within the lease and a second of the kill, and not before
     * the lease of A's last renewal could have ended: A renewed each slot a third of a lease after
     * it was taken or last renewed, so that lease ends no earlier than two thirds of a lease after
     * the kill (less the renewer's timing).
     */
    @Test
    void aKilledInstancesSlotsAreFreeWithinTheLeaseAndASecond() throws Exception {
        Path war = ExampleWar.withInitParams(Map.of("redis.timeout", "2s"), Server.serversDir().resolve("wars"));
        Servers.eachInParallel(fleet, s -> s.deployServing("exports", war));
        Server a = fleet.get(0);
        Server b = fleet.get(1);
        URI probe = b.uri("exports", "/exports/probe?ms=0");

        Http.getAsync(a.uri("exports", "/exports/long?ms=30000"));
        Http.getAsync(a.uri("exports", "/exports/long?ms=30000"));
        Poll.until(Duration.ofSeconds(10), "both of the client's exports running on A",
                () -> ExportStats.at(a.uri("exports", "/exports/stats")).client(ConcurrencyContract.CLIENT).inFlight() == 2);
        long taken = System.nanoTime();
        TimeUnit.MILLISECONDS.sleep(LEASE_MS + 500); // the moment to look: past the slots' first lease
        HttpResponse<String> refused = Http.get(probe);
        assertThat(refused.statusCode()).as("B refuses while A lives and renews its slots, a lease after it took them")
                .isEqualTo(429);
        assertThat(RateLimitField.freeSlots(refused, "exports")).isZero();

        long killed = System.nanoTime();
        a.process().killJvm();
        long[] lastRefusedMs = {-1};
        Poll.until(Duration.ofMillis(LEASE_MS + 3_000), "B to admit the client once A's slots are free", () -> {
            long sent = System.nanoTime();
            int status = Http.get(probe).statusCode();
            assertThat(status).isIn(200, 429);
            if (status == 429) lastRefusedMs[0] = (sent - killed) / 1_000_000;
            return status == 200;
        });
        long freedMs = (System.nanoTime() - killed) / 1_000_000;
        System.out.printf("DIST killed instance (%s, lease %d ms): held %d ms, killed; B still refused %d ms after the"
                        + " kill, admitted %d ms after it%n", a.product(), LEASE_MS, (killed - taken) / 1_000_000,
                lastRefusedMs[0], freedMs);
        assertThat(freedMs).as("free within the lease and a second of the kill").isLessThanOrEqualTo(LEASE_MS + 1_000);
        assertThat(freedMs).as("not before the lease of A's last renewal could have ended")
                .isGreaterThanOrEqualTo(LEASE_MS * 2 / 3 - 100);
    }
}
