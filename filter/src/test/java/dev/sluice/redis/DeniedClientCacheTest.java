package dev.sluice.redis;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class DeniedClientCacheTest {

    private static final long MS = 1_000_000L;

    private final Rule bucket = Rule.of("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10));
    private final Rule window = Rule.of("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));

    /** Fake monotonic clock in nanoseconds; its millisecond reading is also "Redis's clock". */
    private long nanos = 1_000 * MS;

    @Test
    void deniedClientIsAnsweredLocallyUntilRetryAfter() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);

        assertThat(cache.decide(one(bucket, "ip=1")).allowed()).isFalse();
        nanos += 400 * MS;
        Decision local = cache.decide(one(bucket, "ip=1"));

        assertThat(local.allowed()).isFalse();
        assertThat(local.retryAfterMs()).isEqualTo(600);
        assertThat(redis.calls).isEqualTo(1);
        assertThat(cache.hits()).isEqualTo(1);
    }

    @Test
    void asksRedisAgainOnceTheWaitIsOverMinusTheRoundingMargin() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(one(bucket, "ip=1"));

        nanos += 1000 * MS - DeniedClientCache.MARGIN_NANOS - 1;
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(1);

        nanos += 1;
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void otherClientsAndAdmittedRequestsAlwaysGoToRedis() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(one(bucket, "ip=1"));

        redis.allowAll();
        assertThat(cache.decide(one(bucket, "ip=2")).allowed()).isTrue();
        assertThat(cache.decide(one(bucket, "ip=2")).allowed()).isTrue();
        assertThat(redis.calls).isEqualTo(3);
    }

    @Test
    void aCheaperRequestIsNotDeniedByACostlierOnesDenial() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(List.of(new Acquisition(bucket, "ip=1", 5)));

        cache.decide(List.of(new Acquisition(bucket, "ip=1", 1)));
        assertThat(redis.calls).isEqualTo(2);

        redis.allowAll();
        cache.decide(List.of(new Acquisition(bucket, "ip=1", 5)));
        cache.decide(List.of(new Acquisition(bucket, "ip=1", 6)));
        assertThat(redis.calls).as("the cost-1 denial covers costs 5 and 6").isEqualTo(2);
    }

    @Test
    void aMultiRuleRequestIsReplayedWithEveryRulesFigures() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        List<Acquisition> both = List.of(new Acquisition(bucket, "ip=1"), new Acquisition(window, "user=a"));
        cache.decide(both);

        nanos += 10_000 * MS;
        Decision local = cache.decide(both);

        assertThat(redis.calls).isEqualTo(1);
        assertThat(local.rules()).extracting(r -> r.rule().name()).containsExactly("api", "login");
        assertThat(local.rules().get(0).allowed()).isTrue();
        assertThat(local.violated()).extracting(r -> r.rule().name()).containsExactly("login");
        assertThat(local.retryAfterMs()).isEqualTo(20_000);
    }

    @Test
    void aRequestWithOtherRulesThanTheDeniedOneGoesToRedis() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(List.of(new Acquisition(bucket, "ip=1"), new Acquisition(window, "user=a")));

        cache.decide(List.of(new Acquisition(window, "user=a")));

        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void nothingIsCachedWithTheInstancesOwnClock() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, false, 100, () -> nanos);
        cache.decide(one(bucket, "ip=1"));
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void slidingWindowCounterDenialsAreNotCached() {
        Rule swc = Rule.of("swc", Algorithm.SLIDING_WINDOW_COUNTER, 5, Duration.ofMinutes(1));
        ScriptedRedis redis = new ScriptedRedis().deny(swc, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(one(swc, "ip=1"));
        cache.decide(one(swc, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void backstopAndUnavailableDecisionsAreNotCached() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000).source(RuleDecision.Source.LOCAL);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        cache.decide(one(bucket, "ip=1"));
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void holdsAtMostMaxEntriesAndReusesExpiredRoom() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 2, () -> nanos);
        for (int i = 0; i < 50; i++) cache.decide(one(bucket, "ip=" + i));
        assertThat(cache.size()).isEqualTo(2);

        cache.decide(one(bucket, "ip=49"));
        assertThat(redis.calls).as("ip=49 was not cached: no room").isEqualTo(51);

        nanos += 1000 * MS;
        cache.decide(one(bucket, "ip=49"));
        cache.decide(one(bucket, "ip=49"));
        assertThat(redis.calls).as("expired entries swept, ip=49 cached").isEqualTo(52);
        assertThat(cache.size()).isLessThanOrEqualTo(2);
    }

    /**
     * The cache changes no decision: a random stream of requests of varying cost from a few
     * clients, at random times, gets exactly the answers the reference model gives alone.
     */
    @Test
    void neverChangesADecisionOfAnExactAlgorithm() {
        Random random = new Random(42);
        for (Rule rule : List.of(bucket, window, Rule.of("gcra", Algorithm.GCRA, 3, Duration.ofSeconds(2)))) {
            ReferenceRedis alone = new ReferenceRedis(() -> nanos / MS);
            ReferenceRedis behind = new ReferenceRedis(() -> nanos / MS);
            DeniedClientCache cache = new DeniedClientCache(behind, true, 100, () -> nanos);
            int denied = 0;
            for (int i = 0; i < 20_000; i++) {
                nanos += random.nextInt(40) * MS + random.nextInt(1_000_000);
                List<Acquisition> request = List.of(new Acquisition(rule, "c" + random.nextInt(3), 1 + random.nextInt(2)));
                boolean expected = alone.decide(request).allowed();
                assertThat(cache.decide(request).allowed()).as("%s request %d", rule.name(), i).isEqualTo(expected);
                if (!expected) denied++;
            }
            assertThat(denied).as("the stream must exercise denials").isGreaterThan(1000);
            assertThat(behind.calls).as("the cache must have answered some").isLessThan(20_000 - 500);
        }
    }

    private static List<Acquisition> one(Rule rule, String client) {
        return List.of(new Acquisition(rule, client));
    }

    /** Denies one rule with a fixed retryAfter, admits the others; counts calls. */
    private static final class ScriptedRedis implements RateLimiter {
        int calls;
        Rule denied;
        long retryAfterMs;
        RuleDecision.Source source = RuleDecision.Source.REDIS;

        ScriptedRedis deny(Rule rule, long retryAfter) {
            denied = rule;
            retryAfterMs = retryAfter;
            return this;
        }

        ScriptedRedis source(RuleDecision.Source s) {
            source = s;
            return this;
        }

        void allowAll() {
            denied = null;
        }

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            calls++;
            List<RuleDecision> out = new ArrayList<>();
            for (Acquisition a : acquisitions) {
                boolean deny = a.rule() == denied;
                out.add(new RuleDecision(a.rule(), !deny, deny ? 0 : 7, deny ? retryAfterMs : 0, retryAfterMs, 0, source));
            }
            return Decision.of(out);
        }
    }

    /**
     * A single-rule model of what the Redis scripts compute, in integer milliseconds: token bucket
     * (continuous refill), fixed window (aligned to the epoch) and GCRA. Denials change nothing.
     */
    private static final class ReferenceRedis implements RateLimiter {
        private final java.util.function.LongSupplier millis;
        private final Map<String, long[]> state = new HashMap<>();
        int calls;

        ReferenceRedis(java.util.function.LongSupplier millis) {
            this.millis = millis;
        }

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            calls++;
            Acquisition a = acquisitions.get(0);
            Rule r = a.rule();
            long now = millis.getAsLong();
            long w = r.windowMillis();
            long[] s = state.computeIfAbsent(r.name() + ":" + a.clientKey(), k -> new long[]{Long.MIN_VALUE, 0});
            boolean ok;
            long retry;
            switch (r.algorithm()) {
                case FIXED_WINDOW -> {
                    long start = now - Math.floorMod(now, w);
                    if (s[0] != start) { s[0] = start; s[1] = 0; }
                    ok = s[1] + a.cost() <= r.limit();
                    if (ok) s[1] += a.cost();
                    retry = ok ? 0 : start + w - now;
                }
                case TOKEN_BUCKET -> {
                    // tokens scaled by w (exact integer refill): capacity burst*w, refill limit per ms
                    long cap = r.burst() * w;
                    long tokens = s[0] == Long.MIN_VALUE ? cap : Math.min(cap, s[1] + (now - s[0]) * r.limit());
                    long need = a.cost() * w;
                    ok = tokens >= need;
                    retry = ok ? 0 : (need - tokens + r.limit() - 1) / r.limit();
                    if (ok) { s[0] = now; s[1] = tokens - need; }
                }
                case GCRA -> {
                    long interval = w / r.limit();
                    long tat = Math.max(s[0] == Long.MIN_VALUE ? now : s[0], now);
                    long newTat = tat + a.cost() * interval;
                    long allowAt = newTat - r.burst() * interval;
                    ok = allowAt <= now;
                    retry = ok ? 0 : allowAt - now;
                    if (ok) s[0] = newTat;
                }
                default -> throw new IllegalArgumentException(r.algorithm().id());
            }
            return Decision.of(List.of(new RuleDecision(r, ok, 0, retry, retry, 0, RuleDecision.Source.REDIS)));
        }
    }
}
