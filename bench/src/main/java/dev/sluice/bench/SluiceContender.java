package dev.sluice.bench;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.redis.DeniedClientCache;
import dev.sluice.redis.RedisEngine;
import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/**
 * Sluice's limiter API on Redis: {@link RedisEngine#decide} with {@code clock=redis}, behind the
 * {@link DeniedClientCache} when it is on (as {@code denied-cache=true} deploys it). The
 * acquisitions are built once per key: this measures the limiter, not the filter.
 */
final class SluiceContender implements Contender {

    private final UnifiedJedis jedis;
    private final RateLimiter limiter;
    private final List<Acquisition>[] requests;
    private final String label;

    @SuppressWarnings("unchecked")
    SluiceContender(Workload workload, String algorithm, boolean deniedCache) {
        jedis = BenchRedis.pooled();
        RateLimiter engine = new RedisEngine(jedis, BenchRedis.prefix("sluice"), true, Clock.SYSTEM, false);
        limiter = deniedCache ? new DeniedClientCache(engine, true, 10_000) : engine;
        Rule rule = Workload.rule(algorithm, workload);
        String[] keys = workload.clientKeys();
        requests = new List[keys.length];
        for (int i = 0; i < keys.length; i++) {
            requests[i] = List.of(new Acquisition(rule, keys[i]));
        }
        label = "sluice " + algorithm + (deniedCache ? "" : " (no denied cache)");
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
