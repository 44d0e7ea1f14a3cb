package dev.sluice;

import dev.sluice.testing.AsyncRequest;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.StandardError;
import dev.sluice.testing.TestRedis;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code rule.<r>.actual-cost}: the estimate ({@code cost}) taken at admission, the difference settled
 * once the response has stated what the request really cost (backend=local unless said; over HTTP in
 * src-it and dist-it).
 */
class RateLimitFilterActualCostTest {

    /**
     * 1,000 tokens a minute per customer, an estimate of 100 a request, the cost stated in X-Tokens-Used; on a
     * fake instance clock, so that the figures are exact: nothing refills between a test's requests (a token
     * every 60 ms on the system clock) and no minute ends among them (the fixed and counting windows).
     */
    private static RateLimitFilter llm(String... extra) throws ServletException {
        String[] base = {"rules", "llm", "backend", "local", "rule.llm.limit", "1000", "rule.llm.window", "1m",
                "rule.llm.key", "header:X-Customer", "rule.llm.cost", "100",
                "rule.llm.actual-cost", "response-header:X-Tokens-Used"};
        String[] params = new String[base.length + extra.length];
        System.arraycopy(base, 0, params, 0, base.length);
        System.arraycopy(extra, 0, params, base.length, extra.length);
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY));
        filter.init(FakeServlet.filterConfig("llm", FakeServlet.params(params)));
        return filter;
    }

    private static HttpServletRequest completion() {
        return FakeServlet.request("POST", "/v1/completions", "192.0.2.7", "X-Customer", "acme");
    }

    /** A request whose application states {@code used} tokens in X-Tokens-Used (null: states nothing). */
    private static Map<String, String> call(RateLimitFilter filter, String used) throws Exception {
        return call(filter, used, 200);
    }

    private static Map<String, String> call(RateLimitFilter filter, String used, int status) throws Exception {
        Map<String, String> response = new HashMap<>();
        filter.doFilter(completion(), FakeServlet.response(response), (rq, rs) -> {
            HttpServletResponse r = (HttpServletResponse) rs;
            r.setStatus(status);
            if (used != null) r.setHeader("X-Tokens-Used", used);
        });
        response.putIfAbsent("status", "200");
        return response;
    }

    private static long remaining(Map<String, String> response) {
        return Long.parseLong(response.get("X-RateLimit-Remaining"));
    }

    @Test
    void aRequestThatCostMoreIsChargedTheDifferenceAfterItsResponse() throws Exception {
        RateLimitFilter filter = llm();
        try {
            Map<String, String> first = call(filter, "700");
            assertThat(remaining(first)).as("the response's own fields: the state after the estimate").isEqualTo(900);
            Map<String, String> second = call(filter, "100");
            assertThat(remaining(second)).as("1000 - 700 - 100: the first's 600 more were charged").isEqualTo(200);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aClientInDebtIsRefusedUntilTheRefillRepaysIt() throws Exception {
        RateLimitFilter filter = llm();
        try {
            call(filter, "1500"); // 1,500 tokens on a bucket of 1,000: 500 owed
            Map<String, String> refused = call(filter, "100");
            assertThat(refused).containsEntry("status", "429");
            assertThat(refused.get("Retry-After")).as("500 owed and 100 to take, at 1,000 a minute: 36 s").isEqualTo("36");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aRequestThatCostLessGivesBackTheDifference() throws Exception {
        RateLimitFilter filter = llm();
        try {
            call(filter, "5");
            assertThat(remaining(call(filter, "100"))).as("1000 - 5 - 100").isEqualTo(895);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aCostStatedInARequestAttributeSettlesTheSame() throws Exception {
        RateLimitFilter filter = llm("rule.llm.actual-cost", "attr:tokens");
        try {
            Map<String, String> response = new HashMap<>();
            filter.doFilter(completion(), FakeServlet.response(response), (rq, rs) -> rq.setAttribute("tokens", 400L));
            assertThat(remaining(call(filter, null))).as("1000 - 400 - 100 (the second stated nothing)").isEqualTo(500);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aCostNotStatedOrNotAWholeNumberLeavesTheEstimateAndIsLoggedOnceAMinute() throws Exception {
        RateLimitFilter filter = llm();
        try {
            String log = StandardError.capture(() -> {
                try {
                    call(filter, null);
                    call(filter, "-3");
                    call(filter, "12.5");
                    call(filter, "lots");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(remaining(call(filter, "100"))).as("four estimates of 100 stood").isEqualTo(500);
            assertThat(log).containsOnlyOnce("WARN dev.sluice.RateLimitFilter - Sluice [llm]: a response of rule llm stated"
                    + " no cost in response-header:X-Tokens-Used (absent, negative or not a whole number): the estimate,"
                    + " cost=100, stood");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void withCountAResponseThatDoesNotCountCostsNothingWhateverItStates() throws Exception {
        RateLimitFilter filter = llm("rule.llm.count", "2xx");
        try {
            call(filter, "900", 500);
            assertThat(remaining(call(filter, "100"))).as("the 500 cost nothing").isEqualTo(900);
            call(filter, "300", 200);
            assertThat(remaining(call(filter, "100"))).isEqualTo(500);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anAsynchronousRequestSettlesAtItsCompletion() throws Exception {
        RateLimitFilter filter = llm("rule.llm.actual-cost", "attr:tokens");
        try {
            AsyncRequest streaming = AsyncRequest.start(filter, completion());
            assertThat(remaining(call(filter, null))).as("still streaming: its estimate counts").isEqualTo(800);

            streaming.request().setAttribute("tokens", 600);
            streaming.complete(200);
            streaming.complete(200);
            assertThat(remaining(call(filter, "100"))).as("1000 - 600 - 100 - 100, settled once").isEqualTo(200);
        } finally {
            filter.destroy();
        }
    }

    /**
     * On Redis the settled state is the fleet's: another instance sees the charge. On Redis's clock, so a
     * bucket of 1,000 a day: no token comes back while the test runs (at 1,000 a minute, one every 60 ms).
     */
    @Test
    void onRedisAnotherInstanceSeesTheSettledCost() throws Exception {
        String prefix = TestRedis.uniquePrefix("actual-cost");
        RateLimitFilter one = llm("backend", "redis", "redis.url", TestRedis.url(), "key-prefix", prefix,
                "rule.llm.window", "1d");
        RateLimitFilter other = llm("backend", "redis", "redis.url", TestRedis.url(), "key-prefix", prefix,
                "rule.llm.window", "1d");
        try {
            call(one, "700");
            assertThat(remaining(call(other, "100"))).isEqualTo(200);
            call(other, "0");
            assertThat(remaining(call(one, "100"))).as("700, 100, 0 and this 100: the estimate of the request that cost"
                    + " nothing came back").isEqualTo(100);
        } finally {
            one.destroy();
            other.destroy();
        }
    }

    @Test
    void aCostStatedAboveMaxActualCostIsSettledAtTheBoundAndLoggedOnceAMinute() throws Exception {
        RateLimitFilter filter = llm("rule.llm.max-actual-cost", "300");
        try {
            String log = StandardError.capture(() -> {
                try {
                    call(filter, "1000000"); // a million tokens stated: 300 settled, 200 more than the estimate
                    call(filter, "123456789012345678901234567890"); // a whole number beyond a long: above any bound
                    call(filter, "250"); // within the bound: settled as stated
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(remaining(call(filter, "100"))).as("1000 - 300 - 300 - 250 - 100, not a debt of millions")
                    .isEqualTo(50);
            assertThat(log).containsOnlyOnce("WARN dev.sluice.RateLimitFilter - Sluice [llm]: a response stated a cost"
                    + " above its rule's max-actual-cost, settled at the bound (the last: 1000000 in"
                    + " response-header:X-Tokens-Used of rule llm, settled at rule.llm.max-actual-cost=300). Logged at most"
                    + " once a minute.");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aMaxActualCostIsAWholeNumberNoLessThanTheEstimateAndOnlyWithAnActualCost() throws Exception {
        assertInitFails("rule.llm.max-actual-cost", "rule.llm.max-actual-cost", "lots");
        assertInitFails("rule.llm.max-actual-cost", "rule.llm.max-actual-cost", "0");
        assertThatThrownBy(() -> llm("rule.llm.max-actual-cost", "99")).isInstanceOf(ServletException.class)
                .hasMessageContaining("rule.llm.max-actual-cost").hasMessageContaining("at least the rule's cost (rule.llm.cost=100)");
        RateLimitFilter noActualCost = new RateLimitFilter();
        assertThatThrownBy(() -> noActualCost.init(FakeServlet.filterConfig("llm", FakeServlet.params("rules", "llm",
                "backend", "local", "rule.llm.limit", "1000", "rule.llm.window", "1m", "rule.llm.max-actual-cost", "300"))))
                .isInstanceOf(ServletException.class).hasMessageContaining("rule.llm.max-actual-cost")
                .hasMessageContaining("rule.llm.actual-cost says, which is not set");
        RateLimitFilter atTheEstimate = llm("rule.llm.max-actual-cost", "100");
        try {
            call(atTheEstimate, "5000");
            assertThat(remaining(call(atTheEstimate, "100"))).as("a bound equal to the estimate: nothing more charged")
                    .isEqualTo(800);
        } finally {
            atTheEstimate.destroy();
        }
    }

    @Test
    void anActualCostIsRefusedWhereItCannotBeSettled() {
        assertInitFails("rule.llm.actual-cost", "rule.llm.actual-cost", "header:X-Tokens");
        assertInitFails("rule.llm.actual-cost", "rule.llm.actual-cost", "response-header:");
        assertInitFails("rule.llm.actual-cost", "rule.llm.algorithm", "sliding-window-log");
        assertInitFails("rule.llm.actual-cost", "rule.llm.algorithm", "leaky-bucket");
        assertInitFails("rule.llm.actual-cost", "rule.llm.algorithm", "fixed-window", "rule.llm.sync", "1s");
    }

    @Test
    void everyAlgorithmThatSettlesACostTakesOne() throws Exception {
        for (String algorithm : List.of("fixed-window", "sliding-window-counter", "token-bucket", "gcra")) {
            RateLimitFilter filter = llm("rule.llm.algorithm", algorithm);
            try {
                call(filter, "700");
                assertThat(remaining(call(filter, "100"))).as(algorithm).isEqualTo(200);
            } finally {
                filter.destroy();
            }
        }
    }

    private static void assertInitFails(String key, String... extra) {
        assertThatThrownBy(() -> llm(extra)).isInstanceOf(ServletException.class).hasMessageContaining(key);
    }
}
