package dev.sluice.internal.algorithm.model;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Retry-After, reset and next are truthful, for every algorithm on both engines: a client that
 * waits exactly the advertised {@code retryAfterMs} and retries is admitted, and one that retries
 * a millisecond sooner is not; a full-capacity request is admitted exactly {@code resetMs} after
 * the last decision, and not a millisecond sooner; an allowed rule's {@code remaining} is higher
 * exactly {@code nextMs} later and not a millisecond sooner (and never higher when {@code nextMs}
 * is 0: the quota is full). (The early probes are denied, so they take nothing and do not disturb
 * the late ones; remaining is read with a request no rule can admit, which takes nothing.)
 *
 * <p>{@code -Dsluice.property.sequences=N} sets the sequences per algorithm (default 150 local,
 * a sixth of that on Redis). The seed is fresh for every run; {@code -Dsluice.seed=S} replays one.
 */
class RetryAfterPropertyTest {

    static final int SEQUENCES = Integer.getInteger("sluice.property.sequences", 150);

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void onTheLocalEngine(Algorithm algorithm) {
        check(algorithm, Scenario.Magnitude.SMALL, SEQUENCES, clock -> new LocalEngine(clock, 1_000), null);
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void onRedis(Algorithm algorithm) {
        onRedis(algorithm, Scenario.Magnitude.SMALL, Math.max(1, SEQUENCES / 6));
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void onTheLocalEngineAtLargeMagnitudes(Algorithm algorithm) {
        check(algorithm, Scenario.Magnitude.LARGE, Math.max(1, SEQUENCES / 3), clock -> new LocalEngine(clock, 1_000), null);
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void onRedisAtLargeMagnitudes(Algorithm algorithm) {
        onRedis(algorithm, Scenario.Magnitude.LARGE, Math.max(1, SEQUENCES / 6));
    }

    private void onRedis(Algorithm algorithm, Scenario.Magnitude magnitude, int sequences) {
        Set<String> keys = new HashSet<>();
        try {
            check(algorithm, magnitude, sequences, clock -> new RedisEngine(jedis, TestRedis.uniquePrefix("retry"), false, clock, false), keys);
        } finally {
            if (!keys.isEmpty()) jedis.del(keys.toArray(String[]::new));
        }
    }

    private void check(Algorithm algorithm, Scenario.Magnitude magnitude, int sequences, Function<ManualClock, RateLimiter> engines,
                       Set<String> redisKeys) {
        int[] probes = new int[3];
        for (int i = 0; i < sequences; i++) {
            long seed = TestSeed.get() + magnitude.ordinal() * 7_000_001L + algorithm.ordinal() * 1_000_003L + i;
            for (int attempt = 1; ; attempt++) {
                long started = System.nanoTime();
                int[] counted = new int[3];
                try {
                    sequence(seed, algorithm, magnitude, engines, redisKeys, counted);
                    for (int p = 0; p < probes.length; p++) probes[p] += counted[p];
                    break;
                } catch (AssertionError e) {
                    // Redis expires keys in real time: replay a sequence that outlasted the expiry margin
                    if ((System.nanoTime() - started) / 1_000_000 <= EquivalenceTest.MAX_REAL_MS || attempt == 3) throw e;
                }
            }
        }
        assertThat(probes[0]).as("denials probed").isGreaterThan(sequences);
        assertThat(probes[1]).as("resets probed").isGreaterThan(sequences / 10);
        assertThat(probes[2]).as("nexts probed").isGreaterThan(sequences);
    }

    /** One generated sequence with its probes; counts the retry, reset and next probes into {@code probes}. */
    private static void sequence(long seed, Algorithm algorithm, Scenario.Magnitude magnitude,
                                 Function<ManualClock, RateLimiter> engines, Set<String> redisKeys, int[] probes) {
        Random rnd = new Random(seed);
        List<Rule> rules = new ArrayList<>();
        int ruleCount = 1 + rnd.nextInt(2);
        for (int r = 0; r < ruleCount; r++) {
            rules.add(magnitude == Scenario.Magnitude.SMALL ? Scenario.rule("r" + r, algorithm, rnd) : Scenario.largeRule("r" + r, algorithm, rnd));
        }
        long minWindow = rules.stream().mapToLong(Rule::windowMillis).min().orElseThrow();
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY + rnd.nextInt(120_000));
        StringBuilder log = new StringBuilder(TestSeed.replay()).append(", sequence seed ").append(seed).append(' ').append(rules).append('\n');
        try (RateLimiter engine = engines.apply(clock)) {
            for (int step = 0; step < 40; step++) {
                clock.advance(rnd.nextInt(4) == 0 ? 0 : rnd.nextLong(minWindow + 1));
                List<Acquisition> request = new ArrayList<>();
                for (Rule r : rules) {
                    if (request.isEmpty() && r == rules.get(rules.size() - 1) || rnd.nextBoolean()) {
                        request.add(new Acquisition(r, ClientKey.parse("c"), Scenario.logUniform(rnd, 1, Scenario.capacity(r))));
                    }
                }
                if (redisKeys != null && engine instanceof RedisEngine redis) {
                    for (Acquisition a : request) redisKeys.add(redis.key(a.rule(), a.clientKey()));
                }
                Decision d = engine.decide(request);
                log.append("  t=").append(clock.millis()).append(' ').append(request.stream()
                        .map(a -> a.rule().name() + "x" + a.cost()).toList()).append(" -> ").append(d).append('\n');
                if (!d.allowed()) {
                    long retry = d.retryAfterMs();
                    assertThat(retry).as(log::toString).isPositive();
                    long deniedAt = clock.millis();
                    clock.set(deniedAt + retry - 1);
                    assertThat(engine.decide(request).allowed()).as(() -> "one ms early, after " + (retry - 1) + " ms\n" + log).isFalse();
                    clock.set(deniedAt + retry);
                    assertThat(engine.decide(request).allowed()).as(() -> "after the advertised " + retry + " ms\n" + log).isTrue();
                    probes[0]++;
                } else if (rnd.nextInt(3) == 0) {
                    RuleDecision r = d.rules().get(rnd.nextInt(d.rules().size()));
                    long next = r.nextMs();
                    long decidedAt = clock.millis();
                    if (next > 0) {
                        clock.set(decidedAt + next - 1);
                        assertThat(remaining(engine, r.rule())).as(() -> "remaining one ms before next " + next + " of " + r + "\n" + log)
                                .isEqualTo(r.remaining());
                        clock.set(decidedAt + next);
                        assertThat(remaining(engine, r.rule())).as(() -> "remaining at next " + next + " of " + r + "\n" + log)
                                .isGreaterThan(r.remaining());
                    } else {
                        clock.set(decidedAt + r.resetMs() + r.rule().windowMillis());
                        assertThat(remaining(engine, r.rule())).as(() -> "a full quota stays full, " + r + "\n" + log)
                                .isEqualTo(r.remaining());
                    }
                    probes[2]++;
                } else if (request.size() == 1 && d.rules().get(0).resetMs() > 0 && rnd.nextInt(4) == 0) {
                    Rule r = request.get(0).rule();
                    List<Acquisition> full = List.of(new Acquisition(r, ClientKey.parse("c"), Scenario.capacity(r)));
                    long reset = d.rules().get(0).resetMs();
                    long decidedAt = clock.millis();
                    clock.set(decidedAt + reset - 1);
                    assertThat(engine.decide(full).allowed()).as(() -> "full request one ms before reset " + reset + "\n" + log).isFalse();
                    clock.set(decidedAt + reset);
                    assertThat(engine.decide(full).allowed()).as(() -> "full request at reset " + reset + "\n" + log).isTrue();
                    probes[1]++;
                }
            }
        }
    }

    /** The rule's remaining for client c, read with a request it can never admit (which takes nothing). */
    private static long remaining(RateLimiter engine, Rule rule) {
        RuleDecision d = engine.decide(List.of(new Acquisition(rule, ClientKey.parse("c"), Scenario.capacity(rule) + 1))).rules().get(0);
        assertThat(d.allowed()).isFalse();
        return d.remaining();
    }
}
