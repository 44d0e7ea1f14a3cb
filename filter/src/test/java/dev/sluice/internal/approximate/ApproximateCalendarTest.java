package dev.sluice.internal.approximate;

import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.internal.redis.SyncScript;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The approximate mode ({@code sync}) of a calendar rule, with the real sync script: instances share
 * the counts of Berlin's day of 23 hours, which end at midnight there, in the key the exact engine
 * reads too; the next day counts afresh.
 */
class ApproximateCalendarTest {

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    private static long ms(String offsetDateTime) {
        return OffsetDateTime.parse(offsetDateTime).toInstant().toEpochMilli();
    }

    private static ApproximateEngine instance(ManualClock clock, String prefix, String name) {
        return new ApproximateEngine(clock, false, new SyncScript(jedis, false), prefix, 1_000, false, () -> name);
    }

    @Test
    void instancesShareACalendarDaysCountsUntilMidnightInItsZone() {
        ManualClock clock = new ManualClock(ms("2026-03-29T22:00+02:00")); // the day of the change to summer time
        String prefix = TestRedis.uniquePrefix("approx-calendar");
        Rule daily = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(10).calendar(ZoneId.of("Europe/Berlin"))
                .window(Duration.ofDays(1)).sync(Duration.ofSeconds(1)).build();
        List<Acquisition> request = List.of(new Acquisition(daily, ClientKey.parse("k")));
        try (ApproximateEngine a = instance(clock, prefix, "a"); ApproximateEngine b = instance(clock, prefix, "b")) {
            for (int i = 0; i < 6; i++) assertThat(a.decide(request).allowed()).isTrue();
            assertThat(a.sync()).isTrue();
            assertThat(b.decide(request).allowed()).isTrue();
            assertThat(b.sync()).isTrue(); // b learns the fleet's 7
            for (int i = 0; i < 3; i++) assertThat(b.decide(request).allowed()).isTrue();
            Decision denied = b.decide(request);
            assertThat(denied.allowed()).isFalse();
            RuleDecision d = denied.rules().get(0);
            assertThat(d.retryAfter()).as("until midnight in Berlin").isEqualTo(Duration.ofHours(2));
            assertThat(d.windowMs()).as("a day of 23 hours").isEqualTo(23 * 3_600_000L);
            assertThat(b.sync()).isTrue();

            // the exact engine reads the same count, ending at the same midnight
            RedisEngine exact = new RedisEngine(jedis, prefix, false, clock, false);
            RuleDecision e = exact.decide(List.of(new Acquisition(daily.toBuilder().sync(Duration.ZERO).build(),
                    ClientKey.parse("k")))).rules().get(0);
            assertThat(e.allowed()).isFalse();
            assertThat(e.retryAfter()).isEqualTo(Duration.ofHours(2));

            clock.set(ms("2026-03-30T00:00+02:00"));
            Decision next = a.decide(request);
            assertThat(next.allowed()).isTrue();
            assertThat(next.rules().get(0).remaining()).isEqualTo(9);
            assertThat(next.rules().get(0).windowMs()).isEqualTo(24 * 3_600_000L);
        } finally {
            jedis.del(prefix + "{daily:k}");
        }
    }

