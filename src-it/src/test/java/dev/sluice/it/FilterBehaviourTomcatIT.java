package dev.sluice.it;

import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.Http;
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
            TomcatWebApp app = TomcatWebApp.start(ExampleApp.named("tc-clean-start").sluice());
            return app;
        });
        try (TomcatWebApp app = started.value()) {
            assertThat(started.text()).as("the WAR's slf4j-simple logs Sluice; no binding of the container's leaks in")
                    .doesNotContain("SLF4J").contains("INFO dev.sluice.RateLimitFilter - Sluice [sluice] started: ");
        }
    }



    @Test
    void prometheusScrapesSluicesMetersTaggedWithTheContextPath() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.start("/shop", ExampleApp.named("tc-prometheus").with(PrometheusScrape.TIGHT_API).sluice())) {
            PrometheusScrape.scrapeShowsTheDecisions(app, "/shop", "shop/sluice");
        }
    }



    @Test
    void patternsAreRelativeToTheContextPathAndMetricsAreNamedAfterIt() throws Exception {
        ObjectName bean = new ObjectName("dev.sluice:type=RateLimiter,name=shop/sluice");
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        try (TomcatWebApp app = TomcatWebApp.start("/shop", ExampleApp.named("tc-context").with(
                "rule.api.match", "/**", "rule.api.limit", "1", "rule.api.window", "1h").sluice())) {
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
        try (TomcatWebApp app = TomcatWebApp.deploy(ExampleApp.named("tc-bad").with("rule.api.limit", "-1").sluice())) {
            assertThat(app.available()).as("Tomcat leaves the failed context unavailable").isFalse();
            assertThat(causes(app.startupErrors())).contains("rule.api.limit").contains("'-1'");
            assertThat(app.startupErrors()).as("reported once: Tomcat starts no filter after a failed initializer").hasSize(1);
            assertThat(Http.get(app.uri("/api/x")).statusCode())
                    .as("no unlimited traffic: Tomcat answers for a failed context as for no application").isEqualTo(404);
        }
    }

    @Test
    void warWithUnknownKeyFailsToDeployNamingTheKey() throws Exception {
        try (TomcatWebApp app = TomcatWebApp.deploy(ExampleApp.named("tc-typo").with("rule.api.windw", "1m").sluice())) {
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
