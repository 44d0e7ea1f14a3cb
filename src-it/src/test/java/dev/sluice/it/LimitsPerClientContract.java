package dev.sluice.it;

import dev.sluice.testing.Poll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Limits per client and limits that change live, over real HTTP, with three instances of the example
 * WAR sharing one Redis, on each container: plans set by the application's authentication filter, a
 * configuration file changed while the fleet serves (raised, lowered, broken, half-written, removed),
 * every client's counters kept.
 */
abstract class LimitsPerClientContract {

    static final int INSTANCES = 3;

    /** Starts one instance of the example WAR with these init-params. */
    abstract DeployedWar start(Map<String, String> params) throws Exception;

    private final List<DeployedWar> fleet = new ArrayList<>();
    private Path dir;
    private Path file;

    @BeforeEach
    void directory() throws Exception {
        dir = Files.createTempDirectory("sluice-live-");
        file = dir.resolve("ratelimit.properties");
    }

    @AfterEach
    void stop() throws Exception {
        for (DeployedWar app : fleet) app.close();
        fleet.clear();
        ExampleWar.deleteRecursively(dir);
    }

    private List<URI> startFleet(String testName, String apiRule) throws Exception {
        write(apiRule);
        Map<String, String> params = ExampleWar.params(testName, "config", "file:" + file);
        for (int i = 0; i < INSTANCES; i++) fleet.add(start(params));
        for (DeployedWar app : fleet) {
            // a first request: Undertow (WildFly) starts filters then, the other containers at deployment
            assertThat(Http.get(app.uri("/health")).statusCode()).isEqualTo(200);
        }
        return fleet.stream().map(app -> app.uri("/api/live")).toList();
    }

