package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.StandardError;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.time.Duration;
import java.time.Period;
import java.time.ZoneId;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Calendar rules on Redis's clock, the real {@code TIME} path: the script counts in the zone's window
 * that holds Redis's time, whatever the instance's clock and default zone say; an instance whose
 * clock is far from Redis's decides in its own window, logs it, and follows Redis's from the next reply.
 */
class RedisEngineCalendarTest {

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    private static Rule daily(ZoneId zone, long limit) {
        return Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(limit).calendar(zone)
                .window(Duration.ofDays(1)).build();
    }

    @Test
    void countsInTheZonesDayAndMonthThatHoldRedissTime() {
        RedisEngine redis = new RedisEngine(jedis, TestRedis.uniquePrefix("calendar-time"), true, Clock.SYSTEM, false);
        ZoneId berlin = ZoneId.of("Europe/Berlin");
        Rule daily = daily(berlin, 2);
        Rule monthly = Rule.builder("monthly").algorithm(Algorithm.FIXED_WINDOW).limit(10_000).calendar(berlin)
                .window(Period.ofMonths(1)).build();
        ClientKey client = ClientKey.parse("alice");
        RedisEngine.Timed first = redis.decideTimed(List.of(new Acquisition(daily, client, 1),
                new Acquisition(monthly, client, 1)));
        long at = first.atMillis();
        CalendarWindows.Window day = daily.calendar().windowAt(at);
        CalendarWindows.Window month = monthly.calendar().windowAt(at);
        RuleDecision d = first.decision().rules().get(0);
        assertThat(d.allowed()).isTrue();
        assertThat(d.windowMs()).isEqualTo(day.lengthMs());
        assertThat(d.resetMs()).isEqualTo(day.endMs() - at);
        assertThat(d.take().ms()).as("the count ends with Berlin's day").isEqualTo(day.endMs());
        RuleDecision m = first.decision().rules().get(1);
        assertThat(m.windowMs()).isEqualTo(month.lengthMs());
        assertThat(m.resetMs()).isEqualTo(month.endMs() - at);
        long ttl = jedis.pttl(redis.key(daily, client));
        assertThat(ttl).isBetween(day.endMs() - at, day.endMs() - at + 1000);

        redis.decide(List.of(new Acquisition(daily, client, 1)));
        RedisEngine.Timed third = redis.decideTimed(List.of(new Acquisition(daily, client, 1)));
        RuleDecision denied = third.decision().rules().get(0);
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.retryAfterMs()).as("until midnight in Berlin").isEqualTo(day.endMs() - third.atMillis());
    }

    @Test
    void anInstanceWhoseClockIsFarFromRedissDecidesInItsOwnWindowOnceLogsItAndThenFollowsRedis() {
        long redisNow = TestRedis.timeMillis(jedis);
        ManualClock clock = new ManualClock(redisNow - Duration.ofDays(10).toMillis()); // ten days behind
        RedisEngine redis = new RedisEngine(jedis, TestRedis.uniquePrefix("calendar-far"), true, clock, false);
        Rule hourly = Rule.builder("hourly").algorithm(Algorithm.FIXED_WINDOW).limit(5).calendar(ZoneId.of("Asia/Kolkata"))
                .window(Duration.ofHours(1)).build();
        ClientKey client = ClientKey.parse("bob");

        StandardError.Captured<RedisEngine.Timed> first;
        try {
            first = StandardError.during(() -> redis.decideTimed(List.of(new Acquisition(hourly, client, 1))));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        RuleDecision d = first.value().decision().rules().get(0);
        CalendarWindows.Window own = hourly.calendar().windowAt(clock.millis());
        assertThat(d.allowed()).isTrue();
        assertThat(d.take().ms()).as("counted in the instance's hour, ten days ago on Redis's clock").isEqualTo(own.endMs());
        assertThat(d.resetMs()).isEqualTo(own.endMs() - clock.millis());
        assertThat(first.text()).contains("Redis's clock").contains("outside the calendar windows").contains("hourly");

        RedisEngine.Timed second = redis.decideTimed(List.of(new Acquisition(hourly, client, 1)));
        CalendarWindows.Window redisHour = hourly.calendar().windowAt(second.atMillis());
        RuleDecision s = second.decision().rules().get(0);
        assertThat(s.take().ms()).as("Redis's hour, from the reply's time on").isEqualTo(redisHour.endMs());
        assertThat(s.remaining()).as("the count of a window long over is not carried").isEqualTo(4);
        assertThat(s.resetMs()).isEqualTo(redisHour.endMs() - second.atMillis());
        assertThat((redisHour.startMs() / 60_000) % 60).as("an hour in Kolkata starts at :30 UTC").isEqualTo(30);
    }
}
