package dev.sluice.internal.cache;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.internal.local.LocalEngine;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 5)));

        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 1)));
        assertThat(redis.calls).isEqualTo(2);

        redis.allowAll();
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 5)));
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 6)));
        assertThat(redis.calls).as("the cost-1 denial covers costs 5 and 6").isEqualTo(2);
    }

    @Test
    void aMultiRuleRequestIsReplayedWithEveryRulesFigures() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 100, () -> nanos);
        List<Acquisition> both = List.of(new Acquisition(bucket, ClientKey.parse("ip=1")), new Acquisition(window, ClientKey.parse("user=a")));
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
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1")), new Acquisition(window, ClientKey.parse("user=a"))));

        cache.decide(List.of(new Acquisition(window, ClientKey.parse("user=a"))));

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
     * The cache changes no decision: for every algorithm, a random stream of requests of varying
     * cost from a few clients, single- and two-rule, at random times, gets exactly the answers the
     * reference semantics (the local engine, on the same clock) give without the cache.
     */
    @Test
    void neverChangesADecisionOfAnyAlgorithm() {
        Random random = new Random(42);
        for (Algorithm algorithm : Algorithm.values()) {
            Rule rule = new Rule("r", algorithm, 5, Duration.ofSeconds(2), algorithm.isWindow() ? 5 : 8, 1, FailurePolicy.OPEN, 5, Duration.ZERO);
            Rule other = Rule.of("o", Algorithm.FIXED_WINDOW, 40, Duration.ofSeconds(1));
            assertThat(DeniedClientCache.exactFor(algorithm)).isTrue();
            ReferenceRedis alone = new ReferenceRedis(() -> nanos / MS);
            ReferenceRedis behind = new ReferenceRedis(() -> nanos / MS);
            DeniedClientCache cache = new DeniedClientCache(behind, true, 100, () -> nanos);
            int denied = 0;
            for (int i = 0; i < 20_000; i++) {
                nanos += random.nextInt(60) * MS + random.nextInt(1_000_000);
                String client = "c" + random.nextInt(3);
                Acquisition a = new Acquisition(rule, ClientKey.parse(client), 1 + random.nextInt(2));
                List<Acquisition> request = random.nextInt(4) == 0 ? List.of(a, new Acquisition(other, ClientKey.parse(client))) : List.of(a);
                Decision expected = alone.decide(request);
                Decision actual = cache.decide(request);
                assertThat(actual.allowed()).as("%s request %d", algorithm.id(), i).isEqualTo(expected.allowed());
                if (!expected.allowed()) {
                    denied++;
                    // never longer than Redis says (shorter when a cheaper request of the client was admitted since)
                    assertThat(actual.retryAfterMs()).as("%s request %d: retry-after", algorithm.id(), i)
                            .isBetween(1L, expected.retryAfterMs() + 1);
                }
            }
            assertThat(denied).as("%s: the stream must exercise denials", algorithm.id()).isGreaterThan(1000);
            assertThat(cache.hits()).as("%s: the cache must have answered some", algorithm.id()).isGreaterThan(500);
            assertThat(behind.calls).isEqualTo(20_000 - cache.hits());
        }
    }

    private static List<Acquisition> one(Rule rule, String client) {
        return List.of(new Acquisition(rule, ClientKey.parse(client)));
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
     * "Redis" with the reference semantics: the local engine (whose algorithms the Lua scripts
     * translate line by line) on the fake clock, its decisions labelled as Redis's.
     */
    private static final class ReferenceRedis implements RateLimiter {
        private final LocalEngine engine;
        int calls;

        ReferenceRedis(Clock clock) {
            engine = new LocalEngine(clock, 1000);
        }

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            calls++;
            List<RuleDecision> out = new ArrayList<>();
            for (RuleDecision r : engine.decide(acquisitions).rules()) out.add(r.withSource(RuleDecision.Source.REDIS));
            return Decision.of(out);
        }
    }
}