    /** A configuration file for the example's rules, with {@code apiRule} for the api rule, checked every 200 ms. */
    private void write(String apiRule) throws Exception {
        String content = """
                rules = api
                reload = 200ms
                exclude = /health
                rule.api.match = /api/**
                rule.api.algorithm = fixed-window
                rule.api.window = 1d
                rule.api.key = header:X-Api-Key|ip
                rule.api.plan = attr:plan
                rule.api.plans = pro, internal
                rule.api.plan.pro.limit = 8
                rule.api.plan.internal.limit = unlimited
                """ + apiRule + "\n";
        Path tmp = Files.createTempFile(dir, "new-", ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static int allowed(List<URI> fleet, int requests, String... headers) {
        int allowed = 0;
        for (int i = 0; i < requests; i++) {
            int status = Http.get(fleet.get(i % fleet.size()), headers).statusCode();
            assertThat(status).isIn(200, 429);
            if (status == 200) allowed++;
        }
        return allowed;
    }

    /** Every instance has applied {@code reloads} changes of the file (their JMX figures say so). */
    private static void awaitReloads(long reloads) {
        Poll.until(Duration.ofSeconds(10), "every instance to apply the changed file",
                () -> sumOverInstances("Reloads") == reloads * INSTANCES);
    }

    private static long sumOverInstances(String attribute) {
        try {
            MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
            long sum = 0;
            for (ObjectName on : jmx.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null)) {
                sum += (Long) jmx.getAttribute(on, attribute);
            }
            return sum;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aPlanSetByTheApplicationGivesItsClientsTheirFigures() throws Exception {
        List<URI> fleet = startFleet("plans", "rule.api.limit = 3");
        assertThat(allowed(fleet, 12, "X-Api-Key", "demo-pro-key")).as("the pro plan's 8, fleet-wide").isEqualTo(8);
        HttpResponse<String> pro = Http.get(fleet.get(0), "X-Api-Key", "demo-pro-key");
        assertThat(pro.headers().firstValue("RateLimit-Policy")).contains("\"api\";q=8;w=86400");

        assertThat(allowed(fleet, 30, "X-Api-Key", "demo-internal-key")).as("internal: unlimited").isEqualTo(30);
        assertThat(Http.get(fleet.get(1), "X-Api-Key", "demo-internal-key").headers().firstValue("RateLimit"))
                .as("an unlimited plan gets no field of the rule").isEmpty();
        assertThat(allowed(fleet, 6)).as("anonymous: the rule's own 3").isEqualTo(3);
        assertThat(Http.get(fleet.get(2), "X-Api-Key", "no-such-key").statusCode())
                .as("the application's authentication refuses unknown keys").isEqualTo(401);
    }

    @Test
    void aLimitIsRaisedAndLoweredFleetWideWithoutARestartAndCountersAreKept() throws Exception {
        List<URI> fleet = startFleet("raise", "rule.api.limit = 4");
        assertThat(allowed(fleet, 6)).isEqualTo(4);

        write("rule.api.limit = 10");
        awaitReloads(1);
        assertThat(Http.get(fleet.get(2), "X-Api-Key", "demo-pro-key").headers().firstValue("RateLimit-Policy"))
                .contains("\"api\";q=8;w=86400");
        assertThat(allowed(fleet, 9)).as("10 in all: the 4 taken before the change still count").isEqualTo(6);

        write("rule.api.limit = 7");
        awaitReloads(2);
        assertThat(allowed(fleet, 3)).as("lowered below what the client has had: refused").isZero();
        assertThat(sumOverInstances("Reloads")).isEqualTo(2L * INSTANCES);
    }

    @Test
    void aBrokenHalfWrittenOrRemovedFileLeavesTheFleetServingUnderTheRunningLimits() throws Exception {
        List<URI> fleet = startFleet("broken", "rule.api.limit = 5");
        assertThat(allowed(fleet, 2)).isEqualTo(2);

        write("rule.api.limit = five");
        Poll.until(Duration.ofSeconds(10), "every instance to refuse the broken file",
                () -> sumOverInstances("ReloadFailures") == INSTANCES);
        assertThat(allowed(fleet, 4)).as("the running limit, 5, still in force").isEqualTo(3);

        Files.writeString(file, "rules = api\nreload = 200ms\nexclude = /health\nrule.api.limit = 9\nrule.api.algo"); // written in place, unfinished
        Poll.until(Duration.ofSeconds(10), "every instance to refuse the half-written file",
                () -> sumOverInstances("ReloadFailures") == 2L * INSTANCES);

        Files.delete(file);
        Poll.until(Duration.ofSeconds(10), "every instance to notice the file is gone",
                () -> sumOverInstances("ReloadFailures") == 3L * INSTANCES);
        assertThat(allowed(fleet, 3)).as("still limited, never unlimited, never failing").isZero();
        assertThat(sumOverInstances("Reloads")).isZero();
    }

    /**
     * The example's login rule counts failed logins only ({@code rule.login.count = 401}): a client that
     * fails three times is locked out on every instance; a user who logs in correctly never is.
     */
    @Test
    void failedLoginsAloneCountAndLockOutFleetWide() throws Exception {
        Map<String, String> params = ExampleWar.params("logins", "rule.login.limit", "3", "rule.login.window", "1h");
        for (int i = 0; i < INSTANCES; i++) fleet.add(start(params));
        List<URI> logins = fleet.stream().map(app -> app.uri("/login")).toList();
        for (DeployedWar app : fleet) assertThat(Http.get(app.uri("/health")).statusCode()).isEqualTo(200);

        for (int i = 0; i < 10; i++) {
            assertThat(Http.postForm(logins.get(i % INSTANCES), "user=alice&password=correct-horse").statusCode())
                    .as("alice logs in, %d times, on every instance", i + 1).isEqualTo(200);
        }
        for (int i = 0; i < 3; i++) {
            assertThat(Http.postForm(logins.get(i % INSTANCES), "user=alice&password=wrong").statusCode())
                    .as("failed attempt %d", i + 1).isEqualTo(401);
        }
        for (URI instance : logins) {
            HttpResponse<String> locked = Http.postForm(instance, "user=alice&password=correct-horse");
            assertThat(locked.statusCode()).as("after three failures, locked out on %s, even with the password", instance)
                    .isEqualTo(429);
            assertThat(locked.body()).contains("\"violated-policies\":[\"login\"]");
        }
    }
}
