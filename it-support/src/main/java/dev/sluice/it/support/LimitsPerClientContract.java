package dev.sluice.it.support;

import dev.sluice.testing.Poll;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Limits per client and limits that change live, over real HTTP, with three instances of the example
 * WAR sharing one Redis: plans set by the application's authentication filter, a configuration file
 * changed while the fleet serves (raised, lowered, broken, half-written, removed), every client's
 * counters kept. src-it runs it on every embedded container; dist-it does not (four three-instance
 * deployments would add about a minute to each distribution, and the file is read as on any container).
 */
public interface LimitsPerClientContract extends ContainerTest {

    int INSTANCES = 3;

    /** A configuration file for the example's rules, with {@code apiRule} for the api rule, checked every 200 ms. */
    static void write(Path file, String apiRule) throws Exception {
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
        Path tmp = Files.createTempFile(file.getParent(), "new-", ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Three instances reading their configuration from {@code file}, first written with {@code apiRule},
     * deployed with a minute or more left of Redis's day: the api rule is a fixed window of a day (to
     * midnight UTC, on Redis's clock), and each test's counts, reloads between them, must fall in one.
     */
    private Deployment startFleet(String testName, Path file, String apiRule) throws Exception {
        write(file, apiRule);
        Deployment fleet = container().deploy(ExampleApp.named(testName).with("config", "file:" + file), INSTANCES);
        try {
            WindowRoom.awaitOnRedis(Duration.ofDays(1), Duration.ofMinutes(1));
        } catch (Throwable e) {
            fleet.close();
            throw e;
        }
        return fleet;
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
    private static void awaitReloads(Deployment app, long reloads) {
        Poll.until(Duration.ofSeconds(10), "every instance to apply the changed file",
                () -> app.mxbeanTotal("Reloads") == reloads * INSTANCES);
    }

    private static Path configDir() throws Exception {
        return Files.createTempDirectory("sluice-live-");
    }

    @Test
    default void aPlanSetByTheApplicationGivesItsClientsTheirFigures() throws Exception {
        Path dir = configDir();
        try (Deployment app = startFleet("plans", dir.resolve("ratelimit.properties"), "rule.api.limit = 3")) {
            List<URI> fleet = app.uris("/api/live");
            assertThat(allowed(fleet, 12, "X-Api-Key", "demo-pro-key")).as("the pro plan's 8, fleet-wide").isEqualTo(8);
            HttpResponse<String> pro = Http.get(fleet.get(0), "X-Api-Key", "demo-pro-key");
            assertThat(pro.headers().firstValue("RateLimit-Policy")).contains("\"api\";q=8;w=86400");

            assertThat(allowed(fleet, 30, "X-Api-Key", "demo-internal-key")).as("internal: unlimited").isEqualTo(30);
            assertThat(Http.get(fleet.get(1), "X-Api-Key", "demo-internal-key").headers().firstValue("RateLimit"))
                    .as("an unlimited plan gets no field of the rule").isEmpty();
            assertThat(allowed(fleet, 6)).as("anonymous: the rule's own 3").isEqualTo(3);
            assertThat(Http.get(fleet.get(2), "X-Api-Key", "no-such-key").statusCode())
                    .as("the application's authentication refuses unknown keys").isEqualTo(401);
        } finally {
            ExampleWar.deleteRecursively(dir);
        }
    }

    @Test
    default void aLimitIsRaisedAndLoweredFleetWideWithoutARestartAndCountersAreKept() throws Exception {
        Path dir = configDir();
        Path file = dir.resolve("ratelimit.properties");
        try (Deployment app = startFleet("raise", file, "rule.api.limit = 4")) {
            List<URI> fleet = app.uris("/api/live");
            assertThat(allowed(fleet, 6)).isEqualTo(4);

            write(file, "rule.api.limit = 10");
            awaitReloads(app, 1);
            assertThat(Http.get(fleet.get(2), "X-Api-Key", "demo-pro-key").headers().firstValue("RateLimit-Policy"))
                    .contains("\"api\";q=8;w=86400");
            assertThat(allowed(fleet, 9)).as("10 in all: the 4 taken before the change still count").isEqualTo(6);

            write(file, "rule.api.limit = 7");
            awaitReloads(app, 2);
            assertThat(allowed(fleet, 3)).as("lowered below what the client has had: refused").isZero();
            assertThat(app.mxbeanTotal("Reloads")).isEqualTo(2L * INSTANCES);
        } finally {
            ExampleWar.deleteRecursively(dir);
        }
    }

    @Test
    default void aBrokenHalfWrittenOrRemovedFileLeavesTheFleetServingUnderTheRunningLimits() throws Exception {
        Path dir = configDir();
        Path file = dir.resolve("ratelimit.properties");
        try (Deployment app = startFleet("broken", file, "rule.api.limit = 5")) {
            List<URI> fleet = app.uris("/api/live");
            assertThat(allowed(fleet, 2)).isEqualTo(2);

            write(file, "rule.api.limit = five");
            Poll.until(Duration.ofSeconds(10), "every instance to refuse the broken file",
                    () -> app.mxbeanTotal("ReloadFailures") == INSTANCES);
            assertThat(allowed(fleet, 4)).as("the running limit, 5, still in force").isEqualTo(3);

            Files.writeString(file, "rules = api\nreload = 200ms\nexclude = /health\nrule.api.limit = 9\nrule.api.algo"); // written in place, unfinished
            Poll.until(Duration.ofSeconds(10), "every instance to refuse the half-written file",
                    () -> app.mxbeanTotal("ReloadFailures") == 2L * INSTANCES);

            Files.delete(file);
            Poll.until(Duration.ofSeconds(10), "every instance to notice the file is gone",
                    () -> app.mxbeanTotal("ReloadFailures") == 3L * INSTANCES);
            assertThat(allowed(fleet, 3)).as("still limited, never unlimited, never failing").isZero();
            assertThat(app.mxbeanTotal("Reloads")).isZero();
        } finally {
            ExampleWar.deleteRecursively(dir);
        }
    }

    /**
     * The example's login rule counts failed logins only ({@code rule.login.count = 401}): a client that
     * fails three times is locked out on every instance; a user who logs in correctly never is.
     */
    @Test
    default void failedLoginsAloneCountAndLockOutFleetWide() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("logins")
                .with("rule.login.limit", "3", "rule.login.window", "1h"), INSTANCES)) {
            WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(30)); // one of the rule's fixed windows
            List<URI> logins = app.uris("/login");
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
}
