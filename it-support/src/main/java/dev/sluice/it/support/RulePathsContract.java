package dev.sluice.it.support;

import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The paths and methods the example's rules cover and those they do not. src-it runs it on every
 * embedded container; dist-it does not: which rule matches is Sluice's own reading of the request's
 * path and method, and each deployment in a distribution costs seconds.
 */
public interface RulePathsContract extends ContainerTest {

    @Test
    default void anExcludedHealthCheckIsNeverLimited() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("exclude")
                .with("rule.api.match", "/**", "rule.api.limit", "1", "rule.api.window", "1h"), 1)) {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> health = app.get(0, "/health");
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(health.headers().firstValue("RateLimit")).isEmpty();
            }
            assertThat(app.get(0, "/api/x").statusCode()).isEqualTo(200);
            assertThat(app.get(0, "/api/x").statusCode()).as("the rule matches everything else").isEqualTo(429);
        }
    }

    @Test
    default void theLoginRuleLimitsPostsOnly() throws Exception {
        // a fixed window of an hour, not the WAR's minute, and six posts started with a minute or more of
        // Redis's hour left: posts on either side of a window's end are counted apart (all six pass)
        try (Deployment app = container().deploy(ExampleApp.named("login").with("rule.login.window", "1h"), 1)) {
            WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofMinutes(1));
            for (int i = 0; i < 5; i++) {
                assertThat(Http.post(app.uri(0, "/login")).statusCode()).as("attempt %d", i + 1).isEqualTo(401);
            }
            HttpResponse<String> sixth = Http.post(app.uri(0, "/login"));
            assertThat(sixth.statusCode()).isEqualTo(429);
            assertThat(sixth.body()).contains("\"violated-policies\":[\"login\"]");

            HttpResponse<String> form = app.get(0, "/login");
            assertThat(form.statusCode()).isEqualTo(200);
            assertThat(form.headers().firstValue("RateLimit")).as("GET /login matches no rule").isEmpty();
        }
    }
}
