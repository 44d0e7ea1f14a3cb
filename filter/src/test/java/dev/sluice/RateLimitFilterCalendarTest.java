package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A calendar rule's fields as the filter writes them (backend=local, a fake clock): on the day Berlin
 * changes to summer time, {@code w} is 23 hours and {@code t}, {@code Retry-After} and
 * {@code X-RateLimit-Reset} count to midnight there; a plan with its own calendar window shows its month.
 */
class RateLimitFilterCalendarTest {

    private static long ms(String offsetDateTime) {
        return OffsetDateTime.parse(offsetDateTime).toInstant().toEpochMilli();
    }

    @Test
    void aDayOf23HoursInBerlinCountsToMidnightThere() throws Exception {
        ManualClock clock = new ManualClock(ms("2026-03-29T23:00+02:00"));
        RateLimitFilter filter = new RateLimitFilter(clock);
        filter.init(FakeServlet.filterConfig("calendar", FakeServlet.params("rules", "daily", "backend", "local",
                "rule.daily.algorithm", "fixed-window", "rule.daily.limit", "1", "rule.daily.window", "1d",
                "rule.daily.calendar", "Europe/Berlin", "rule.daily.plan", "attr:plan", "rule.daily.plans", "gold",
                "rule.daily.plan.gold.limit", "1000", "rule.daily.plan.gold.window", "1mo")));
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> first = new HashMap<>();
            filter.doFilter(FakeServlet.get("/api/x", "192.0.2.1"), FakeServlet.response(first), chain);
            assertThat(first.get("RateLimit-Policy")).isEqualTo("\"daily\";q=1;w=82800");
            assertThat(first.get("RateLimit")).isEqualTo("\"daily\";r=0;t=3600");
            assertThat(first.get("X-RateLimit-Reset")).isEqualTo("3600");

            clock.set(ms("2026-03-29T23:59:30+02:00"));
            Map<String, String> denied = new HashMap<>();
            filter.doFilter(FakeServlet.get("/api/x", "192.0.2.1"), FakeServlet.response(denied), chain);
            assertThat(denied.get("status")).isEqualTo("429");
            assertThat(denied.get("Retry-After")).isEqualTo("30");
            assertThat(denied.get("RateLimit")).isEqualTo("\"daily\";r=0;t=30");

            Map<String, String> gold = new HashMap<>();
            var request = FakeServlet.get("/api/x", "192.0.2.2");
            request.setAttribute("plan", "gold");
            filter.doFilter(request, FakeServlet.response(gold), chain);
            // March 2026 in Berlin: 31 days less the hour skipped; the month ends in two days and 30 s
            assertThat(gold.get("RateLimit-Policy")).isEqualTo("\"daily\";q=1000;w=2674800");
            assertThat(gold.get("RateLimit")).isEqualTo("\"daily\";r=999;t=" + (2 * 86_400 + 30));
            assertThat(chain.passed).isEqualTo(2);
        } finally {
            filter.destroy();
        }
    }
}
