package dev.sluice.bench;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.cache.DeniedClientCache;
import dev.sluice.internal.redis.RedisEngine;
import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/**
 * Sluice's limiter API on Redis: {@link RedisEngine#decide} with {@code clock=redis}, behind the
 * {@link DeniedClientCache} when it is on (as {@code denied-cache=true} deploys it), with shared
 * round trips or (contender {@code sluice-unshared}) one round trip per decision. The acquisitions
 * are built once per key: this measures the limiter, not the filter.
 */
final class SluiceContender implements Contender {

    private final UnifiedJedis jedis;
    private final RateLimiter limiter;
    private final List<Acquisition>[] requests;
    private final String label;

    SluiceContender(Workload workload, String algorithm, boolean deniedCache) {
        this(workload, algorithm, deniedCache, 1, true);
    }

    /**
     * @param rules how many rules every request takes part in (per client: the workload's rule,
     *              then {@code rules - 1} more of the same kind named {@code api2}, {@code api3}...):
     *              all are decided in the one call
     * @param shared whether concurrent decisions share round trips (a {@code JedisPooled}), or each
     *               makes its own (a plain {@code UnifiedJedis}, Sluice before 0.2)
     */
    SluiceContender(Workload workload, String algorithm, boolean deniedCache, int rules, boolean shared) {
        this(shared ? BenchRedis.pooled() : BenchRedis.unshared(), workload, algorithm, deniedCache, rules);
    }

    /** The same on {@code jedis} (closed with this): shared round trips if it is a {@code JedisPooled}. */
    SluiceContender(UnifiedJedis jedis, Workload workload, String algorithm, boolean deniedCache, int rules) {
        this(jedis, workload, Workload.rule(algorithm, workload), deniedCache, rules);
    }

    /** The same with {@code rule} instead of the workload's for its algorithm; the clients are the workload's. */
    @SuppressWarnings("unchecked")
    SluiceContender(UnifiedJedis jedis, Workload workload, Rule rule, boolean deniedCache, int rules) {
        this.jedis = jedis;
        boolean shared = jedis instanceof redis.clients.jedis.JedisPooled;
        String algorithm = rule.algorithm().id();
        limiter = BenchRedis.stack(jedis, BenchRedis.prefix("sluice"), rule, deniedCache).limiter();
        String[] keys = workload.clientKeys();
        requests = new List[keys.length];
        for (int i = 0; i < keys.length; i++) {
            List<Acquisition> request = new java.util.ArrayList<>();
            for (int r = 1; r <= rules; r++) {
                Rule named = r == 1 ? rule : new Rule("api" + r, rule.algorithm(), rule.limit(), rule.window(), rule.burst(),
                        rule.cost(), rule.failurePolicy(), rule.fallbackLimit(), rule.maxDelay());
                request.add(new Acquisition(named, ClientKey.parse(keys[i])));
            }
            requests[i] = List.copyOf(request);
        }
        label = "sluice " + algorithm + (rules > 1 ? " x" + rules + " rules" : "") + (deniedCache ? "" : " (no denied cache)")
                + (shared ? "" : " (unshared)");
    }

    @Override
    public boolean tryAcquire(int key) {
        return limiter.decide(requests[key]).allowed();
    }

    @Override
    public void close() {
        limiter.close();
        jedis.close();
    }

    @Override
    public String toString() {
        return label;
    }
}
