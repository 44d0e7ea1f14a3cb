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
}
