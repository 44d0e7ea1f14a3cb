package dev.sluice.bench;

import io.github.bucket4j.Bandwidth;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.redis.jedis.Bucket4jJedis;
import redis.clients.jedis.JedisPool;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The peer: Bucket4j 8's compare-and-swap proxy manager over a {@link JedisPool}, a greedy
 * bandwidth equivalent to Sluice's token bucket (capacity = limit, refilling limit per window),
 * keys expiring when full again. Each decision reads the state with GET and writes it back with
 * a compare-and-swap script, retrying when another thread wrote first.
 *
 * <p>Generous to the peer: the bucket proxies are built once per key (an application would look
 * one up per request).
 */
final class Bucket4jContender implements Contender {

    private final JedisPool pool;
    private final BucketProxy[] buckets;

    Bucket4jContender(Workload workload) {
        pool = BenchRedis.jedisPool();
        ProxyManager<byte[]> proxies = Bucket4jJedis.casBasedBuilder(pool)
                .expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(1)))
                .build();
        BucketConfiguration config = BucketConfiguration.builder()
                .addLimit(Bandwidth.builder().capacity(workload.limit).refillGreedy(workload.limit, workload.window).build())
                .build();
        String prefix = BenchRedis.prefix("b4j");
        String[] keys = workload.clientKeys();
        buckets = new BucketProxy[keys.length];
        for (int i = 0; i < keys.length; i++) {
            buckets[i] = proxies.builder().build((prefix + keys[i]).getBytes(StandardCharsets.UTF_8), () -> config);
        }
    }

    @Override
    public boolean tryAcquire(int key) {
        return buckets[key].tryConsume(1);
    }

    @Override
    public void close() {
        pool.close();
    }

    @Override
    public String toString() {
        return "bucket4j";
    }
}
