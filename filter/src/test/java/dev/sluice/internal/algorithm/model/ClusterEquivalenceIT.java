package dev.sluice.internal.algorithm.model;

import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.redis.RedisClients;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisClusterGroup;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.TestRedisSettings;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a three-master Redis Cluster, where a request's rules are decided rule by rule and a request
 * denied by a later rule gives back what the earlier ones took, every request gets the same figures
 * as on standalone (where one call decides every rule at once): the reference models, the local
 * engine and the Redis engine in Cluster mode agree on generated multi-rule sequences (shadow rules,
 * give-backs of {@code rule.<r>.count}, on one fake clock: {@code clock=local}, every call of a
 * request at the same time, so what is given back is exactly what was taken). So a denied request
 * takes nothing from any rule on Cluster too.
 */
class ClusterEquivalenceIT {

    static final int SEQUENCES = Integer.getInteger("sluice.equivalence.sequences", 1500) / 6;

    private static RedisClusterGroup cluster;
    private static UnifiedJedis jedis;

    @BeforeAll
    static void startCluster() {
        cluster = RedisClusterGroup.start(3);
        jedis = RedisClients.create(TestRedisSettings.cluster(cluster.seeds()).timeout(Duration.ofSeconds(2)).build());
    }

    @AfterAll
    static void stopCluster() {
        if (jedis != null) jedis.close();
        if (cluster != null) cluster.close();
    }

    @Test
    void aDeniedRequestTakesNothingOnClusterAsOnStandalone() {
        int[] denied = new int[2]; // denied multi-rule requests in which an earlier rule admitted, and gave back
        for (int i = 0; i < SEQUENCES; i++) {
            Scenario scenario = Scenario.generateWithoutLag(TestSeed.get() + 4_000_037L + i, Scenario.Magnitude.SMALL, 3, 40);
            String mismatch = null;
            for (int attempt = 1; attempt <= 3; attempt++) {
                long started = System.nanoTime();
                mismatch = replay(scenario, denied);
                if (mismatch == null || (System.nanoTime() - started) / 1_000_000 <= EquivalenceTest.MAX_REAL_MS) break;
            }
            if (mismatch != null) throw new AssertionError(TestSeed.replay() + ": " + mismatch);
        }
        System.out.println("equivalence on Cluster: " + SEQUENCES + " sequences, " + denied[0]
                + " denied multi-rule requests whose earlier rules gave back");
        assertThat(denied[0]).as("denied requests an earlier rule had taken from").isGreaterThan(SEQUENCES / 5);
    }

    /** Replays {@code scenario}; returns the first disagreement, or null. */
    private static String replay(Scenario scenario, int[] denied) {
        ManualClock clock = new ManualClock(scenario.steps.get(0).now());
        RedisEngine redis = new RedisEngine(jedis, TestRedis.uniquePrefix("equiv-cluster"), false, clock, true);
        Set<String> keys = new HashSet<>();
        try (RateLimiter local = new LocalEngine(clock, 1_000)) {
            Models models = new Models();
            List<List<RuleDecision>> localDecided = new ArrayList<>();
            java.util.Set<RuleDecision> localGivenBack = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            List<List<RuleDecision>> redisDecided = new ArrayList<>();
            List<List<Object>> modelDecided = new ArrayList<>();
            for (int s = 0; s < scenario.steps.size(); s++) {
                Scenario.Step step = scenario.steps.get(s);
                clock.set(step.now());
                for (Acquisition a : step.acquisitions()) keys.add(redis.key(a.rule(), a.clientKey()));
                List<Acquisition> request = step.acquisitions();
                if (step.isGiveBack()) {
                    int of = step.giveBackOf();
                    EquivalenceTest.Settled settled = EquivalenceTest.Settled.of(step, pick(modelDecided.get(of), step.indices()));
                    local.settle(EquivalenceTest.onceOnlySettled(settled.settlements(pick(localDecided.get(of), step.indices())),
                            localGivenBack));
                    redis.settle(settled.settlements(pick(redisDecided.get(of), step.indices())));
                    models.settle(settled.request(), settled.of(pick(modelDecided.get(of), step.indices())), settled.charges(),
                            step.now());
                    request = request.stream().map(a -> new Acquisition(a.rule(), a.clientKey(), a.rule().capacity() + 1)).toList();
                }
                List<Figures> expected = models.decide(request, step.now());
                modelDecided.add(models.lastTaken());
                Decision l = local.decide(request);
                Decision r = redis.decide(request);
                localDecided.add(l.rules());
                redisDecided.add(r.rules());
                List<Figures> fromLocal = EquivalenceTest.figures(l);
                List<Figures> fromRedis = EquivalenceTest.figures(r);
                if (!expected.equals(fromLocal) || !expected.equals(fromRedis)) {
                    return "engines disagree with the model at step #" + s + "\n" + scenario.describe(s) + "  model: " + expected
                            + "\n  local: " + fromLocal + "\n  cluster: " + fromRedis;
                }
                if (!r.allowed() && request.size() > 1 && gaveBack(request, expected)) denied[0]++;
            }
            return null;
        } finally {
            for (String key : keys) jedis.del(key); // one slot each
        }
    }

    /** Whether an enforcing rule denied the request after an earlier rule admitted it (and so, on Cluster, took and gave back). */
    private static boolean gaveBack(List<Acquisition> request, List<Figures> figures) {
        boolean admittedEarlier = false;
        for (int i = 0; i < request.size(); i++) {
            if (!figures.get(i).allowed() && !request.get(i).rule().dryRun()) return admittedEarlier;
            if (figures.get(i).allowed()) admittedEarlier = true;
        }
        return false;
    }

    private static <T> List<T> pick(List<T> all, int[] indices) {
        List<T> out = new ArrayList<>(indices.length);
        for (int i : indices) out.add(all.get(i));
        return out;
    }
}
