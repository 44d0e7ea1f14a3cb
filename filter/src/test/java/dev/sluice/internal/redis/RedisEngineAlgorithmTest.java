package dev.sluice.internal.redis;

import dev.sluice.internal.algorithm.AlgorithmSpec;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import redis.clients.jedis.JedisPooled;

import java.net.URI;

/** The algorithms' specification, in Redis with {@code clock=local} reading the fake clock. */
class RedisEngineAlgorithmTest extends AlgorithmSpec {

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    @Override
    protected RateLimiter newEngine(ManualClock clock) {
        return new RedisEngine(jedis, TestRedis.uniquePrefix("spec"), false, clock, false);
    }
}
