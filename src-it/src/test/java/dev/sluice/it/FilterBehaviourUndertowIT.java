package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.Http;
import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.Test;

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
            UndertowWebApp app = UndertowWebApp.start(ExampleApp.named("ut-clean-start").sluice());
            Http.get(app.uri("/api/hello")); // Undertow starts the filter at its first request
            return app;
        });
        try (UndertowWebApp app = started.value()) {
            assertThat(started.text()).as("the WAR's slf4j-simple logs Sluice; no binding of the container's leaks in")
                    .doesNotContain("SLF4J").contains("INFO dev.sluice.RateLimitFilter - Sluice [sluice] started: ");
        }
    }


    @Test
    void warWithBadValueFailsItsDeployment() {
        Map<String, String> params = ExampleApp.named("ut-bad").with("rule.api.limit", "-1").sluice();
        assertThatThrownBy(() -> UndertowWebApp.start(params).close())
                .as("the deployment itself fails, before any request")
                .satisfies(e -> assertThat(causes(e)).contains("rule.api.limit").contains("'-1'"));
    }

    @Test
    void warWithUnknownKeyFailsItsDeploymentNamingTheKey() {
        Map<String, String> params = ExampleApp.named("ut-typo").with("rule.api.windw", "1m").sluice();
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
