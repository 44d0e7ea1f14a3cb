package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.StandardError;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
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
        // the three requests in one of Berlin's days (and months) on Redis's clock: at midnight there a day's
        // quota starts afresh among them
        WindowRoom.awaitOnRedis(Duration.ofSeconds(10), t -> daily.calendar().windowAt(t).endMs());
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

    /**
     * Found in a review of 0.3's calendar windows: a fixed window's limit was bounded by limit x window
     * like a bucket's (2^50 ms: 420,369 a calendar month, 35,030 a year), which a fixed window's
     * arithmetic never forms, so a million tokens a month failed at start. Now any limit up to
     * {@link Rule#MAX_COUNT} per window; a charge past the limit ({@code actual-cost}) is counted in
     * full, here 1.5 million, on Redis and locally alike (before, a month's count was capped at 840,738
     * once charged: a client in debt would have been admitted again).
     */
    @Test
    void aMillionTokensAMonthChargedPastTheLimitRefusesUntilTheMonthEnds() {
        Rule monthly = Rule.builder("tokens").algorithm(Algorithm.FIXED_WINDOW).limit(1_000_000)
                .calendar(ZoneId.of("Europe/Berlin")).window(Period.ofMonths(1)).build();
        Rule yearly = Rule.builder("yearly").algorithm(Algorithm.FIXED_WINDOW).limit(100_000)
                .calendar(ZoneId.of("Europe/Berlin")).window(Period.ofMonths(12)).build();
        ClientKey client = ClientKey.parse("customer=acme");
        long redisNow = TestRedis.timeMillis(jedis);
        ManualClock clock = new ManualClock(redisNow);
        RedisEngine redis = new RedisEngine(jedis, TestRedis.uniquePrefix("calendar-million"), false, clock, false);
        LocalEngine local = new LocalEngine(clock, 1_000);
        CalendarWindows.Window month = monthly.calendar().windowAt(redisNow);
        for (var engine : List.<dev.sluice.limiter.RateLimiter>of(redis, local)) {
            Acquisition estimate = new Acquisition(monthly, client, 1_000);
            RuleDecision taken = engine.decide(List.of(estimate, new Acquisition(yearly, client, 1))).rules().get(0);
            assertThat(taken.allowed()).as("%s: the estimate", engine).isTrue();
            assertThat(taken.remaining()).isEqualTo(999_000);
            engine.settle(List.of(Settlement.ofActualCost(estimate, taken, 1_500_000)));

            RuleDecision after = engine.decide(List.of(new Acquisition(monthly, client, 1))).rules().get(0);
            assertThat(after.allowed()).as("%s: 1.5 million counted, half a million past the limit", engine).isFalse();
            assertThat(after.retryAfterMs()).as("%s: refused until the month ends in Berlin", engine)
                    .isEqualTo(month.endMs() - redisNow);
        }
    }

    /**
     * An instance ten days behind Redis's clock, before any reply corrected its estimate: its windows hold
     * no time of Redis's. The script decides at Redis's time all the same, in an hour from it (the
     * instance's hour being of no use), logs it, and the next call counts in the same count, in Redis's hour.
     */
    @Test
    void anInstanceWhoseClockIsFarFromRedissDecidesAtRedissTimeLogsItAndThenFollowsRedis() {
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
        long at = first.value().atMillis();
        assertThat(d.allowed()).isTrue();
        assertThat(d.take().ms()).as("counted at Redis's time, for an hour from it").isEqualTo(at + 3_600_000L);
        assertThat(d.resetMs()).isEqualTo(3_600_000L);
        long ttl = jedis.pttl(redis.key(hourly, client));
        assertThat(ttl).as("the key ends an hour from Redis's time, not in the instance's past").isBetween(3_598_000L, 3_601_000L);
        assertThat(first.text()).contains("Redis's clock").contains("outside the calendar windows").contains("hourly");

        RedisEngine.Timed second = redis.decideTimed(List.of(new Acquisition(hourly, client, 1)));
        RuleDecision s = second.decision().rules().get(0);
        assertThat(s.remaining()).as("the first request counted, in the count running at Redis's time").isEqualTo(3);
        assertThat(s.take().ms()).as("that count runs to its end, or Redis's hour's if later")
                .isEqualTo(Math.max(at + 3_600_000L, hourly.calendar().windowAt(second.atMillis()).endMs()));
        CalendarWindows.Window redisHour = hourly.calendar().windowAt(second.atMillis());
        assertThat((redisHour.startMs() / 60_000) % 60).as("an hour in Kolkata starts at :30 UTC").isEqualTo(30);
    }

    /**
     * Found in a review of 0.3's calendar windows: an instance days ahead of Redis's clock, at its first call,
     * decided at its own time: it dropped the client's spent count (a fresh quota at once) and wrote a count, and a
     * key, ending days after Redis's time.
     */
    @Test
    void anInstanceDaysAheadNeitherForgetsTheCountNorMovesItIntoTheFuture() {
        String prefix = TestRedis.uniquePrefix("calendar-ahead");
        Rule daily = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(2).calendar(ZoneId.of("UTC"))
                .window(Duration.ofDays(1)).build();
        ClientKey client = ClientKey.parse("carol");
        List<Acquisition> request = List.of(new Acquisition(daily, client, 1));
        // today's quota spent and read again in one UTC day of Redis's clock (not across midnight UTC)
        WindowRoom.awaitOnRedis(Duration.ofSeconds(10), t -> daily.calendar().windowAt(t).endMs());
        RedisEngine good = new RedisEngine(jedis, prefix, true, Clock.SYSTEM, false);
        assertThat(good.decide(request).allowed()).isTrue();
        assertThat(good.decide(request).allowed()).isTrue();
        assertThat(good.decide(request).allowed()).as("today's 2 are spent").isFalse();

        long redisNow = TestRedis.timeMillis(jedis);
        long todayEnd = daily.calendar().windowAt(redisNow).endMs();
        RedisEngine fast = new RedisEngine(jedis, prefix, true, new ManualClock(redisNow + Duration.ofDays(3).toMillis()), false);
        RuleDecision d;
        try {
            d = StandardError.during(() -> fast.decide(request)).value().rules().get(0);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        assertThat(d.allowed()).as("the client spent today's quota on Redis's clock").isFalse();
        assertThat(d.retryAfterMs()).as("until today's end on Redis's clock").isBetween(todayEnd - redisNow - 2_000, todayEnd - redisNow);
        assertThat(jedis.pttl(fast.key(daily, client))).as("the key still ends at today's end (plus a second)")
                .isLessThanOrEqualTo(todayEnd - redisNow + 1000);
    }
}
