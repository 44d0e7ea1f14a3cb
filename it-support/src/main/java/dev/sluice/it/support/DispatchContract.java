package dev.sluice.it.support;

import dev.sluice.testing.Poll;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every dispatch target counts, on every container, whether the filter's mapping lists every
 * dispatcher type (the example WAR) or none ({@code REQUEST} only, the {@code web.xml} default):
 * {@code /signin} forwarding to {@code /login} is decided by the login rule, a page including
 * {@code /api/x} by the api rule, refused in place of the target; a forward between two paths of
 * one rule, and a request whose error page is under the same rule, are counted once.
 */
public interface DispatchContract extends ContainerTest {

    /** The example's rules, small: 3 failed logins an hour, 4 API calls an hour (exact: a log). */
    private static ExampleApp app(String name) {
        return ExampleApp.named(name).with("rule.login.limit", "3", "rule.login.window", "1h",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "4", "rule.api.window", "1h",
                "rule.api.match", "/api/**, /forward/**, /error");
    }

    @Test
    default void everyDispatchTargetCountsWithEveryDispatcherTypeMapped() throws Exception {
        try (Deployment app = container().deploy(app("dispatch-all"), 1)) {
            everyDispatchTargetCountsOnce(app);
        }
    }

    @Test
    default void everyDispatchTargetCountsWithAMappingForRequestsOnly() throws Exception {
        try (Deployment app = container().deploy(app("dispatch-request").mappedFor(), 1)) {
            everyDispatchTargetCountsOnce(app);
        }
    }

    private static void everyDispatchTargetCountsOnce(Deployment app) {
        // the login rule is a fixed window of an hour on Redis's clock: its seven counted attempts and two
        // refusals in one window (an hour's end among them would start the count afresh)
        WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofMinutes(1));
        // a forward to a limited path: /signin is /login's older name. A forward's answer leaves when
        // the forward ends, before the filter gives back what it took, so a client that sends its next
        // request at once may be judged before that give-back (the README says so): a 429 there stands
        // for a give-back on its way, and the login is sent again until it lands (a 429 takes nothing;
        // 5 s at most, so a give-back that never lands fails the test)
        for (int i = 0; i < 4; i++) {
            signInOnceGivenBack(app, "correct-horse", 200, "a good login through the forward, " + (i + 1));
        }
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> failed = signInOnceGivenBack(app, "wrong", 401, "failed attempt " + (i + 1) + ", counted once");
            assertThat(failed.body()).contains("\"login\":\"failed\"");
        }
        long refusedBefore = app.mxbeanTotal("Denied"); // the 429s of give-backs on their way, if any
        HttpResponse<String> locked = app.send(0, "POST", "/signin", "user=alice&password=correct-horse",
                "Content-Type", "application/x-www-form-urlencoded");
        assertThat(locked.statusCode()).as("the fourth attempt through /signin, refused at the forward").isEqualTo(429);
        assertThat(locked.body()).contains("\"violated-policies\":[\"login\"]").doesNotContain("\"login\":");
        assertThat(Http.postForm(app.uri(0, "/login"), "user=alice&password=correct-horse").statusCode())
                .as("and through /login itself: one limit").isEqualTo(429);

        // a forward between two paths of one rule: counted once
        for (int i = 0; i < 2; i++) {
            HttpResponse<String> forwarded = app.get(0, "/forward/x");
            assertThat(forwarded.statusCode()).isEqualTo(200);
            assertThat(forwarded.body()).contains("\"path\":\"/x\"");
            assertThat(RateLimitField.item(forwarded, "api")[0]).as("remaining after forward %d", i + 1).isEqualTo(3 - i);
        }

        // an include of a limited path: decided there
        HttpResponse<String> included = app.get(0, "/include/y");
        assertThat(included.statusCode()).isEqualTo(200);
        assertThat(included.body()).startsWith("{\"included\":{\"path\":\"/y\"");
        assertThat(RateLimitField.item(included, "api")[0]).as("remaining after the include").isEqualTo(1);

        // an error page under the same rule: the request and its error dispatch count once
        HttpResponse<String> missing = app.get(0, "/api/missing/1");
        assertThat(missing.statusCode()).as("the application's 404, not a refusal of its error page").isEqualTo(404);
        assertThat(missing.body()).contains("\"error\":404");
        assertThat(RateLimitField.item(missing, "api")[0]).isZero();

        HttpResponse<String> refusedInclude = app.get(0, "/include/z");
        assertThat(refusedInclude.statusCode()).as("an include past the limit: the refusal is the answer").isEqualTo(429);
        assertThat(refusedInclude.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
        assertThat(refusedInclude.body()).startsWith("{").contains("\"violated-policies\":[\"api\"]")
                .doesNotContain("included");
        assertThat(app.get(0, "/forward/w").statusCode()).isEqualTo(429);
        assertThat(app.mxbeanTotal("Denied") - refusedBefore).as("four refusals, each decided once").isEqualTo(4);
    }

    /**
     * Signs in through {@code /signin} until the answer is {@code expected}, sending again while it is a
     * 429 (the previous good login's give-back still on its way); any other answer fails.
     */
    private static HttpResponse<String> signInOnceGivenBack(Deployment app, String password, int expected, String what) {
        List<HttpResponse<String>> answer = new ArrayList<>(1);
        int[] tries = {0};
        long waitedMs = Poll.millisUntil(Duration.ofSeconds(5), what + " (earlier good logins given back)", () -> {
            tries[0]++;
            HttpResponse<String> response = app.send(0, "POST", "/signin", "user=alice&password=" + password,
                    "Content-Type", "application/x-www-form-urlencoded");
            assertThat(response.statusCode()).as(what).isIn(expected, 429);
            answer.add(0, response);
            return response.statusCode() == expected;
        });
        if (tries[0] > 1) {
            System.out.printf("DISPATCH %s: answered at try %d, %d ms after the first (a give-back landed after"
                    + " the next request)%n", what, tries[0], waitedMs);
        }
        return answer.get(0);
    }
}
