package dev.sluice.dist;

import dev.sluice.testing.Poll;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.management.ObjectName;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What Sluice promises on every supported container, checked in the distribution a user downloads:
 * two instances of it started with its own scripts, sharing one Redis, the example WAR deployed as
 * its users deploy. Each subclass names a distribution; its two servers start once (in parallel)
 * for all the tests of the class, and every test undeploys what it deployed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class DistributionContract {

    static final int CLIENTS = 48;
    static final int REQUESTS_PER_CLIENT = 6;

    List<Server> fleet;
    Map<String, String> environment;

    /** Two instances of the distribution, not yet started, whose processes get {@code environment}. */
    abstract List<Server> createFleet(String fleetName, Map<String, String> environment);

    /** What the container shows, besides its main log naming the key, when a deployment failed. */
    abstract void assertFailedDeployment(Server server, String context, Server.Deployment deployment);

    /** Container warnings of leaks after an undeployment (Tomcat's); none by default. */
    void assertNoLeakWarnings(Server server) {
    }

    @BeforeAll
    void startFleet() {
        String fleetName = getClass().getSimpleName();
        environment = Servers.environment(fleetName);
        System.out.printf("DIST %s: Redis %s (%s)%n", fleetName, TestRedis.url(), TestRedis.how());
        fleet = Servers.startAll(createFleet(fleetName, environment));
    }

    @AfterAll
    void stopFleet() {
        if (fleet != null) Servers.closeAll(fleet);
    }

    @Test
    void twoInstancesSharingOneRedisAllowExactlyTheLimit() throws Exception {
        // the limit, the algorithm and the key prefix come from the server processes' environment
        // through the placeholders of the WAR's ratelimit.properties; a shared 2-core machine needs
        // more than the default 50 ms Redis timeout for no decision to fall back
        Path war = ExampleWar.withInitParams(Map.of("redis.timeout", "500ms"));
        Servers.eachInParallel(fleet, s -> s.deployServing("fleet", war));
        try {
            List<URI> targets = fleet.stream().map(s -> s.uri("fleet", "/api/fleet")).toList();
            Crowd.Outcome o = Crowd.hammer(targets, CLIENTS, REQUESTS_PER_CLIENT);
            System.out.printf("DIST %s fleet: %s%n", getClass().getSimpleName(), o);
            assertThat(o.other()).as("no other status than 200 and 429").isZero();
            assertThat(o.allowed()).as("the two instances together allow exactly the limit").isEqualTo(Servers.LIMIT);
            assertThat(o.allowed() + o.denied()).isEqualTo(CLIENTS * REQUESTS_PER_CLIENT);

            // the MXBeans of each instance, read over JMX as an operator would, account for the same requests
            ObjectName bean = Jmx.sluiceBean("fleet");
            long allowed = 0;
            long denied = 0;
            for (Server s : fleet) {
                allowed += s.jmx().longAttribute(bean, "Allowed");
                denied += s.jmx().longAttribute(bean, "Denied");
                assertThat(s.jmx().attribute(bean, "BreakerState")).isEqualTo("CLOSED");
                assertThat(s.jmx().longAttribute(bean, "FallbackDecisions")).isZero();
            }
            assertThat(allowed).as("Allowed over JMX, both instances").isEqualTo(o.allowed());
            assertThat(denied).as("Denied over JMX, both instances").isEqualTo(o.denied());
        } finally {
            Servers.eachInParallel(fleet, s -> s.undeploy("fleet"));
        }
    }

    @Test
    void deniedRequestGetsStatusRetryAfterNoStoreHeadersAndProblemBody() {
        Server server = fleet.get(0);
        server.deployServing("denial", ExampleWar.withInitParams(Map.of(
                "key-prefix", TestRedis.uniquePrefix("dist-denial"), "rule.api.limit", "3")));
        try {
            HttpResponse<String> first = Http.get(server.uri("denial", "/api/hello"));
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
            assertThat(RateLimitField.item(first, "api")[0]).isEqualTo(2);
            assertThat(first.headers().firstValue("X-RateLimit-Limit")).hasValue("3");
            assertThat(first.headers().firstValue("X-RateLimit-Remaining")).hasValue("2");
            Http.get(server.uri("denial", "/api/hello"));
            assertThat(Http.get(server.uri("denial", "/api/hello")).statusCode()).isEqualTo(200);

            HttpResponse<String> denied = Http.get(server.uri("denial", "/api/hello"));
            assertThat(denied.statusCode()).isEqualTo(429);
            long retryAfter = Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow());
            assertThat(retryAfter).isBetween(1L, 3600L);
            long[] api = RateLimitField.item(denied, "api");
            assertThat(api[0]).isZero();
            assertThat(api[1]).isBetween(1L, retryAfter);
            assertThat(denied.headers().firstValue("Cache-Control")).hasValue("no-store");
            assertThat(denied.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
            assertThat(denied.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
            assertThat(denied.headers().firstValue("X-RateLimit-Reset")).hasValue(Long.toString(api[1]));
            assertThat(denied.body())
                    .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                    .contains("\"status\":429")
                    .contains("\"violated-policies\":[\"api\"]");
        } finally {
            server.undeploy("denial");
        }
    }

    @Test
    void badConfigurationFailsTheDeploymentAndTheMainLogNamesTheKey() {
        Server server = fleet.get(0);
        Server.Deployment d = server.deploy("typo", ExampleWar.withInitParams(Map.of("rule.api.windw", "1m")));
        try {
            System.out.printf("DIST %s bad configuration: %s%n", server, d);
            assertThat(d.deployed()).as("%s reports typo.war deployed (%s)", server, d.evidence()).isFalse();
            int status = Http.get(server.uri("typo", "/api/x")).statusCode();
            assertThat(status).as("the application is not there, nor serving errors").isIn(404, 503);
            Poll.until(Duration.ofSeconds(10), server + "'s main log to name the key",
                    () -> server.mainLog().contains("rule.api.windw"));
            assertFailedDeployment(server, "typo", d);
        } finally {
            server.undeploy("typo");
        }
    }

    @Test
    void redeployingThreeTimesLeaksNoThreadsConnectionsNorClassLoaders() {
        Server server = fleet.get(1);
        long pid = server.process().jvmPid();
        // a leaky-bucket rule with max-delay: the filter's own timer thread runs too
        Path war = ExampleWar.withInitParams(Map.of("key-prefix", TestRedis.uniquePrefix("dist-cycle"),
                "rule.api.algorithm", "leaky-bucket", "rule.api.limit", "100", "rule.api.window", "1s",
                "rule.api.burst", "5", "rule.api.max-delay", "100ms"));
        int threadsBefore = server.jmx().threadNames().size();
        cycle(server, war); // the first deployment also warms the container's own pools and caches
        server.jmx().gc();
        int threads = server.jmx().threadNames().size();
        int connections = RedisConnections.of(pid);
        int copies = server.jmx().loadedCopies("dev.sluice.RateLimitFilter");
        List<String> baseline = server.jmx().threadNames();
        List<Integer> after = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            cycle(server, war);
            try {
                Poll.until(Duration.ofSeconds(30), server + ": threads and Redis connections back after undeploy " + i,
                        () -> server.jmx().threadNames().size() <= threads && RedisConnections.of(pid) == connections);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + ": threads " + server.jmx().threadNames().size() + " vs "
                        + threads + " (" + diff(baseline, server.jmx().threadNames()) + "), Redis connections "
                        + RedisConnections.of(pid) + " vs " + connections, e);
            }
            after.add(server.jmx().threadNames().size());
        }
        Poll.until(Duration.ofSeconds(30), server + ": the undeployed applications' classes unloaded", () -> {
            server.jmx().gc();
            return server.jmx().loadedCopies("dev.sluice.RateLimitFilter") <= copies;
        });
        System.out.printf("DIST %s redeploy: JVM threads %d before, %d after a first deploy/undeploy, %s after each of 3 more;"
                        + " Redis connections %d; RateLimitFilter classes loaded %d%n",
                server, threadsBefore, threads, after, connections, copies);
        List<String> now = server.jmx().threadNames();
        assertThat(now).as("no Sluice thread outlives its application").noneMatch(n -> n.startsWith("sluice-"));
        // the container's pools may shrink meanwhile and hide a leaked thread in the total: no kind of thread may grow
        Map<String, Long> kinds = kinds(baseline);
        kinds(now).forEach((kind, n) -> assertThat(n).as("threads named like '%s'", kind)
                .isLessThanOrEqualTo(kinds.getOrDefault(kind, 0L)));
        assertNoLeakWarnings(server);
    }

    /** Deploys, uses (every kind of Sluice thread and connection started), and undeploys the WAR once. */
    private static void cycle(Server server, Path war) {
        server.deployServing("cycle", war);
        for (int i = 0; i < 10; i++) {
            assertThat(Http.get(server.uri("cycle", "/api/x")).statusCode()).isIn(200, 429);
        }
        assertThat(server.jmx().threadNames()).as("the filter's delay timer runs while deployed")
                .anyMatch(n -> n.startsWith("sluice-delay-"));
        assertThat(RedisConnections.of(server.process().jvmPid())).as("the application holds Redis connections").isPositive();
        assertThat(server.jmx().loadedCopies("dev.sluice.RateLimitFilter")).as("the filter's class is seen loaded").isPositive();
        server.undeploy("cycle");
    }

    /** Thread names with their numbers blanked: a pool's threads are one kind. */
    private static Map<String, Long> kinds(List<String> names) {
        return names.stream().collect(java.util.stream.Collectors.groupingBy(n -> n.replaceAll("[0-9]+", "#"),
                java.util.stream.Collectors.counting()));
    }

    private static String diff(List<String> before, List<String> now) {
        List<String> added = new ArrayList<>(now);
        before.forEach(added::remove);
        return "new " + added;
    }

    @Test
    void leakyBucketReleasesABurstOneDrainSlotApartWithServletAsync() throws Exception {
        Server server = fleet.get(0);
        // 10 a second: one slot every 100 ms; up to 6 requests may wait at most 600 ms
        Map<String, String> params = new LinkedHashMap<>();
        params.put("key-prefix", TestRedis.uniquePrefix("dist-leaky"));
        params.put("rule.api.algorithm", "leaky-bucket");
        params.put("rule.api.limit", "10");
        params.put("rule.api.window", "1s");
        params.put("rule.api.burst", "6");
        params.put("rule.api.max-delay", "600ms");
        server.deployServing("leaky", ExampleWar.withInitParams(params));
        try {
            Http.get(server.uri("leaky", "/health")); // a warm connection pool and servlet: the burst measures Sluice
            Crowd.Burst b = Crowd.burst(server.uri("leaky", "/api/shaped"), 12);
            System.out.printf("DIST %s leaky: admitted %d at %s ms, refused %d%n", server, b.admittedAtMs().size(),
                    b.admittedAtMs(), b.refused());
            List<Long> at = b.admittedAtMs();
            int drained = (int) (b.lastAnswerMs() / 100) + 1;
            assertThat(at.size()).as("the queue's worth is admitted, plus what drained meanwhile").isBetween(6, 6 + drained);
            assertThat(b.refused()).isEqualTo(12 - at.size());
            // unshaped, they would all answer within a few ms of each other; half the ideal spread is required
            long spread = at.get(at.size() - 1) - at.get(1);
            assertThat(spread).as("admitted requests after the first are released one drain slot apart")
                    .isGreaterThanOrEqualTo((at.size() - 2) * 100L / 2);
        } finally {
            server.undeploy("leaky");
        }
    }
}
