package dev.sluice.it;

import dev.sluice.it.support.Http;
import dev.sluice.testing.WindowRoom;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What Prometheus reads from the example WAR's {@code /metrics} (Micrometer's Prometheus registry in
 * the global registry, where Sluice registers its meters), the same on every container.
 */
final class PrometheusScrape {

    /** Deploy with these: the api rule covers every path, /metrics included, 2 requests an hour. */
    static final String[] TIGHT_API = {"rule.api.match", "/**", "rule.api.algorithm", "fixed-window",
            "rule.api.limit", "2", "rule.api.window", "1h"};

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)\\{([^}]*)} (\\S+)$", Pattern.MULTILINE);
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"([^\"]*)\"");

    private PrometheusScrape() {
    }

    /**
     * Three API calls (allowed, allowed, denied) and scrapes that are never limited nor counted; the
     * scrape shows the decisions by rule and outcome, who answered them, and the breaker.
     */
    static void scrapeShowsTheDecisions(DeployedWar app, String contextPath, String instance) {
        // TIGHT_API is a fixed window of an hour on Redis's clock: the three calls in one window
        WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(30));
        assertThat(Http.get(app.uri(contextPath + "/api/a")).statusCode()).isEqualTo(200);
        assertThat(Http.get(app.uri(contextPath + "/api/a")).statusCode()).isEqualTo(200);
        assertThat(Http.get(app.uri(contextPath + "/api/a")).statusCode()).isEqualTo(429);
        String scrape = null;
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> metrics = Http.get(app.uri(contextPath + "/metrics"));
            assertThat(metrics.statusCode()).as("/metrics is excluded from the rule that covers /**").isEqualTo(200);
            assertThat(metrics.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/plain");
            scrape = metrics.body();
        }

        assertThat(sample(scrape, "sluice_decisions_total", "instance", instance, "rule", "api", "outcome", "allowed"))
                .isEqualTo(2);
        assertThat(sample(scrape, "sluice_decisions_total", "instance", instance, "rule", "api", "outcome", "denied"))
                .isEqualTo(1);
        assertThat(sample(scrape, "sluice_decisions_total", "instance", instance, "rule", "login", "outcome", "allowed"))
                .as("a rule that never applied").isZero();
        assertThat(sample(scrape, "sluice_decision_latency_seconds_count", "instance", instance, "source", "redis"))
                .isEqualTo(3);
        assertThat(sample(scrape, "sluice_decision_latency_seconds_sum", "instance", instance, "source", "redis"))
                .isPositive();
        assertThat(sampleWith(scrape, "sluice_breaker_state", "instance", instance)).as("the Redis node's breaker: closed")
                .isZero();
    }

    /** The value of the first sample {@code name} that has these labels (name, value, ...) among its own. */
    static double sampleWith(String scrape, String name, String... labels) {
        return find(scrape, name, false, labels);
    }

    /** The value of the sample {@code name} with exactly these labels (name, value, ...). */
    static double sample(String scrape, String name, String... labels) {
        return find(scrape, name, true, labels);
    }

    private static double find(String scrape, String name, boolean exactly, String... labels) {
        Map<String, String> wanted = new LinkedHashMap<>();
        for (int i = 0; i + 1 < labels.length; i += 2) wanted.put(labels[i], labels[i + 1]);
        Matcher m = SAMPLE.matcher(scrape);
        while (m.find()) {
            if (!m.group(1).equals(name)) continue;
            Map<String, String> found = new LinkedHashMap<>();
            Matcher l = LABEL.matcher(m.group(2));
            while (l.find()) found.put(l.group(1), l.group(2));
            if (exactly ? found.equals(wanted) : found.entrySet().containsAll(wanted.entrySet())) {
                return Double.parseDouble(m.group(3));
            }
        }
        throw new AssertionError("no sample " + name + wanted + " in the scrape:\n" + scrape);
    }
}
