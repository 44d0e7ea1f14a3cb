package dev.sluice.bench;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.redis.RedisEngine;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;

/**
 * Bytes of Redis memory per client key: the mean of Redis's own {@code MEMORY USAGE} (key, value
 * and their bookkeeping) over {@code keys} clients that each made {@code requests} admitted
 * requests of a rule of 100 per minute (key prefix {@code rl:}, client keys like
 * {@code ip=10.0.1.2}). For the sliding-window log the figure grows with the requests in the
 * window; the others keep one small string per key.
 */
final class KeyMemory {

    record Usage(String algorithm, int keys, long limit, int requestsPerKey, double bytesPerKey) {
    }

    private KeyMemory() {
    }

    static Usage measure(String algorithm, int keys, int requests) {
        Rule rule = Rule.of("api", Algorithm.fromId(algorithm), 100, Duration.ofMinutes(1));
        try (UnifiedJedis jedis = BenchRedis.pooled(); Jedis admin = BenchRedis.admin()) {
            RedisEngine engine = new RedisEngine(jedis, "rl:", true, Clock.SYSTEM, false);
            long bytes = 0;
            for (int i = 0; i < keys; i++) {
                ClientKey client = ClientKey.parse("ip=10." + algorithm.length() + "." + (i / 256) + "." + (i % 256));
                List<Acquisition> request = List.of(new Acquisition(rule, client));
                for (int r = 0; r < requests; r++) engine.decide(request);
                Long usage = admin.memoryUsage(engine.key(rule, client), 0);
                if (usage == null) throw new IllegalStateException("no key " + engine.key(rule, client));
                bytes += usage;
            }
            return new Usage(algorithm, keys, rule.limit(), requests, (double) bytes / keys);
        }
    }
}
