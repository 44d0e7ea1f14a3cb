package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.Http;
import dev.sluice.it.support.RateLimitField;
import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The example WAR in Jetty against a real Redis, driven over HTTP as users drive it: in the ee10
 * environment here, in ee11 in {@link FilterBehaviourEe11IT}.
 */
class FilterBehaviourIT {

    /** The Jetty environment the WAR runs in. */
    WebApp.Environment environment() {
        return new JettyEe10();
    }

    /** Deploys the WAR in {@link #environment()} with these init-params. */
    WebApp start(Map<String, String> params) throws Exception {
        return WebApp.start(environment(), params);
    }

    @Test
    void deploymentLogsThroughTheWarsOwnSlf4jBindingWithoutErrors() throws Exception {
        StandardError.Captured<WebApp> started = StandardError.during(() -> {
            WebApp app = start(ExampleApp.named("clean-start").sluice());
            return app;
        });
        try (WebApp app = started.value()) {
            assertThat(started.text()).as("the WAR's slf4j-simple logs Sluice; no binding of the container's leaks in")
                    .doesNotContain("SLF4J").contains("INFO dev.sluice.RateLimitFilter - Sluice [sluice] started: ");
        }
    }


    @Test
    void allowedResponseTellsWhenMoreQuotaComesNotWhenTheQuotaIsFull() throws Exception {
        // the WAR's 10-a-minute token bucket: after two requests the next token comes in 6 s, a full bucket in 12 s
        try (WebApp app = start(ExampleApp.named("next").with(
                "rule.api.algorithm", "token-bucket", "rule.api.limit", "10", "rule.api.window", "1m").sluice())) {
            Http.get(app.uri("/api/hello"));
            HttpResponse<String> second = Http.get(app.uri("/api/hello"));
            assertThat(second.statusCode()).isEqualTo(200);
            assertThat(RateLimitField.policy(second, "api")).containsExactly(10, 60);
            long[] api = item(second, "api");
            assertThat(api[0]).isEqualTo(8);
            // 6 s less the time between the two requests (rounded up: 6 unless they were a second apart)
            assertThat(api[1]).isBetween(5L, 6L);
            assertThat(second.headers().firstValue("X-RateLimit-Reset")).as("a full bucket 6 s later")
                    .hasValue(Long.toString(api[1] + 6));
        }
    }

    @Test
    void statusCodeIsConfigurable() throws Exception {
        try (WebApp app = start(ExampleApp.named("status").with("status-code", "503",
                "rule.api.limit", "1", "rule.api.window", "1h").sluice())) {
            Http.get(app.uri("/api/a"));
            HttpResponse<String> denied = Http.get(app.uri("/api/a"));
            assertThat(denied.statusCode()).isEqualTo(503);
            assertThat(denied.body()).contains("\"status\":503");
        }
    }



    @Test
    void prometheusScrapesSluicesMetersFromTheExample() throws Exception {
        try (WebApp app = start(ExampleApp.named("prometheus").with(PrometheusScrape.TIGHT_API).sluice())) {
            PrometheusScrape.scrapeShowsTheDecisions(app, "", "sluice");
        }
    }

    @Test
    void exemptClientsAreNeverLimited() throws Exception {
        try (WebApp app = start(ExampleApp.named("exempt").with("exempt-ips", "127.0.0.0/8",
                "rule.api.limit", "1", "rule.api.window", "1h").sluice())) {
            for (int i = 0; i < 5; i++) {
                assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(200);
            }
        }
    }

