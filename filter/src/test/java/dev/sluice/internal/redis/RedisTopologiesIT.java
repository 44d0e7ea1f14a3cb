package dev.sluice.internal.redis;

import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisClusterGroup;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.RedisSentinelGroup;
import dev.sluice.testing.TestRedisSettings;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisSentineled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link RedisClients} on Sentinel and Cluster topologies started by the test, without the JSON
 * libraries Jedis would pull in (the filter's pom excludes them).
 */
class RedisTopologiesIT {

    @Test
    void sentinelClientRunsScriptsOnTheMasterAndFollowsAFailover() {
        assertNoJsonLibraries();
        try (RedisSentinelGroup group = RedisSentinelGroup.start();
             UnifiedJedis jedis = RedisClients.create(TestRedisSettings.sentinel(group.masterName(), group.sentinelNodes())
                     .timeout(Duration.ofMillis(200)).build())) {
            assertThat(jedis).isInstanceOf(JedisSentineled.class);
            String sha = jedis.scriptLoad("return redis.call('INCR', KEYS[1])");
            assertThat(jedis.evalsha(sha, List.of("{s}"), List.of())).isEqualTo(1L);
            int oldMaster = group.masterPort();

            group.failover();
            int newMaster = group.awaitNewMaster(oldMaster, Duration.ofSeconds(20));

            assertThat(newMaster).isEqualTo(group.initialReplica().port());
            Poll.until(Duration.ofSeconds(10), "the client to write to the new master", () -> {
                try {
                    jedis.eval("return redis.call('INCR', KEYS[1])", List.of("{s}"), List.of());
                    return ((JedisSentineled) jedis).getCurrentMaster().getPort() == newMaster;
                } catch (RuntimeException switching) {
                    return false;
                }
            });
        }
    }

    @Test
    void clusterClientRoutesEachHashTagToItsMaster() {
        assertNoJsonLibraries();
        try (RedisClusterGroup cluster = RedisClusterGroup.start(3);
             UnifiedJedis jedis = RedisClients.create(TestRedisSettings.cluster(cluster.seeds())
                     .timeout(Duration.ofMillis(500)).build())) {
            assertThat(jedis).isInstanceOf(JedisCluster.class);
            for (int i = 0; i < 300; i++) {
                String key = "t:topo:{c" + i + "}";
                assertThat(jedis.eval("return redis.call('INCR', KEYS[1])", List.of(key), List.of())).isEqualTo(1L);
            }

            Map<Integer, Integer> perNode = cluster.keysPerNode("t:topo:*");

            assertThat(perNode.values()).hasSize(3).allSatisfy(n -> assertThat(n).isGreaterThan(50));
            assertThat(perNode.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(300);
        }
    }

    @Test
    void sentinelClientCreatedWhileNoSentinelAnswersConnectsOnceTheyDo() {
        try (RedisSentinelGroup group = RedisSentinelGroup.start()) {
            group.sentinels().forEach(RedisProcess::pause);
            UnifiedJedis jedis;
            try {
                jedis = RedisClients.create(TestRedisSettings.sentinel(group.masterName(), group.sentinelNodes())
                        .timeout(Duration.ofMillis(100)).build());
                for (int i = 0; i < 5; i++) {
                    long started = System.nanoTime();
                    assertThatThrownBy(jedis::ping).isInstanceOf(JedisException.class);
                    // discovery runs in the background: a request never pays a timeout per sentinel for it
                    assertThat((System.nanoTime() - started) / 1_000_000).as("ms for a call while no sentinel answers")
                            .isLessThan(50);
                }
            } finally {
                group.sentinels().forEach(RedisProcess::resume);
            }
            try (jedis) {
                Poll.until(Duration.ofSeconds(5), "the deferred client to reach the master", () -> answers(jedis));
            }
        }
    }

    @Test
    void clusterClientCreatedWhileNoSeedAnswersConnectsOnceTheyDo() {
        try (RedisClusterGroup cluster = RedisClusterGroup.start(3)) {
            cluster.nodes().forEach(RedisProcess::pause);
            UnifiedJedis jedis;
            try {
                jedis = RedisClients.create(TestRedisSettings.cluster(cluster.seeds()).timeout(Duration.ofMillis(100)).build());
                assertThatThrownBy(() -> jedis.eval("return 1", List.of("{k}"), List.of()))
                        .isInstanceOf(JedisException.class);
            } finally {
                cluster.nodes().forEach(RedisProcess::resume);
            }
            try (jedis) {
                Poll.until(Duration.ofSeconds(5), "the deferred client to reach the cluster", () -> {
                    try {
                        return Long.valueOf(7).equals(jedis.eval("return redis.call('INCRBY', KEYS[1], 7)",
                                List.of("t:deferred:{k" + System.nanoTime() + "}"), List.of()));
                    } catch (JedisException notYet) {
                        return false;
                    }
                });
            }
        }
    }

    private static void assertNoJsonLibraries() {
        assertThatThrownBy(() -> Class.forName("com.google.gson.Gson")).isInstanceOf(ClassNotFoundException.class);
        assertThatThrownBy(() -> Class.forName("org.json.JSONObject")).isInstanceOf(ClassNotFoundException.class);
    }

    private static boolean answers(UnifiedJedis jedis) {
        try {
            return Long.valueOf(1).equals(jedis.eval("return 1", List.of("{k}"), List.of()));
        } catch (JedisException notYet) {
            return false;
        }
    }
}
