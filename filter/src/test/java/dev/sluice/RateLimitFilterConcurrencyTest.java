package dev.sluice;

import dev.sluice.testing.AsyncRequest;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.TestRedis;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.io.IOException;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code algorithm=concurrency} in the filter: a request holds a slot while the application runs it,
 * and frees it however it ends (backend=local unless said; the fleet over HTTP is in src-it and dist-it).
 */
class RateLimitFilterConcurrencyTest {

    private static RateLimitFilter exports(String... extra) throws ServletException {
        String[] base = {"rules", "exports", "backend", "local", "rule.exports.algorithm", "concurrency",
                "rule.exports.limit", "2", "rule.exports.key", "header:X-Customer"};
        String[] params = new String[base.length + extra.length];
        System.arraycopy(base, 0, params, 0, base.length);
        System.arraycopy(extra, 0, params, base.length, extra.length);
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("exports", FakeServlet.params(params)));
        return filter;
    }

    private static HttpServletRequest export() {
        return FakeServlet.request("POST", "/export", "192.0.2.7", "X-Customer", "acme");
    }

    /** Sends a request whose application runs {@code inside}; returns the response's status and fields. */
    private static Map<String, String> send(RateLimitFilter filter, FilterChain inside) throws IOException, ServletException {
        Map<String, String> response = new HashMap<>();
        filter.doFilter(export(), FakeServlet.response(response), inside);
        response.putIfAbsent("status", "200");
        return response;
    }

    @Test
    void aRequestHoldsItsSlotWhileTheApplicationRunsItAndFreesItWhenItAnswers() throws Exception {
        RateLimitFilter filter = exports();
        try {
            List<Map<String, String>> seen = new ArrayList<>();
            Map<String, String> outer = send(filter, (rq, rs) -> seen.add(send(filter, (rq2, rs2) -> {
                assertThat(filter.sluice().metrics().getSlotsHeld()).as("two requests running").isEqualTo(2);
                seen.add(send(filter, (rq3, rs3) -> {
                    throw new AssertionError("a third request in flight must not reach the application");
                }));
            })));
            assertThat(outer).containsEntry("status", "200").containsEntry("RateLimit-Policy", "\"exports\";q=2")
                    .containsEntry("RateLimit", "\"exports\";r=1").containsEntry("X-RateLimit-Reset", "1");
            Map<String, String> second = seen.get(1);
            assertThat(second).containsEntry("status", "200").containsEntry("RateLimit", "\"exports\";r=0");
            Map<String, String> third = seen.get(0);
            assertThat(third).as("no w, no t: a slot frees when a request completes, at no time one can promise")
                    .containsEntry("status", "429").containsEntry("Retry-After", "1")
                    .containsEntry("RateLimit-Policy", "\"exports\";q=2").containsEntry("RateLimit", "\"exports\";r=0")
                    .containsEntry("X-RateLimit-Remaining", "0").containsEntry("X-RateLimit-Reset", "1");
            assertThat(filter.sluice().metrics().getSlotsHeld()).as("all answered").isZero();
            assertThat(send(filter, (rq, rs) -> { }).get("status")).isEqualTo("200");
            assertThat(send(filter, (rq, rs) -> { }).get("status")).as("slots free again, one at a time").isEqualTo("200");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anExceptionFromTheApplicationFreesTheSlot() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1");
        try {
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> send(filter, (rq, rs) -> {
                    throw new IllegalStateException("the export failed");
                })).hasMessage("the export failed");
            }
            assertThat(send(filter, (rq, rs) -> { }).get("status")).isEqualTo("200");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aClientThatWentAwayFreesItsSlotToo() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1");
        try {
            FilterChain answersThenLosesTheClient = (rq, rs) -> {
                rs.flushBuffer();
                throw new IOException("Broken pipe");
            };
            assertThatThrownBy(() -> send(filter, answersThenLosesTheClient)).hasMessage("Broken pipe");
            assertThat(send(filter, (rq, rs) -> { }).get("status")).isEqualTo("200");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anAsynchronousRequestHoldsItsSlotUntilItCompletesOnce() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1");
        try {
            AsyncRequest running = started(filter);
            assertThat(send(filter, (rq, rs) -> { }).get("status")).as("the asynchronous request still runs").isEqualTo("429");
            running.complete(200);
            running.complete(200); // the container's onComplete, heard twice: released once
            assertThat(send(filter, (rq, rs) -> { }).get("status")).isEqualTo("200");
            AsyncRequest second = started(filter);
            assertThat(send(filter, (rq, rs) -> { }).get("status")).as("one slot, held again").isEqualTo("429");
            second.complete(200);
        } finally {
            filter.destroy();
        }
    }

    /** The application starts the asynchronous cycle and then throws: the container still completes it, and that frees the slot. */
    @Test
    void anAsynchronousRequestThatThenThrowsHoldsItsSlotUntilTheContainerCompletesIt() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1");
        try {
            IllegalStateException failure = new IllegalStateException("failed after startAsync");
            AsyncRequest failing = AsyncRequest.startThenThrow(filter, export(), failure);
            assertThat(failing.thrown()).as("the exception reaches the container unchanged").isSameAs(failure);
            assertThat(failing.listeners()).as("the filter waits for the completion").hasSize(1);
            assertThat(filter.sluice().metrics().getSlotsHeld()).as("the cycle is still open").isEqualTo(1);
            assertThat(send(filter, (rq, rs) -> { }).get("status")).isEqualTo("429");
            failing.complete(500);
            assertThat(filter.sluice().metrics().getSlotsHeld()).isZero();
            assertThat(send(filter, (rq, rs) -> { }).get("status")).as("freed at the completion").isEqualTo("200");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aShadowConcurrencyRuleCountsButNeverRefuses() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1", "rule.exports.mode", "dry-run");
        try {
            Map<String, String> inner = new HashMap<>();
            send(filter, (rq, rs) -> inner.putAll(send(filter, (rq2, rs2) -> { })));
            assertThat(inner).containsEntry("status", "200").containsEntry("RateLimit", "\"exports\";r=0");
            assertThat(filter.sluice().metrics().getDryRunDenied()).isEqualTo(1);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void withOtherRulesARequestRefusedForWantOfASlotTakesNothingFromThem() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1", "rules", "exports, api", "rule.api.limit", "10",
                "rule.api.window", "1m", "rule.api.key", "header:X-Customer");
        try {
            Map<String, String> refused = new HashMap<>();
            Map<String, String> outer = send(filter, (rq, rs) -> refused.putAll(send(filter, (rq2, rs2) -> { })));
            assertThat(outer.get("RateLimit")).isEqualTo("\"exports\";r=0, \"api\";r=9;t=6");
            assertThat(refused).containsEntry("status", "429");
            Map<String, String> after = send(filter, (rq, rs) -> { });
            assertThat(after.get("RateLimit")).as("the refused request took no token of api")
                    .startsWith("\"exports\";r=0, \"api\";r=8;");
        } finally {
            filter.destroy();
        }
    }

    /** Undeploying while requests still hold slots (an asynchronous one never completed) frees them in Redis. */
    @Test
    void anUndeployFreesTheSlotsOfRequestsStillInFlight() throws Exception {
        String prefix = TestRedis.uniquePrefix("undeploy-slots");
        RateLimitFilter filter = exports("backend", "redis", "redis.url", TestRedis.url(), "key-prefix", prefix,
                "rule.exports.limit", "3");
        try (JedisPooled jedis = new JedisPooled(URI.create(TestRedis.url()))) {
            started(filter);
            started(filter);
            String key = prefix + "{exports:h=acme}:slots";
            assertThat(jedis.zcard(key)).isEqualTo(2);
            assertThat(jedis.pttl(key)).as("a lease of 30 s and the margin").isBetween(29_000L, 31_000L);
            filter.destroy();
            assertThat(jedis.zcard(key)).as("the instance going away released its slots").isZero();
        }
    }

    @Test
    void aPlanHasItsOwnNumberOfSlots() throws Exception {
        RateLimitFilter filter = exports("rule.exports.limit", "1", "rule.exports.plan", "attr:plan",
                "rule.exports.plans", "gold", "rule.exports.plan.gold.limit", "3");
        try {
            List<String> statuses = new ArrayList<>();
            FilterChain[] nested = new FilterChain[1];
            nested[0] = (rq, rs) -> {
                if (statuses.size() >= 4) return;
                HttpServletRequest gold = export();
                gold.setAttribute("plan", "gold");
                Map<String, String> r = new HashMap<>();
                filter.doFilter(gold, FakeServlet.response(r), nested[0]);
                statuses.add(r.getOrDefault("status", "200") + " " + r.get("RateLimit-Policy"));
            };
            nested[0].doFilter(null, null);
            assertThat(statuses).as("innermost first: three gold requests in flight, the fourth refused")
                    .containsExactly("429 \"exports\";q=3", "200 \"exports\";q=3", "200 \"exports\";q=3",
                            "200 \"exports\";q=3");
        } finally {
            filter.destroy();
        }
    }

    /** While Redis is away an open concurrency rule's backstop counts this instance's requests in flight, at fallback-limit. */
    @Test
    void whileRedisIsAwayTheBackstopCountsThisInstancesRequestsInFlight() throws Exception {
        String nothingListens = "redis://127.0.0.1:" + dev.sluice.testing.RedisProcess.freePort();
        RateLimitFilter filter = exports("backend", "redis", "redis.url", nothingListens, "rule.exports.limit", "5",
                "rule.exports.fallback-limit", "1");
        try {
            Map<String, String> inner = new HashMap<>();
            Map<String, String> outer = send(filter, (rq, rs) -> inner.putAll(send(filter, (rq2, rs2) -> { })));
            assertThat(outer).containsEntry("status", "200").containsEntry("RateLimit-Policy", "\"exports\";q=1");
            assertThat(inner).as("one in flight on this instance while Redis is away").containsEntry("status", "429");
            assertThat(send(filter, (rq, rs) -> { }).get("status")).as("released to the backstop").isEqualTo("200");
            assertThat(filter.sluice().metrics().getFallbackDecisions()).isEqualTo(3);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aConcurrencyRuleRefusesTheKeysItCannotHave() {
        assertInitFails("rule.exports.window", "rule.exports.window", "1m");
        assertInitFails("rule.exports.count", "rule.exports.count", "2xx");
        assertInitFails("rule.exports.lease", "rule.exports.lease", "500ms");
        assertInitFails("rule.exports.burst", "rule.exports.burst", "5");
        assertInitFails("rule.exports.cost", "rule.exports.cost", "2");
        assertInitFails("rule.exports.actual-cost", "rule.exports.actual-cost", "attr:rows");
        assertInitFails("rule.exports.sync", "rule.exports.sync", "1s");
        assertInitFails("rule.exports.calendar", "rule.exports.calendar", "Europe/Berlin");
        assertInitFails("rule.exports.plan.gold.window", "rule.exports.plan", "attr:plan", "rule.exports.plans", "gold",
                "rule.exports.plan.gold.limit", "5", "rule.exports.plan.gold.window", "1m");
    }

    @Test
    void aLeaseIsOnlyForConcurrency() {
        RateLimitFilter filter = new RateLimitFilter();
        assertThatThrownBy(() -> filter.init(FakeServlet.filterConfig("api", FakeServlet.params("rules", "api",
                "backend", "local", "rule.api.limit", "5", "rule.api.window", "1m", "rule.api.lease", "10s"))))
                .hasMessageContaining("rule.api.lease").hasMessageContaining("only for concurrency");
    }

    private static void assertInitFails(String key, String... extra) {
        assertThatThrownBy(() -> exports(extra)).isInstanceOf(ServletException.class).hasMessageContaining(key);
    }


    private static AsyncRequest started(RateLimitFilter filter) throws Exception {
        AsyncRequest a = AsyncRequest.start(filter, export());
        assertThat(a.listeners()).as("the filter waits for the completion").hasSize(1);
        return a;
    }
}