    @Test
    void spoofedForwardedForFromUntrustedPeerIsIgnored() throws Exception {
        try (WebApp app = start(ExampleApp.named("spoof").with("rule.api.limit", "2", "rule.api.window", "1h").sluice())) {
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "198.51.100.1").statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "198.51.100.2").statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "198.51.100.3").statusCode())
                    .as("a client behind no trusted proxy cannot mint identities with X-Forwarded-For")
                    .isEqualTo(429);
        }
    }

    @Test
    void trustedProxyForwardedForIdentifiesEachClient() throws Exception {
        try (WebApp app = start(ExampleApp.named("trusted").with("trusted-proxies", "127.0.0.1/32",
                "rule.api.limit", "2", "rule.api.window", "1h").sluice())) {
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "203.0.113.1").statusCode()).isEqualTo(200);
            // the right-most address that is not a trusted proxy is the client: the spoofed left entry is ignored
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "10.9.9.9, 203.0.113.1").statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "203.0.113.1").statusCode()).isEqualTo(429);
            assertThat(Http.get(app.uri("/api/x"), "X-Forwarded-For", "203.0.113.2").statusCode())
                    .as("another client behind the same proxy has its own quota").isEqualTo(200);
        }
    }

    @Test
    void rfc7239ForwardedHeaderIdentifiesClients() throws Exception {
        try (WebApp app = start(ExampleApp.named("forwarded").with("trusted-proxies", "127.0.0.1/32",
                "client-ip-header", "Forwarded", "rule.api.limit", "1", "rule.api.window", "1h").sluice())) {
            assertThat(Http.get(app.uri("/api/x"), "Forwarded", "for=\"[2001:db8:cafe::17]:4711\"").statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/x"), "Forwarded", "for=\"[2001:db8:cafe::99]\"").statusCode())
                    .as("IPv6 clients are counted per /64").isEqualTo(429);
            assertThat(Http.get(app.uri("/api/x"), "Forwarded", "for=192.0.2.60;proto=http").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void dryRunNeverBlocksButSendsTheHeaders() throws Exception {
        try (WebApp app = start(ExampleApp.named("dryrun").with("mode", "dry-run",
                "rule.api.limit", "2", "rule.api.window", "1h").sluice())) {
            HttpResponse<String> last = null;
            for (int i = 0; i < 5; i++) {
                last = Http.get(app.uri("/api/x"));
                assertThat(last.statusCode()).isEqualTo(200);
            }
            assertThat(item(last, "api")[0]).isZero();
            assertThat(last.headers().firstValue("X-RateLimit-Remaining")).hasValue("0");
        }
    }


    @Test
    void deniedRequestTakesNothingFromOtherRules() throws Exception {
        try (WebApp app = start(ExampleApp.named("atomic").with("rules", "api, login, exports, llm, site",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "2", "rule.api.window", "1h",
                "rule.site.algorithm", "token-bucket", "rule.site.limit", "100", "rule.site.window", "1h",
                "rule.site.key", "global").sluice())) {
            Http.get(app.uri("/api/x"));
            HttpResponse<String> second = Http.get(app.uri("/api/x"));
            assertThat(item(second, "site")[0]).isEqualTo(98);
            for (int i = 0; i < 5; i++) {
                assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(429);
            }
            HttpResponse<String> other = Http.get(app.uri("/login"));
            assertThat(item(other, "site")[0]).as("five denied api requests took nothing from 'site'").isEqualTo(97);
        }
    }

    @Test
    void warWithBadConfigurationFailsToStart() {
        Map<String, String> params = ExampleApp.named("bad").with("rule.api.limit", "-1").sluice();
        assertThatThrownBy(() -> start(params).close())
                .satisfies(e -> assertThat(causes(e)).contains("rule.api.limit").contains("-1"));
    }

    @Test
    void warWithUnknownKeyFailsToStart() {
        Map<String, String> params = ExampleApp.named("typo").with("rule.api.windw", "1m").sluice();
        assertThatThrownBy(() -> start(params).close())
                .satisfies(e -> assertThat(causes(e)).contains("rule.api.windw"));
    }

    /** r and t of the rule's item in the RateLimit field. */
    static long[] item(HttpResponse<String> response, String rule) {
        return RateLimitField.item(response, rule);
    }

    private static String causes(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            sb.append(t).append('\n');
        }
        return sb.toString();
    }
}
