package dev.sluice.it.support;

import dev.sluice.testing.Poll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cost settled after the response ({@code rule.<r>.actual-cost}) on every container: the example's
 * {@code llm} rule, a token bucket, takes its estimate ({@code cost}, 200 tokens) when it admits a
 * request, and once the response is complete settles what the application stated in the response
 * header {@code X-Tokens-Used}: more is charged, past the limit if need be, less is given back. A
 * response's own fields show the state after the estimate; the next one shows the settled state.
 * A client in debt is refused until the refill has repaid it, and its {@code Retry-After} says when.
 */
public interface ActualCostContract extends ContainerTest {

    @Test
    default void theEstimateIsTakenAtAdmissionAndTheStatedCostSettledAfterTheResponse() throws Exception {
        // a bucket that takes a day to refill: not a token comes back while the test runs, every figure is exact
        try (Deployment app = container().deploy(ExampleApp.named("settled")
                .with("rule.llm.limit", "1000", "rule.llm.window", "1d"), 1)) {
            HttpResponse<String> first = app.get(0, "/llm/chat?tokens=500");
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(first.headers().firstValue("X-Tokens-Used")).hasValue("500");
            assertThat(RateLimitField.policy(first, "llm")).containsExactly(1000, 86400);
            assertThat(remaining(first)).as("its own fields: the state after the estimate, 1000 - 200").isEqualTo(800);

            HttpResponse<String> second = app.get(0, "/llm/chat?tokens=50");
            assertThat(remaining(second)).as("the first's 300 beyond the estimate charged: 1000 - 500 - 200").isEqualTo(300);
            HttpResponse<String> third = app.get(0, "/llm/chat?tokens=200");
            assertThat(remaining(third)).as("the second's 150 under the estimate given back: 1000 - 500 - 50 - 200")
                    .isEqualTo(250);
            HttpResponse<String> otherClient = app.get(0, "/llm/chat?tokens=0", "X-Api-Key", "demo-pro-key");
            assertThat(remaining(otherClient)).as("another client's bucket is its own").isEqualTo(800);
            assertThat(remaining(app.get(0, "/llm/chat?tokens=200"))).as("the third cost its estimate: nothing settled")
                    .isEqualTo(50);
        }
    }

    /**
     * 100 tokens refilling at 10 a second, an estimate of 10: a completion that used 110 leaves the
     * client 10 in debt, so the next request needs 20 tokens, two seconds of refill. It is refused
     * with a {@code Retry-After} of at most those two seconds, and admitted once they have passed, not
     * a second earlier ({@code Retry-After} counts whole seconds, rounded up). A refused request
     * takes nothing: asking meanwhile delays nothing.
     */
    @Test
    default void aClientInDebtIsRefusedUntilTheRefillRepaysItAsRetryAfterSays() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("debt")
                .with("rule.llm.limit", "100", "rule.llm.window", "10s", "rule.llm.cost", "10"), 1)) {
            long sent = System.nanoTime();
            HttpResponse<String> costly = app.get(0, "/llm/chat?tokens=110");
            assertThat(costly.statusCode()).isEqualTo(200);
            assertThat(remaining(costly)).as("its own fields: after the estimate").isEqualTo(90);

            long asked = System.nanoTime();
            HttpResponse<String> refused = app.get(0, "/llm/chat?tokens=10");
            long refusedAt = System.nanoTime();
            long answerMs = (refusedAt - asked) / 1_000_000; // the refusal was decided at most this long before it came
            long sinceFirstMs = (refusedAt - sent) / 1_000_000;
            assertThat(refused.statusCode()).as("in debt after the charge").isEqualTo(429);
            long retryAfter = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
            assertThat(retryAfter)
                    .as("20 tokens to refill at 10 a second, less what refilled in the %d ms since", sinceFirstMs)
                    .isBetween((2_000 - sinceFirstMs + 999) / 1_000, 2L);
            long[] llm = RateLimitField.item(refused, "llm");
            assertThat(llm[0]).isZero();
            assertThat(llm[1]).as("Retry-After is never earlier than the field's t").isLessThanOrEqualTo(retryAfter);
            assertThat(refused.body()).contains("\"violated-policies\":[\"llm\"]");

            long admittedAfterMs = Poll.millisUntil(Duration.ofSeconds(retryAfter + 2), "the debt repaid",
                    () -> app.get(0, "/llm/chat?tokens=10").statusCode() == 200);
            System.out.printf("DEBT %s: Retry-After %d s, admitted %d ms after the refusal%n", container().name(),
                    retryAfter, admittedAfterMs);
            assertThat(admittedAfterMs).as("admitted within Retry-After (and the time to ask), not a second before it")
                    .isBetween(retryAfter * 1_000 - 1_000 - answerMs, retryAfter * 1_000 + 750);
        }
    }

    private static long remaining(HttpResponse<String> response) {
        long r = RateLimitField.item(response, "llm")[0];
        assertThat(response.headers().firstValue("X-RateLimit-Remaining")).hasValue(Long.toString(r));
        return r;
    }
}