    /**
     * Found in a review of 0.3's calendar windows: an instance whose last sync of a window went after another's
     * first sync of the next, longer one (the 25-hour day after a 24-hour day, May after April) took the fleet's
     * window to start an hour (a day) late, sync.lua naming it by its end less the instance's own window; its
     * next counts, sent in that window "not begun", were dropped: 9 counted of the 10 admitted. (Since the
     * fix of shortened windows, the late instance's last request of the old window, sent while that window
     * still runs on its clock, joins the fleet's running count as the exact engine counts a lagging caller's:
     * all 10 counted.)
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "a day of 25 hours after one of 24, P1D, 2026-10-25T00:00:01+02:00, 2026-10-24T23:59:59+02:00, 2026-10-25T00:00:30+02:00",
            "May after April, P1M, 2027-05-01T00:00:01+02:00, 2027-04-30T23:59:59+02:00, 2027-05-01T00:00:30+02:00",
            "March after February, P1M, 2027-03-01T00:00:01+01:00, 2027-02-28T23:59:59+01:00, 2027-03-01T00:00:30+01:00",
            "a day of 23 hours after one of 24, P1D, 2027-03-28T00:00:01+01:00, 2027-03-27T23:59:59+01:00, 2027-03-28T00:00:30+01:00"})
    void anInstanceLateIntoALongerOrShorterWindowCountsInTheFleetsWindow(String what, String period, String bAt, String aAt,
                                                                         String aLater) {
        String prefix = TestRedis.uniquePrefix("approx-calendar-late");
        Rule.Builder builder = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(10)
                .calendar(ZoneId.of("Europe/Berlin")).sync(Duration.ofSeconds(1));
        Rule rule = (period.equals("P1D") ? builder.window(Duration.ofDays(1)) : builder.window(java.time.Period.parse(period)))
                .build();
        List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("k")));
        ManualClock bClock = new ManualClock(ms(bAt));
        ManualClock aClock = new ManualClock(ms(aAt)); // 2 s behind b: its window is the one before
        try (ApproximateEngine a = instance(aClock, prefix, "a"); ApproximateEngine b = instance(bClock, prefix, "b")) {
            for (int i = 0; i < 8; i++) assertThat(b.decide(request).allowed()).isTrue();
            assertThat(b.sync()).isTrue(); // the key: 8 in the new window
            assertThat(a.decide(request).allowed()).isTrue(); // a's last request of the window before
            assertThat(a.sync()).isTrue(); // joins the running count (a's window still runs on its clock): 9
            aClock.set(ms(aLater));
            assertThat(a.decide(request).allowed()).isTrue(); // 10 of 10 in the new window
            assertThat(a.sync()).isTrue();

            bClock.set(ms(aLater) + 30_000);
            RedisEngine exact = new RedisEngine(jedis, prefix, false, bClock, false);
            RuleDecision e = exact.decide(List.of(new Acquisition(rule.toBuilder().sync(Duration.ZERO).build(),
                    ClientKey.parse("k")))).rules().get(0);
            assertThat(e.allowed()).as("the fleet's 10 of the window: every admission counted").isFalse();
            assertThat(e.remaining()).isEqualTo(0);
        } finally {
            jedis.del(prefix + "{daily:k}");
        }
    }

    /**
     * Found in reviews of 0.3: a month's count read by calendar weeks (a reload, a plan switch) is named by the
     * week holding its last moment, a week not begun; the approximate mode's counts sent for that week extended
     * the month's count to the week's end, three days into January, where the exact engine ends it with
     * December (second review). And a sync in the second after the month ended, its key kept by the TTL's margin,
     * joined January's first request to December's count and extended it likewise (third review): a count that
     * has ended is not joined any more, as the exact engine reads it.
     */
    @ParameterizedTest(name = "a request synced in January's first second: {0}")
    @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
    void aMonthsCountReadByWeeksEndsWithTheMonthAsTheExactEngineEndsIt(boolean syncedInTheMargin) {
        String prefix = TestRedis.uniquePrefix("approx-calendar-weeks");
        ZoneId utc = ZoneId.of("UTC");
        Rule monthly = Rule.builder("quota").algorithm(Algorithm.FIXED_WINDOW).limit(10).calendar(utc)
                .window(java.time.Period.ofMonths(1)).build();
        Rule weekly = Rule.builder("quota").algorithm(Algorithm.FIXED_WINDOW).limit(10).calendar(utc)
                .window(Duration.ofDays(7)).sync(Duration.ofSeconds(1)).build();
        ManualClock clock = new ManualClock(ms("2026-12-22T12:00Z")); // a Tuesday; the week of 28 December ends in January
        RedisEngine exact = new RedisEngine(jedis, prefix, false, clock, false);
        ClientKey client = ClientKey.parse("k");
        try (ApproximateEngine a = instance(clock, prefix, "a")) {
            for (int i = 0; i < 4; i++) assertThat(exact.decide(List.of(new Acquisition(monthly, client))).allowed()).isTrue();
            List<Acquisition> request = List.of(new Acquisition(weekly, client));
            assertThat(a.decide(request).allowed()).isTrue();
            assertThat(a.sync()).isTrue(); // learns the month's count, named by the week of 28 December
            assertThat(a.decide(request).allowed()).isTrue();
            assertThat(a.sync()).isTrue(); // December: 6, ending with December

            int january = 0;
            if (syncedInTheMargin) {
                clock.set(ms("2027-01-01T00:00:00.300Z"));
                assertThat(a.decide(request).allowed()).isTrue(); // January's first request, in the week of 28 December
                january++;
                clock.set(ms("2027-01-01T00:00:00.400Z"));
                assertThat(a.sync()).isTrue(); // within the margin: December's key still there
            }
            clock.set(ms("2027-01-01T00:00:01Z"));
            RuleDecision e = exact.decide(List.of(new Acquisition(weekly.toBuilder().sync(Duration.ZERO).build(), client)))
                    .rules().get(0);
            assertThat(e.remaining()).as("December's 6 over with December").isEqualTo(10 - january - 1);
        } finally {
            jedis.del(prefix + "{quota:k}");
        }
    }
}
