package dev.sluice.it.support;

import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Calendar rules ({@code rule.<r>.calendar}) on every container: a day in Berlin and a month in New
 * York show, in {@code RateLimit-Policy}'s {@code w}, the length of the zone's current day and month
 * on Redis's clock (a day of 23 or 25 hours across a daylight-saving change, a February of 28 days),
 * and {@code t}, {@code Retry-After} and {@code X-RateLimit-Reset} count to midnight there, whatever
 * the server's own time zone.
 */
public interface CalendarContract extends ContainerTest {

    ZoneId BERLIN = ZoneId.of("Europe/Berlin");
    ZoneId NEW_YORK = ZoneId.of("America/New_York");

    @Test
    default void aDayInBerlinAndAMonthInNewYorkCountToTheirRealEnds() throws Exception {
        ExampleApp calendar = ExampleApp.named("calendar").with("rules", "api, login, exports, llm, daily, monthly",
                "rule.daily.algorithm", "fixed-window", "rule.daily.limit", "1", "rule.daily.window", "1d",
                "rule.daily.calendar", "Europe/Berlin", "rule.daily.match", "/api/**",
                "rule.monthly.algorithm", "fixed-window", "rule.monthly.limit", "1000", "rule.monthly.window", "1mo",
                "rule.monthly.calendar", "America/New_York", "rule.monthly.match", "/api/**");
        try (Deployment app = container().deploy(calendar, 1);
             JedisPooled redis = new JedisPooled(URI.create(calendar.redisUrl()))) {
            // both requests in one day of Berlin's and one month of New York's (a midnight between them
            // would start the count afresh and move every figure)
            WindowRoom.awaitOnRedis(Duration.ofSeconds(30), t -> Math.min(dayOf(t, BERLIN)[1], monthOf(t, NEW_YORK)[1]));
            long before = TestRedis.timeMillis(redis);
            HttpResponse<String> first = Http.get(app.uri(0, "/api/calendar"));
            HttpResponse<String> second = Http.get(app.uri(0, "/api/calendar"));
            long after = TestRedis.timeMillis(redis);
            long[] day = dayOf(before, BERLIN);
            long[] month = monthOf(before, NEW_YORK);
            assertThat(after).as("both requests in one day of Berlin's and one month of New York's")
                    .isLessThan(Math.min(day[1], month[1]));

            assertThat(first.statusCode()).isEqualTo(200);
            assertThat(RateLimitField.policy(first, "daily")).as("q and w of Berlin's day")
                    .containsExactly(1, (day[1] - day[0]) / 1000);
            assertThat(RateLimitField.policy(first, "monthly")).as("q and w of New York's month")
                    .containsExactly(1000, (month[1] - month[0]) / 1000);
            assertThat(RateLimitField.item(first, "daily")[1]).as("t: until midnight in Berlin")
                    .isBetween(ceilSeconds(day[1] - after), ceilSeconds(day[1] - before));
            assertThat(RateLimitField.item(first, "monthly")[1]).as("t: until the 1st in New York")
                    .isBetween(ceilSeconds(month[1] - after), ceilSeconds(month[1] - before));

            assertThat(second.statusCode()).isEqualTo(429);
            long retryAfter = Long.parseLong(second.headers().firstValue("Retry-After").orElseThrow());
            assertThat(retryAfter).as("Retry-After: until midnight in Berlin")
                    .isBetween(ceilSeconds(day[1] - after), ceilSeconds(day[1] - before));
            assertThat(Long.parseLong(second.headers().firstValue("X-RateLimit-Reset").orElseThrow())).isEqualTo(retryAfter);
        }
    }

    /** {start, end} in ms of the zone's calendar day holding {@code ms}. */
    private static long[] dayOf(long ms, ZoneId zone) {
        LocalDate d = Instant.ofEpochMilli(ms).atZone(zone).toLocalDate();
        return new long[] {d.atStartOfDay(zone).toInstant().toEpochMilli(),
                d.plusDays(1).atStartOfDay(zone).toInstant().toEpochMilli()};
    }

    /** {start, end} in ms of the zone's calendar month holding {@code ms}. */
    private static long[] monthOf(long ms, ZoneId zone) {
        LocalDate first = Instant.ofEpochMilli(ms).atZone(zone).toLocalDate().withDayOfMonth(1);
        return new long[] {first.atStartOfDay(zone).toInstant().toEpochMilli(),
                first.plusMonths(1).atStartOfDay(zone).toInstant().toEpochMilli()};
    }

    private static long ceilSeconds(long ms) {
        return (ms + 999) / 1000;
    }
}
