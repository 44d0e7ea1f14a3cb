package dev.sluice.internal.redis;

import dev.sluice.testing.TestRedis;
import dev.sluice.testing.RedisProcess;
import dev.sluice.config.SluiceConfig.RedisSettings;
import dev.sluice.testing.TestRedisSettings;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RedisClientsTest {

    @Test
    void poolBorrowsWithoutPingAndWaitsAtMostMaxWait() {
        RedisSettings s = TestRedisSettings.standalone("redis://127.0.0.1:6379").pool(7, Duration.ofMillis(80)).build();

        ConnectionPoolConfig pool = RedisClients.poolConfig(s);

        assertThat(pool.getTestOnBorrow()).isFalse();
        assertThat(pool.getTestOnCreate()).isFalse();
        assertThat(pool.getBlockWhenExhausted()).isTrue();
        assertThat(pool.getMaxWaitDuration()).isEqualTo(Duration.ofMillis(80));
        assertThat(pool.getMaxTotal()).isEqualTo(7);
        assertThat(pool.getJmxEnabled()).isFalse();
    }

    @Test
    void connectAndReadTimeoutsAreBothRedisTimeout() {
        RedisSettings s = TestRedisSettings.standalone("redis://u:p@127.0.0.1:6379/3").timeout(Duration.ofMillis(70)).build();

        JedisClientConfig c = RedisClients.clientConfig(s, true);

        assertThat(c.getConnectionTimeoutMillis()).isEqualTo(70);
        assertThat(c.getSocketTimeoutMillis()).isEqualTo(70);
        assertThat(c.getUser()).isEqualTo("u");
        assertThat(c.getPassword()).isEqualTo("p");
        assertThat(c.getDatabase()).isEqualTo(3);
        assertThat(c.isSsl()).isFalse();
        assertThat(c.getClientName()).as("no handshake round trip on a new connection").isNull();
        assertThat(c.getClientSetInfoConfig().isDisabled()).isTrue();
    }

    @Test
    void tlsVerifiesTheServerName() {
        RedisSettings s = TestRedisSettings.standalone("rediss://127.0.0.1:6380").build();

        JedisClientConfig c = RedisClients.clientConfig(s, true);

        assertThat(c.isSsl()).isTrue();
        assertThat(c.getSslParameters().getEndpointIdentificationAlgorithm()).isEqualTo("HTTPS");
    }

    @Test
    void standaloneClientRunsScriptsWithoutTheJsonLibrariesJedisWouldPullIn() {
        assertThatThrownBy(() -> Class.forName("com.google.gson.Gson")).isInstanceOf(ClassNotFoundException.class);
        assertThatThrownBy(() -> Class.forName("org.json.JSONObject")).isInstanceOf(ClassNotFoundException.class);
        String key = TestRedis.uniquePrefix("clients") + "{k}";

        try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings.standalone(TestRedis.url())
                .timeout(Duration.ofMillis(500)).build())) {
            assertThat(jedis).isInstanceOf(JedisPooled.class);
            String sha = jedis.scriptLoad("return redis.call('INCRBY', KEYS[1], ARGV[1])");
            assertThat(jedis.evalsha(sha, List.of(key), List.of("5"))).isEqualTo(5L);
            assertThat(jedis.eval("return redis.call('PEXPIRE', KEYS[1], 1000)", List.of(key), List.of())).isEqualTo(1L);
            assertThat(jedis.get(key)).isEqualTo("5");
        }
    }

    @Test
    void aClientSluiceBuildsLendsItsConnectionsAndBoundsTheQueueByTheTimeout() {
        try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings.standalone(TestRedis.url())
                .timeout(Duration.ofMillis(123)).pool(8, Duration.ofSeconds(3)).build())) {
            NodeConnections connections = NodeConnections.of(jedis);
            assertThat(connections).isNotNull();
            assertThat(connections.queueWait()).as("redis.timeout, not max-wait").isEqualTo(Duration.ofMillis(123));
            try (redis.clients.jedis.Connection c = connections.borrow(connections.nodeOf(new byte[]{'k'}))) {
                assertThat(c.ping()).isTrue();
            }
        }
    }

    @Test
    void aDeadServerFailsWithinTheTimeoutInsteadOfHanging() {
        int port = RedisProcess.freePort(); // nothing listens there
        try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings.standalone("redis://127.0.0.1:" + port)
                .timeout(Duration.ofMillis(100)).build())) {
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> jedis.get("x")).isInstanceOf(JedisConnectionException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofMillis(1000));
        }
    }
}
