package dev.sluice.internal.cache;

import dev.sluice.testing.Rates;
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

    private static final long REVALIDATE = 1000 * MS;

    /** Fake monotonic clock in nanoseconds; its millisecond reading is also "Redis's clock". */
    private long nanos = 1_000 * MS;
    /** What the failure handling says of Redis. */
    private boolean available = true;

    private DeniedClientCache cache(RateLimiter redis) {
        return new DeniedClientCache(redis, true, 100, REVALIDATE, () -> available, () -> nanos);
    }

    @Test
    void deniedClientIsAnsweredLocallyUntilRetryAfter() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = cache(redis);

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
        DeniedClientCache cache = cache(redis);
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
        DeniedClientCache cache = cache(redis);
        cache.decide(one(bucket, "ip=1"));

        redis.allowAll();
        assertThat(cache.decide(one(bucket, "ip=2")).allowed()).isTrue();
        assertThat(cache.decide(one(bucket, "ip=2")).allowed()).isTrue();
        assertThat(redis.calls).isEqualTo(3);
    }

    @Test
    void aRequestOfAnotherCostGoesToRedisSoItsFiguresAreItsOwn() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = cache(redis);
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 5)));

        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 1)));
        assertThat(redis.calls).as("a cheaper request may fit").isEqualTo(2);

        redis.deny(bucket, 4000);
        Decision costlier = cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 6)));
        assertThat(redis.calls).as("a costlier one waits longer: Redis says how long").isEqualTo(3);
        assertThat(costlier.retryAfterMs()).isEqualTo(4000);

        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1"), 6)));
        assertThat(redis.calls).as("the same cost again is answered from memory").isEqualTo(3);
    }

    @Test
    void answersFromMemoryAreMarkedAsTheCaches() {
        DeniedClientCache cache = cache(new ScriptedRedis().deny(bucket, 1000));
        assertThat(cache.decide(one(bucket, "ip=1")).rules().get(0).source()).isEqualTo(RuleDecision.Source.REDIS);
        assertThat(cache.decide(one(bucket, "ip=1")).rules().get(0).source()).isEqualTo(RuleDecision.Source.CACHE);
    }

    @Test
    void aDenialIsConfirmedByRedisAfterTheRevalidateInterval() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 60_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));

        nanos += REVALIDATE - 1;
        cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).isEqualTo(1);

        nanos += 1;
        Decision confirmed = cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).as("asked again after the interval").isEqualTo(2);
        assertThat(confirmed.rules().get(0).source()).isEqualTo(RuleDecision.Source.REDIS);

        nanos += REVALIDATE - 1;
        cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).as("remembered afresh").isEqualTo(2);
    }

    /**
     * A one-day denial and a Redis that comes back empty (restarted, failed over to a replica without
     * the writes, flushed by an operator): within the revalidate interval the client is Redis's again.
     */
    @Test
    void whenRedisForgetsTheClientTheCacheFollowsWithinTheRevalidateInterval() {
        Rule daily = Rule.of("daily", Algorithm.FIXED_WINDOW, 5, Duration.ofDays(1));
        ScriptedRedis redis = new ScriptedRedis().deny(daily, Duration.ofHours(20).toMillis());
        DeniedClientCache cache = cache(redis);
        cache.decide(one(daily, "ip=1"));

        redis.allowAll(); // FLUSHALL
        nanos += REVALIDATE;
        assertThat(cache.decide(one(daily, "ip=1")).allowed()).isTrue();
        assertThat(cache.size()).isZero();
        assertThat(cache.decide(one(daily, "ip=1")).allowed()).isTrue();
    }

    @Test
    void aFloodFromADeniedClientCostsRedisOneCallPerRevalidateInterval() {
        Rule daily = Rule.of("daily", Algorithm.FIXED_WINDOW, 5, Duration.ofDays(1));
        ScriptedRedis redis = new ScriptedRedis().deny(daily, Duration.ofHours(20).toMillis());
        DeniedClientCache cache = cache(redis);
        int requests = 100_000; // 10,000 a second for 10 s
        for (int i = 0; i < requests; i++) {
            assertThat(cache.decide(one(daily, "ip=1")).allowed()).isFalse();
            nanos += 100_000;
        }
        assertThat(redis.calls).isEqualTo(10);
        assertThat(1.0 - (double) redis.calls / requests).as("flood savings").isGreaterThan(0.99);
    }

    @Test
    void whileRedisIsAwayADeniedClientStaysDeniedUntilItsRetryAfter() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 60_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));

        available = false; // the breaker is open: nothing could confirm, nothing could have given it more
        nanos += 30_000 * MS;
        Decision d = cache.decide(one(window, "ip=1"));
        assertThat(d.allowed()).isFalse();
        assertThat(d.retryAfterMs()).isEqualTo(30_000);
        assertThat(redis.calls).isEqualTo(1);

        nanos += 30_000 * MS;
        cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).as("retry-after passed: the failure policy decides").isEqualTo(2);
    }

    @Test
    void aConfirmationThatFindsRedisFailingKeepsTheDenial() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 60_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));

        redis.allowAll();
        redis.source(RuleDecision.Source.BACKSTOP); // Redis failed on this call; the backstop admitted
        nanos += 2 * REVALIDATE;
        Decision d = cache.decide(one(window, "ip=1"));
        assertThat(d.allowed()).isFalse();
        assertThat(d.rules().get(0).source()).isEqualTo(RuleDecision.Source.CACHE);
    }

    @Test
    void clearForgetsEveryDenial() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 60_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));
        cache.decide(one(window, "ip=2"));
        assertThat(cache.size()).isEqualTo(2);

        cache.clear();
        assertThat(cache.size()).isZero();
        cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).isEqualTo(3);
    }

    @Test
    void resetForgetsOneClientHereAndBelow() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 60_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));
        cache.decide(one(window, "ip=2"));

        cache.reset(window, ClientKey.parse("ip=1"));
        assertThat(redis.resets).containsExactly("login/ip=1");
        cache.decide(one(window, "ip=1"));
        cache.decide(one(window, "ip=2"));
        assertThat(redis.calls).isEqualTo(3);
    }

    @Test
    void aGiveBackForgetsTheClientsDenialOfThatRule() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(window, "ip=1"));
        cache.decide(one(window, "ip=1"));
        assertThat(redis.calls).as("remembered").isEqualTo(1);

        Acquisition earlier = new Acquisition(window, ClientKey.parse("ip=1"));
        cache.giveBack(List.of(earlier), List.of(new RuleDecision(window, true, 0, 0, 1000, 1000, 0,
                new RuleDecision.Take(1000, 0, 0), RuleDecision.Source.REDIS)));
        cache.decide(one(window, "ip=1"));

        assertThat(redis.calls).as("capacity may have come back: Redis is asked").isEqualTo(2);
    }

    @Test
    void aMultiRuleRequestIsReplayedWithEveryRulesFigures() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = cache(redis);
        List<Acquisition> both = List.of(new Acquisition(bucket, ClientKey.parse("ip=1")), new Acquisition(window, ClientKey.parse("user=a")));
        cache.decide(both);

        nanos += 500 * MS;
        Decision local = cache.decide(both);

        assertThat(redis.calls).isEqualTo(1);
        assertThat(local.rules()).extracting(r -> r.rule().name()).containsExactly("api", "login");
        assertThat(local.rules().get(0).allowed()).isTrue();
        assertThat(local.violated()).extracting(r -> r.rule().name()).containsExactly("login");
        assertThat(local.retryAfterMs()).isEqualTo(29_500);
    }

    @Test
    void aRequestWithOtherRulesThanTheDeniedOneGoesToRedis() {
        ScriptedRedis redis = new ScriptedRedis().deny(window, 30_000);
        DeniedClientCache cache = cache(redis);
        cache.decide(List.of(new Acquisition(bucket, ClientKey.parse("ip=1")), new Acquisition(window, ClientKey.parse("user=a"))));

        cache.decide(List.of(new Acquisition(window, ClientKey.parse("user=a"))));

        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void nothingIsCachedWithTheInstancesOwnClock() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, false, 100, REVALIDATE, () -> available, () -> nanos);
        cache.decide(one(bucket, "ip=1"));
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void backstopAndUnavailableDecisionsAreNotCached() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000).source(RuleDecision.Source.BACKSTOP);
        DeniedClientCache cache = cache(redis);
        cache.decide(one(bucket, "ip=1"));
        cache.decide(one(bucket, "ip=1"));
        assertThat(redis.calls).isEqualTo(2);
    }

    @Test
    void holdsAtMostMaxEntriesAndReusesExpiredRoom() {
        ScriptedRedis redis = new ScriptedRedis().deny(bucket, 1000);
        DeniedClientCache cache = new DeniedClientCache(redis, true, 2, REVALIDATE, () -> available, () -> nanos);
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
        for (Algorithm algorithm : Rates.ALL) {
            Rule rule = new Rule("r", algorithm, 5, Duration.ofSeconds(2), algorithm.isWindow() ? 5 : 8, 1, FailurePolicy.OPEN, 5, Duration.ZERO);
            Rule other = Rule.of("o", Algorithm.FIXED_WINDOW, 40, Duration.ofSeconds(1));
            assertThat(DeniedClientCache.exactFor(algorithm)).isTrue();
            ReferenceRedis alone = new ReferenceRedis(() -> nanos / MS);
            ReferenceRedis behind = new ReferenceRedis(() -> nanos / MS);
            DeniedClientCache cache = new DeniedClientCache(behind, true, 100, REVALIDATE, () -> available, () -> nanos);
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

    /**
     * A fleet: three instances, each with its own cache, in front of one Redis, with a random network
     * latency on the way there and back, and the same arrival stream sent to a fleet without caches.
     * For every algorithm: every denial a cache answers from memory is one Redis would give at that
     * moment (checked by asking Redis without charging anything), and the fleet with caches admits
     * as many requests as the one without, give or take what the latency it cannot see moves.
     */
    @Test
    void aFleetOfCachesWithLatencyDeniesOnlyWhatRedisWouldDeny() {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        int maxLatencyUs = 5_000;
        Rule blocker = Rule.of("peek", Algorithm.FIXED_WINDOW, 1, Duration.ofSeconds(1));
        for (Algorithm algorithm : Rates.ALL) {
            Rule rule = new Rule("r", algorithm, 5, Duration.ofSeconds(2), algorithm.isWindow() ? 5 : 8, 1,
                    FailurePolicy.OPEN, 5, Duration.ZERO);
            long[] latency = new long[2];
            ReferenceRedis shared = new ReferenceRedis(() -> nanos / MS);
            ReferenceRedis alone = new ReferenceRedis(() -> nanos / MS);
            RateLimiter overTheNetwork = request -> {
                nanos += latency[0];
                Decision d = shared.decide(request);
                nanos += latency[1];
                return d;
            };
            DeniedClientCache[] fleet = new DeniedClientCache[3];
            for (int i = 0; i < fleet.length; i++) {
                fleet[i] = new DeniedClientCache(overTheNetwork, true, 100, REVALIDATE, () -> available, () -> nanos);
            }
            int admittedWithCaches = 0, admittedAlone = 0;
            long hits = 0;
            for (int i = 0; i < 20_000; i++) {
                // arrivals at least two latencies apart, so that Redis sees them in order
                nanos += 2L * maxLatencyUs * 1000 + random.nextInt(30) * MS + random.nextInt(1_000_000);
                latency[0] = random.nextInt(maxLatencyUs) * 1000L;
                latency[1] = random.nextInt(maxLatencyUs) * 1000L;
                String client = "c" + random.nextInt(3);
                List<Acquisition> request = one(rule, client);
                long sentAt = nanos;
                nanos = sentAt + latency[0];
                if (alone.decide(request).allowed()) admittedAlone++;
                nanos = sentAt;
                DeniedClientCache instance = fleet[random.nextInt(fleet.length)];
                long before = instance.hits();
                Decision actual = instance.decide(request);
                if (actual.allowed()) admittedWithCaches++;
                if (instance.hits() > before) {
                    hits++;
                    nanos = sentAt;
                    // a request denied by an impossible second rule takes nothing: Redis's view, uncharged
                    RuleDecision redisSays = shared.decide(List.of(request.get(0),
                            new Acquisition(blocker, ClientKey.parse(client), 2))).rules().get(0);
                    assertThat(redisSays.allowed()).as("%s request %d: Redis would deny it too (seed %d)",
                            algorithm.id(), i, seed).isFalse();
                    assertThat(actual.retryAfterMs()).as("%s request %d: retry-after (seed %d)", algorithm.id(), i, seed)
                            .isLessThanOrEqualTo(redisSays.retryAfterMs() + 1);
                }
                nanos = sentAt;
            }
            assertThat(hits).as("%s: the caches must have answered some (seed %d)", algorithm.id(), seed).isGreaterThan(500);
            assertThat((double) admittedWithCaches).as("%s: as many admitted (seed %d)", algorithm.id(), seed)
                    .isCloseTo(admittedAlone, org.assertj.core.data.Percentage.withPercentage(2));
        }
    }

    private static List<Acquisition> one(Rule rule, String client) {
        return List.of(new Acquisition(rule, ClientKey.parse(client)));
    }

    /** Denies one rule with a fixed retryAfter, admits the others; counts calls. */
    private static final class ScriptedRedis implements RateLimiter {
        int calls;
        final List<String> resets = new ArrayList<>();
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
        public void reset(Rule rule, ClientKey clientKey) {
            resets.add(rule.name() + "/" + clientKey);
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
