package dev.sluice.it;

import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example WAR in Apache Tomcat 11 against a real Redis, driven over HTTP: the same answers as
 * on Jetty ({@link FilterBehaviourIT}), and a WAR whose configuration is wrong never serves.
 */
class FilterBehaviourTomcatIT {

    @Test
    void deploymentLogsThroughTheWarsOwnSlf4jBindingWithoutErrors() throws Exception {
        StandardError.Captured<TomcatWebApp> started = StandardError.during(() -> {
            TomcatWebApp app = TomcatWebApp.start(ExampleWar.params("tc-clean-start"));
            return app;
        });
        try (TomcatWebApp app = started.value()) {
            assertThat(started.text()).as("the WAR's slf4j-simple logs Sluice; no binding of the container's leaks in")
                    .doesNotContain("SLF4J").contains("INFO dev.sluice.RateLimitFilter - Sluice filter 'sluice' started");
        }
    }

    @Test
    void deniedRequestGetsStatusRetryAfterNoStoreRateLimitFieldsAndProblemBody() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start(ExampleWar.params("tc-denial",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "3", "rule.api.window", "1h"))) {
            HttpResponse<String> first = Http.get(app.uri("/api/hello"));
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(first.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
            assertThat(RateLimitField.item(first, "api")[0]).isEqualTo(2);
            assertThat(first.headers().firstValue("X-RateLimit-Remaining")).hasValue("2");

            assertThat(Http.get(app.uri("/api/hello")).statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/hello")).statusCode()).isEqualTo(200);
            HttpResponse<String> denied = Http.get(app.uri("/api/hello"));

            assertThat(denied.statusCode()).isEqualTo(429);
            long retryAfter = Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow());
            assertThat(retryAfter).isBetween(1L, 3600L);
            long[] api = RateLimitField.item(denied, "api");
            assertThat(api[0]).isZero();
            assertThat(api[1]).as("Retry-After is never earlier than the field's t").isBetween(1L, retryAfter);
            assertThat(denied.headers().firstValue("RateLimit-Policy")).hasValue("\"api\";q=3;w=3600");
            assertThat(denied.headers().firstValue("Cache-Control")).hasValue("no-store");
            assertThat(denied.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/problem+json");
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
    void excludedHealthCheckIsNeverLimited() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start(ExampleWar.params("tc-exclude",
                "rule.api.match", "/**", "rule.api.limit", "1", "rule.api.window", "1h"))) {
            for (int i = 0; i < 5; i++) {
                HttpResponse<String> health = Http.get(app.uri("/health"));
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(health.headers().firstValue("RateLimit")).isEmpty();
            }
            assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(200);
            assertThat(Http.get(app.uri("/api/x")).statusCode()).as("the rule matches everything else").isEqualTo(429);
        }
    }

    @Test
    void prometheusScrapesSluicesMetersTaggedWithTheContextPath() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start("/shop", ExampleWar.params("tc-prometheus", PrometheusScrape.TIGHT_API))) {
            PrometheusScrape.scrapeShowsTheDecisions(app, "/shop", "shop/sluice");
        }
    }

    @Test
    void loginRuleLimitsPostsOnly() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start(ExampleWar.params("tc-login"))) {
            for (int i = 0; i < 5; i++) {
                assertThat(Http.post(app.uri("/login")).statusCode()).as("attempt %d", i + 1).isEqualTo(401);
            }
            HttpResponse<String> sixth = Http.post(app.uri("/login"));
            assertThat(sixth.statusCode()).isEqualTo(429);
            assertThat(sixth.body()).contains("\"violated-policies\":[\"login\"]");

            HttpResponse<String> form = Http.get(app.uri("/login"));
            assertThat(form.statusCode()).isEqualTo(200);
            assertThat(form.headers().firstValue("RateLimit")).as("GET /login matches no rule").isEmpty();
        }
    }

    @Test
    void forwardedRequestIsCountedOnce() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start(ExampleWar.params("tc-once", "rule.api.algorithm", "sliding-window-log",
                "rule.api.limit", "4", "rule.api.window", "1h"))) {
            for (int i = 0; i < 4; i++) {
                HttpResponse<String> r = Http.get(app.uri("/forward/x"));
                assertThat(r.statusCode()).as("request %d", i + 1).isEqualTo(200);
                assertThat(r.body()).as("answered by the API servlet").contains("\"path\":\"/x\"");
                assertThat(RateLimitField.item(r, "api")[0]).as("remaining after request %d", i + 1).isEqualTo(3 - i);
            }
            assertThat(Http.get(app.uri("/forward/x")).statusCode()).isEqualTo(429);
        }
    }

    @Test
    void patternsAreRelativeToTheContextPathAndMetricsAreNamedAfterIt() throws Exception {
        ObjectName bean = new ObjectName("dev.sluice:type=RateLimiter,name=shop/sluice");
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        try (TomcatWebApp app = TomcatWebApp.start("/shop", ExampleWar.params("tc-context",
                "rule.api.match", "/**", "rule.api.limit", "1", "rule.api.window", "1h"))) {
            for (int i = 0; i < 3; i++) {
                assertThat(Http.get(app.uri("/shop/health")).statusCode()).as("exclude /health").isEqualTo(200);
            }
            HttpResponse<String> first = Http.get(app.uri("/shop/api/x"));
            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(first.body()).contains("\"path\":\"/x\"");
            assertThat(Http.get(app.uri("/shop/api/x")).statusCode()).isEqualTo(429);

            assertThat(jmx.isRegistered(bean)).as("the filter's MXBean is named after the context path").isTrue();
            assertThat((Long) jmx.getAttribute(bean, "Allowed")).isEqualTo(1);
            assertThat((Long) jmx.getAttribute(bean, "Denied")).isEqualTo(1);
        }
        assertThat(jmx.isRegistered(bean)).as("undeploying the WAR unregisters its MXBeans").isFalse();
    }

    @Test
    void warWithBadValueFailsToDeployAndNeverServes() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.deploy(ExampleWar.params("tc-bad", "rule.api.limit", "-1"))) {
            assertThat(app.available()).as("Tomcat leaves the failed context unavailable").isFalse();
            assertThat(causes(app.startupErrors())).contains("rule.api.limit").contains("'-1'");
            assertThat(app.startupErrors()).as("reported once: Tomcat starts no filter after a failed initializer").hasSize(1);
            assertThat(Http.get(app.uri("/api/x")).statusCode())
                    .as("no unlimited traffic: Tomcat answers for a failed context as for no application").isEqualTo(404);
        }
    }

    @Test
    void warWithUnknownKeyFailsToDeployNamingTheKey() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.deploy(ExampleWar.params("tc-typo", "rule.api.windw", "1m"))) {
            assertThat(app.available()).isFalse();
            assertThat(causes(app.startupErrors())).contains("rule.api.windw").contains("rule.api.window");
            assertThat(Http.get(app.uri("/api/x")).statusCode()).isEqualTo(404);
        }
    }

    /** Every exception Tomcat logged, with its causes. */
    private static String causes(List<Throwable> errors) {
        assertThat(errors).as("Tomcat logged the failure with its exception").isNotEmpty();
        StringBuilder sb = new StringBuilder();
        for (Throwable e : errors) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                sb.append(t).append('\n');
            }
        }
        return sb.toString();
    }
}
