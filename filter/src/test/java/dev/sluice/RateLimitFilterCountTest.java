package dev.sluice;

import dev.sluice.testing.AsyncRequest;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisProcess;
import jakarta.servlet.FilterChain;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code rule.<r>.count}: only some outcomes count (backend=local; the fleet over HTTP is in src-it). */
class RateLimitFilterCountTest {

    private static RateLimitFilter login(String... extra) throws Exception {
        String[] base = {"rules", "login", "backend", "local", "rule.login.algorithm", "fixed-window",
                "rule.login.limit", "3", "rule.login.window", "1h", "rule.login.count", "401"};
        String[] params = new String[base.length + extra.length];
        System.arraycopy(base, 0, params, 0, base.length);
        System.arraycopy(extra, 0, params, base.length, extra.length);
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY)); // no hour ends among a test's attempts
        filter.init(FakeServlet.filterConfig("count", FakeServlet.params(params)));
        return filter;
    }

    /** The application's answer: the status it sets. */
    private static FilterChain answering(int status) {
        return (request, response) -> ((HttpServletResponse) response).setStatus(status);
    }

    private static String attempt(RateLimitFilter filter, int appStatus) throws Exception {
        Map<String, String> response = new HashMap<>();
        filter.doFilter(FakeServlet.request("POST", "/login", "192.0.2.7"), FakeServlet.response(response),
                answering(appStatus));
        return response.get("status");
    }

    @Test
    void successfulLoginsAreGivenBackSoTheyNeverLockAUserOut() throws Exception {
        RateLimitFilter filter = login();
        try {
            for (int i = 0; i < 20; i++) assertThat(attempt(filter, 200)).isEqualTo("200");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 200)).as("three failures: locked out, whatever it would answer").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anExceptionFromTheApplicationCountsAsA500() throws Exception {
        RateLimitFilter counting5xx = login("rule.login.count", "5xx");
        try {
            FilterChain failing = (request, response) -> {
                throw new IllegalStateException("the application failed");
            };
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> counting5xx.doFilter(FakeServlet.request("POST", "/login", "192.0.2.7"),
                        FakeServlet.response(new HashMap<>()), failing)).hasMessage("the application failed");
            }
            assertThat(attempt(counting5xx, 200)).as("three 500s counted").isEqualTo("429");
        } finally {
            counting5xx.destroy();
        }
    }

    @Test
    void aShadowRuleGivesBackTheSameWay() throws Exception {
        RateLimitFilter filter = login("rule.login.mode", "dry-run");
        try {
            for (int i = 0; i < 10; i++) attempt(filter, 200);
            assertThat(filter.sluice().metrics().getDryRunDenied()).as("given back: nothing would have been denied")
                    .isZero();
            for (int i = 0; i < 4; i++) attempt(filter, 401);
            assertThat(filter.sluice().metrics().getDryRunDenied()).isEqualTo(1);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void whileRedisIsAwayTheBackstopCountsAndGivesBackTheSameWay() throws Exception {
        String nothingListens = "redis://127.0.0.1:" + RedisProcess.freePort();
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY)); // the backstop's clock
        filter.init(FakeServlet.filterConfig("count", FakeServlet.params("rules", "login", "redis.url", nothingListens,
                "rule.login.algorithm", "fixed-window", "rule.login.limit", "3", "rule.login.window", "1h",
                "rule.login.count", "401")));
        try {
            for (int i = 0; i < 20; i++) assertThat(attempt(filter, 200)).isEqualTo("200");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 200)).as("three failures counted by the backstop: locked out").isEqualTo("429");
            assertThat(filter.sluice().metrics().getFallbackDecisions()).as("every decision the backstop's").isEqualTo(24);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aClientThatDisconnectsAfterTheAnswerWasSentCountsAsThatAnswer() throws Exception {
        RateLimitFilter filter = login();
        try {
            // The application sent its 401, then writing the rest failed: the client had gone. It saw
            // a failed login, so the attempt counts (were it taken for a 500, disconnecting early would
            // be a way around the lockout).
            FilterChain answersThenLosesTheClient = (request, response) -> {
                ((HttpServletResponse) response).setStatus(401);
                response.flushBuffer();
                throw new IOException("Broken pipe");
            };
            for (int i = 0; i < 3; i++) {
                assertThatThrownBy(() -> filter.doFilter(FakeServlet.request("POST", "/login", "192.0.2.7"),
                        FakeServlet.response(new HashMap<>()), answersThenLosesTheClient)).hasMessage("Broken pipe");
            }
            assertThat(attempt(filter, 200)).as("three failed logins counted").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anAsynchronousRequestCountsUntilItCompletesAndIsSettledByItsFinalStatus() throws Exception {
        RateLimitFilter filter = login();
        try {
            List<AsyncRequest> pending = new ArrayList<>();
            for (int i = 0; i < 3; i++) pending.add(started(filter));
            assertThat(attempt(filter, 200)).as("three requests still running hold the limit").isEqualTo("429");

            pending.get(0).complete(200);
            pending.get(1).complete(401);
            assertThat(attempt(filter, 200)).as("one given back: the running one and the failed login count")
                    .isEqualTo("200");
            assertThat(attempt(filter, 401)).isEqualTo("401");
            assertThat(attempt(filter, 200)).as("the running one and two failed logins").isEqualTo("429");

            pending.get(2).complete(200);
            pending.get(2).complete(200);
            assertThat(attempt(filter, 401)).as("the last completed as a success: given back").isEqualTo("401");
            assertThat(attempt(filter, 200)).as("given back once, not once per completion event").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }


    private static AsyncRequest started(RateLimitFilter filter) throws Exception {
        AsyncRequest a = AsyncRequest.start(filter, FakeServlet.request("POST", "/login", "192.0.2.7"));
        assertThat(a.listeners()).as("the filter waits for the completion").hasSize(1);
        return a;
    }
}
