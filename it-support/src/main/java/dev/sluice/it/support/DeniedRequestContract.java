package dev.sluice.it.support;

import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a client sees of a limit on one instance, on every container: the answers past the limit,
 * a {@code GET} rule counting {@code HEAD}, and a request the application forwards (a second dispatch
 * through the filter) counted once.
 */
public interface DeniedRequestContract extends ContainerTest {

    @Test
    default void theRequestPastTheLimitGets429WithEveryFieldAndAProblemBody() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("denial")
                .with("rule.api.algorithm", "sliding-window-log", "rule.api.limit", "5", "rule.api.window", "1h"), 1)) {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> allowed = app.get(0, "/api/hello");
                assertThat(allowed.statusCode()).as("request %d", i + 1).isEqualTo(200);
                assertThat(allowed.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=5;w=3600");
                assertThat(RateLimitField.item(allowed, "api")[0]).isEqualTo(4 - i);
                assertThat(allowed.headers().firstValue("X-RateLimit-Limit")).hasValue("5");
                assertThat(allowed.headers().firstValue("X-RateLimit-Remaining")).hasValue(Integer.toString(4 - i));
            }

            HttpResponse<String> denied = app.get(0, "/api/hello");
            assertThat(denied.statusCode()).isEqualTo(429);
            long retryAfter = Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow());
            assertThat(retryAfter).isBetween(1L, 3600L);
            long[] api = RateLimitField.item(denied, "api");
            assertThat(api[0]).isZero();
            assertThat(api[1]).as("Retry-After is never earlier than the field's t").isBetween(1L, retryAfter);
            assertThat(denied.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=5;w=3600");
            assertThat(denied.headers().firstValue("Cache-Control")).hasValue("no-store");
            assertThat(denied.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
            assertThat(denied.headers().firstValue("X-RateLimit-Limit")).hasValue("5");
            assertThat(denied.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
            assertThat(denied.headers().firstValue("X-RateLimit-Reset")).hasValue(Long.toString(api[1]));
            assertThat(denied.body())
                    .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                    .contains("\"status\":429")
                    .contains("\"violated-policies\":[\"api\"]")
                    .contains("\"retry-after\":" + retryAfter);
        }
    }

    @Test
    default void aGetRuleCountsAndRefusesHeadToo() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("head")
                .with("rule.api.match", "GET /api/**", "rule.api.limit", "2", "rule.api.window", "1h"), 1)) {
            assertThat(app.get(0, "/api/code").statusCode()).isEqualTo(200);
            HttpResponse<String> head = app.send(0, "HEAD", "/api/code", null);
            assertThat(head.statusCode()).as("the servlet answers HEAD from doGet").isEqualTo(200);
            assertThat(RateLimitField.item(head, "api")[0]).as("HEAD counted by the GET rule").isZero();
            assertThat(app.send(0, "HEAD", "/api/code", null).statusCode()).isEqualTo(429);
            assertThat(app.get(0, "/api/code").statusCode()).isEqualTo(429);
        }
    }

    @Test
    default void aForwardedRequestIsCountedOnce() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("once")
                .with("rule.api.algorithm", "sliding-window-log", "rule.api.limit", "4", "rule.api.window", "1h"), 1)) {
            for (int i = 0; i < 4; i++) {
                HttpResponse<String> r = app.get(0, "/forward/x");
                assertThat(r.statusCode()).as("request %d", i + 1).isEqualTo(200);
                assertThat(r.body()).as("answered by the API servlet").contains("\"path\":\"/x\"");
                assertThat(RateLimitField.item(r, "api")[0]).as("remaining after request %d", i + 1).isEqualTo(3 - i);
            }
            assertThat(app.get(0, "/forward/x").statusCode()).isEqualTo(429);
        }
    }
}
