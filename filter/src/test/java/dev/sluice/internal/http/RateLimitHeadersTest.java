package dev.sluice.internal.http;

import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.RuleDecision.Source;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RateLimitHeadersTest {

    static final Rule API = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
    static final Rule LOGIN = Rule.of("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));

    @Test
    void draftFieldsListEveryRuleThatAppliedInOrder() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 42, 0, 16_200, 0, Source.REDIS),
                new RuleDecision(LOGIN, true, 4, 0, 59_001, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.DRAFT, d);
        assertThat(h).containsEntry("RateLimit-Policy", "\"api\";q=100;w=60, \"login\";q=5;w=60")
                .containsEntry("RateLimit", "\"api\";r=42;t=17, \"login\";r=4;t=60")
                .doesNotContainKey("X-RateLimit-Limit");
    }

    @Test
    void legacyFieldsShowTheRuleClosestToItsLimit() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 42, 0, 16_200, 0, Source.REDIS),
                new RuleDecision(LOGIN, true, 1, 0, 30_000, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.LEGACY, d);
        assertThat(h).containsEntry("X-RateLimit-Limit", "5").containsEntry("X-RateLimit-Remaining", "1")
                .containsEntry("X-RateLimit-Reset", "30").doesNotContainKey("RateLimit");
    }

    @Test
    void denyingRulesTIsItsRetryAfterAndAtLeastOneSecond() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 99, 0, 600, 0, Source.REDIS),
                new RuleDecision(LOGIN, false, 0, 120, 40_000, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.BOTH, d);
        assertThat(h).containsEntry("RateLimit", "\"api\";r=99;t=1, \"login\";r=0;t=1")
                .containsEntry("X-RateLimit-Limit", "5").containsEntry("X-RateLimit-Reset", "1");
        assertThat(RateLimitHeaders.retryAfterSeconds(d.retryAfterMs())).isEqualTo(1);
    }

    @Test
    void noneWritesNothing() {
        Decision d = Decision.of(List.of(new RuleDecision(API, false, 0, 5_000, 5_000, 0, Source.REDIS)));
        assertThat(write(HeaderStyle.NONE, d)).isEmpty();
    }

    @Test
    void problemBodyNamesTheViolatedRules() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 99, 0, 600, 0, Source.REDIS),
                new RuleDecision(LOGIN, false, 0, 17_000, 40_000, 0, Source.REDIS)));
        String body = QuotaExceededProblem.body(d, 429, 17);
        assertThat(body).startsWith("{").endsWith("}")
                .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                .contains("\"status\":429").contains("\"violated-policies\":[\"login\"]")
                .contains("\"retry-after\":17").doesNotContain("\"api\"");
    }

    /** Writes the headers onto a response that records them. */
    static Map<String, String> write(HeaderStyle style, Decision d) {
        Map<String, String> headers = new LinkedHashMap<>();
        HttpServletResponse response = (HttpServletResponse) Proxy.newProxyInstance(
                RateLimitHeadersTest.class.getClassLoader(), new Class<?>[]{HttpServletResponse.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("setHeader")) {
                        headers.put((String) args[0], (String) args[1]);
                        return null;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        List<String> policies = d.rules().stream().map(r -> RateLimitHeaders.policyItem(r.rule())).toList();
        new RateLimitHeaders(style).write(response, d, policies);
        return headers;
    }
}
