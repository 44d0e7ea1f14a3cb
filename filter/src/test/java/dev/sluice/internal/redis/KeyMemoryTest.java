package dev.sluice.internal.redis;

import dev.sluice.testing.Rates;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.ScanParams;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What one client of one rule costs in Redis, per algorithm: {@code MEMORY USAGE} of its key after
 * a typical sequence (the figures of docs/algorithms.md), and its TTL: the time until the state
 * is back to full plus at most the one-second margin. On a Redis of the test's own, so the key
 * names are the production ones ({@code rl:{api:ip=203.0.113.7}}).
 */
class KeyMemoryTest {

    private static final String CLIENT = "ip=203.0.113.7";
    private static RedisProcess redis;
    private static JedisPooled jedis;

    @BeforeAll
    static void start() {
        redis = RedisProcess.start();
        jedis = new JedisPooled(URI.create(redis.url()));
    }

    @AfterAll
    static void stop() {
        jedis.close();
        redis.close();
    }

    /** The key's bytes after {@code requests} requests of {@code cost} one {@code gapMs} apart, the last decision, and its TTL. */
    private record Measure(long bytes, RuleDecision last, long pttl, int admitted) {
    }

    private Measure measure(Rule rule, int requests, long gapMs, long cost) {
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY + 7_000);
        RedisEngine engine = new RedisEngine(jedis, "rl:", false, clock, false);
        String key = engine.key(rule, ClientKey.parse(CLIENT));
        jedis.del(key);
        RuleDecision last = null;
        int admitted = 0;
        for (int i = 0; i < requests; i++) {
            last = engine.decide(List.of(new Acquisition(rule, ClientKey.parse(CLIENT), cost))).rules().get(0);
            if (last.allowed()) admitted += (int) cost;
            clock.advance(gapMs);
        }
        clock.advance(-gapMs);
        RuleDecision probe = engine.decide(List.of(new Acquisition(rule, ClientKey.parse(CLIENT), 1_000_000_000L))).rules().get(0);
        long bytes = jedis.memoryUsage(key, 0);
        long pttl = jedis.pttl(key);
        return new Measure(bytes, probe, pttl, admitted);
    }

    private static Rule rule(Algorithm algorithm, long limit, Duration window, Duration maxDelay) {
        return new Rule("api", algorithm, limit, window, limit, 1, FailurePolicy.OPEN, limit, maxDelay);
    }

    @Test
    void bytesPerKeyAndExpiryWhenBackToFullForEachAlgorithm() {
        Measure[] typical = new Measure[Algorithm.values().length];
        StringBuilder table = new StringBuilder("\nkey rl:{api:ip=203.0.113.7}, limit 100 per 60 s, 50 requests 100 ms apart\n")
                .append(String.format(Locale.ROOT, "%-24s %8s %10s %10s %9s%n", "algorithm", "bytes", "reset ms", "PTTL ms", "admitted"));
        for (Algorithm algorithm : Rates.ALL) {
            Duration maxDelay = algorithm == Algorithm.LEAKY_BUCKET ? Duration.ofSeconds(30) : Duration.ZERO;
            Measure m = measure(rule(algorithm, 100, Duration.ofMinutes(1), maxDelay), 50, 100, 1);
            typical[algorithm.ordinal()] = m;
            table.append(String.format(Locale.ROOT, "%-24s %8d %10d %10d %9d%n", algorithm.id(), m.bytes, m.last.resetMs(), m.pttl, m.admitted));
        }
        long[] limits = {1_000, 10_000};
        Measure[] logs = new Measure[limits.length];
        for (int i = 0; i < limits.length; i++) {
            Measure log = measure(rule(Algorithm.SLIDING_WINDOW_LOG, limits[i], Duration.ofMinutes(1), Duration.ZERO), 100, 1, limits[i] / 100);
            logs[i] = log;
            table.append(String.format(Locale.ROOT, "%-24s %8d %10d %10d %9d   (limit %d, full: 100 requests of cost %d)%n",
                    "sliding-window-log", log.bytes, log.last.resetMs(), log.pttl, log.admitted, limits[i], limits[i] / 100));
        }
        System.out.println(table);

        for (Algorithm algorithm : Rates.ALL) {
            Measure m = typical[algorithm.ordinal()];
            assertThat(m.admitted).as(algorithm.id()).isEqualTo(50);
            assertThat(m.last.resetMs()).as(algorithm.id()).isPositive();
            // expires when back to full, plus at most a second (less the few ms the test took)
            assertThat(m.pttl).as(algorithm.id()).isBetween(m.last.resetMs(), m.last.resetMs() + 1_000);
            if (algorithm == Algorithm.SLIDING_WINDOW_LOG) {
                assertThat(m.bytes).as("%s, 50 entries in a listpack", algorithm.id()).isLessThan(50 * 24 + 200);
            } else {
                assertThat(m.bytes).as("%s keeps one small string", algorithm.id()).isLessThanOrEqualTo(128);
            }
        }
        for (int i = 0; i < limits.length; i++) {
            assertThat(logs[i].admitted).isEqualTo((int) limits[i]);
            assertThat(logs[i].bytes).as("a skiplist entry per token").isLessThan(limits[i] * 128);
        }
        assertThat(jedis.scan(ScanParams.SCAN_POINTER_START).getResult()).as("one key per rule per client").hasSize(1);
    }
}
