package dev.sluice.internal.approximate;

import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.internal.redis.SyncScript;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The approximate mode ({@code sync}) when a rule's window changes while a client's count runs (a reload, a
 * plan switch), with the real sync script on Redis: the count that runs goes on applying until its end, as
 * the exact engine reads it, and every admission is counted in it.
 *
 * <p>Found in a review of 0.3: after a window was made shorter (a minute to a second), the script named the
 * stored minute's count by its end less one second, a window "not begun"; the instance took it for the
 * fleet's window, counted there, and each of its later syncs was dropped as counts for a window to come. One
 * instance admitted 255 requests in 5 seconds under a limit of 10 a second, none of them counted.
 */
class ApproximateWindowChangeTest {

    private static final long SYNC_MS = 100;
    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    private static Rule rule(Algorithm algorithm, int limit, Duration window) {
        return Rule.builder("api").algorithm(algorithm).limit(limit).window(window).sync(Duration.ofMillis(SYNC_MS)).build();
    }

    private static ApproximateEngine engine(ManualClock clock, CountExchange exchange, String prefix) {
        return new ApproximateEngine(clock, false, exchange, prefix, 1_000, false, () -> "test");
    }

    /** Twenty requests, then a sync, every 100 ms for {@code ms}: how many were admitted. */
    private static int load(ApproximateEngine instance, ManualClock clock, Rule rule, long ms) {
        List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("ip=10.0.0.1")));
        int admitted = 0;
        for (long t = 0; t < ms; t += SYNC_MS) {
            for (int i = 0; i < 20; i++) {
                if (instance.decide(request).allowed()) admitted++;
            }
            assertThat(instance.sync()).isTrue();
            clock.advance(SYNC_MS);
        }
        return admitted;
    }

    /** The count the key holds now (the current count, for the counter). */
    private static long stored(String key) {
        byte[] state = jedis.get(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return (long) ByteBuffer.wrap(state).order(ByteOrder.LITTLE_ENDIAN).getDouble(9);
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER"})
    void aWindowMadeShorterWhileACountRunsCountsEveryAdmissionInIt(Algorithm algorithm) {
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY + 10_000);
        String prefix = TestRedis.uniquePrefix("approx-shorter");
        String key = prefix + "{api:ip=10.0.0.1}";
        try (ApproximateEngine instance = engine(clock, new SyncScript(jedis, false), prefix)) {
            int before = load(instance, clock, rule(algorithm, 30, Duration.ofMinutes(1)), 300);
            assertThat(before).isEqualTo(30);

            Rule shorter = rule(algorithm, 10, Duration.ofSeconds(1)); // reloaded: 10 a second
            int after = load(instance, clock, shorter, 5_000);
            assertThat(after).as("within the bound for one instance: at most the limit per second").isLessThanOrEqualTo(50);
            assertThat(stored(key)).as("every admission counted in the count that runs").isEqualTo(30L + after);

            RuleDecision exact = new RedisEngine(jedis, prefix, false, clock, false)
                    .decide(List.of(new Acquisition(shorter.toBuilder().sync(Duration.ZERO).build(), ClientKey.parse("ip=10.0.0.1"))))
                    .rules().get(0);
            assertThat(exact.allowed()).as("the exact engine reads the same count").isFalse();
        } finally {
            jedis.del(key);
        }
    }

    /**
     * Found in a second review of 0.3: the first sync after the window was made shorter answers with the stored
     * minute's count, named by its end less a second; requests admitted while that sync was in flight were
     * counted in the second that runs and were dropped when the instance moved to the fleet's window.
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER"})
    void admissionsWhileTheFirstSyncAfterAShorterWindowIsInFlightAreCounted(Algorithm algorithm) {
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY + 10_000);
        String prefix = TestRedis.uniquePrefix("approx-inflight");
        String key = prefix + "{api:ip=10.0.0.1}";
        SyncScript script = new SyncScript(jedis, false);
        Runnable[] whileInFlight = {() -> { }};
        CountExchange exchange = (deltas, now) -> {
            whileInFlight[0].run();
            return script.exchange(deltas, now);
        };
        try (ApproximateEngine instance = engine(clock, exchange, prefix)) {
            assertThat(load(instance, clock, rule(algorithm, 30, Duration.ofMinutes(1)), 200)).isEqualTo(30);

            Rule shorter = rule(algorithm, 10, Duration.ofSeconds(1)); // reloaded: 10 a second
            List<Acquisition> request = List.of(new Acquisition(shorter, ClientKey.parse("ip=10.0.0.1")));
            int[] admitted = {0};
            Runnable five = () -> {
                for (int i = 0; i < 5; i++) {
                    if (instance.decide(request).allowed()) admitted[0]++;
                }
            };
            five.run();
            whileInFlight[0] = five;
            assertThat(instance.sync()).isTrue();
            whileInFlight[0] = () -> { };
            assertThat(admitted[0]).as("the second's limit, the minute's count not yet known").isEqualTo(10);
            assertThat(instance.sync()).isTrue();
            assertThat(stored(key)).as("every admission counted in the count that runs").isEqualTo(30L + admitted[0]);
        } finally {
            jedis.del(key);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER"})
    void aWindowMadeLongerKeepsTheCountOfTheShorterOne(Algorithm algorithm) {
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY + 10_000);
        String prefix = TestRedis.uniquePrefix("approx-longer");
        String key = prefix + "{api:ip=10.0.0.1}";
        try (ApproximateEngine instance = engine(clock, new SyncScript(jedis, false), prefix)) {
            assertThat(load(instance, clock, rule(algorithm, 8, Duration.ofSeconds(1)), 300)).isEqualTo(8);

            Rule longer = rule(algorithm, 10, Duration.ofMinutes(1)); // reloaded: 10 a minute
            int after = load(instance, clock, longer, 5_000);
            assertThat(stored(key)).as("every admission counted, the second's 8 with them").isEqualTo(8L + after);
            assertThat(8 + after).as("the second's count kept in the minute's: at most the limit and one sync's overshoot")
                    .isLessThanOrEqualTo(10 + 10);
        } finally {
            jedis.del(key);
        }
    }
}
