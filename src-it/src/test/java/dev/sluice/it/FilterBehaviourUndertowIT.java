package dev.sluice.it;

import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The example WAR in Undertow, WildFly's servlet container, against a real Redis. Undertow
 * initializes filters at their first request; a WAR whose configuration is wrong must still fail
 * its deployment, never be reported deployed and then answer 500s.
 */
class FilterBehaviourUndertowIT {

    @Test
    void deploymentLogsThroughTheWarsOwnSlf4jBindingWithoutErrors() throws Exception {
        StandardError.Captured<UndertowWebApp> started = StandardError.during(() -> {
            UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-clean-start"));
            Http.get(app.uri("/api/hello")); // Undertow starts the filter at its first request
            return app;
        });
        try (UndertowWebApp app = started.value()) {
            assertThat(started.text()).as("the WAR's slf4j-simple logs Sluice; no binding of the container's leaks in")
                    .doesNotContain("SLF4J").contains("INFO dev.sluice.RateLimitFilter - Sluice filter 'sluice' started");
        }
    }

    @Test
    void warDeploysAndLimits() throws Exception {
        try (UndertowWebApp app = UndertowWebApp.start(ExampleWar.params("ut-limits",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "3", "rule.api.window", "1h"))) {
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> allowed = Http.get(app.uri("/api/hello"));
                assertThat(allowed.statusCode()).isEqualTo(200);
                assertThat(RateLimitField.item(allowed, "api")[0]).isEqualTo(2 - i);
            }
            HttpResponse<String> denied = Http.get(app.uri("/api/hello"));
            assertThat(denied.statusCode()).isEqualTo(429);
            assertThat(Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow())).isBetween(1L, 3600L);
            assertThat(denied.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
            assertThat(Http.get(app.uri("/health")).statusCode()).as("excluded").isEqualTo(200);
        }
    }

    @Test
    void warWithBadValueFailsItsDeployment() {
        Map<String, String> params = ExampleWar.params("ut-bad", "rule.api.limit", "-1");
        assertThatThrownBy(() -> UndertowWebApp.start(params).close())
                .as("the deployment itself fails, before any request")
                .satisfies(e -> assertThat(causes(e)).contains("rule.api.limit").contains("'-1'"));
    }

    @Test
    void warWithUnknownKeyFailsItsDeploymentNamingTheKey() {
        Map<String, String> params = ExampleWar.params("ut-typo", "rule.api.windw", "1m");
        assertThatThrownBy(() -> UndertowWebApp.start(params).close())
                .satisfies(e -> assertThat(causes(e)).contains("rule.api.windw").contains("rule.api.window"));
    }

    private static String causes(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            sb.append(t).append('\n');
        }
        return sb.toString();
    }
}
