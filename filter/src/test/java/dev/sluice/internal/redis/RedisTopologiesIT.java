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
    void sentinelClientSharesRoundTripsWithItsMasterBeforeAndAfterAFailover() throws Exception {
        try (RedisSentinelGroup group = RedisSentinelGroup.start();
             UnifiedJedis jedis = RedisClients.create(TestRedisSettings.sentinel(group.masterName(), group.sentinelNodes())
                     .timeout(Duration.ofSeconds(10)).build())) {
            SharedRoundTrips shared = new SharedRoundTrips(jedis, false);
            byte[] script = "return redis.call('INCR', KEYS[1])".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            byte[] sha = SharedRoundTripsTest.sha1(script);
            java.util.function.Supplier<Object> incr = () -> shared.evalsha(sha, script, List.of(SharedRoundTripsTest.bytes("{s}")), List.of());
            incr.get(); // the script loaded
            long before = shared.roundTrips();
            java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newCachedThreadPool();
            try {
                Batches.Started<Object> started = Batches.behindAFirstCall(group.initialMaster(), shared, threads, incr,
                        List.of(incr, incr, incr, incr), true);
                List<Object> replies = new java.util.ArrayList<>();
                replies.add(started.first().get(10, java.util.concurrent.TimeUnit.SECONDS));
                for (var f : started.queued()) replies.add(f.get(10, java.util.concurrent.TimeUnit.SECONDS));
                assertThat(replies).containsExactly(2L, 3L, 4L, 5L, 6L);
                assertThat(shared.roundTrips() - before - started.fillers()).as("the first's, then the four's together")
                        .isEqualTo(2);
            } finally {
                threads.shutdownNow();
            }

            int oldMaster = group.masterPort();
            group.failover();
            int newMaster = group.awaitNewMaster(oldMaster, Duration.ofSeconds(20));

            Poll.until(Duration.ofSeconds(10), "shared round trips to reach the new master", () -> {
                try {
                    incr.get();
                    return ((JedisSentineled) jedis).getCurrentMaster().getPort() == newMaster;
                } catch (JedisException switching) {
                    return false;
                }
            });
            long after = shared.roundTrips();
            Object count = incr.get();
            assertThat(shared.roundTrips() - after).as("through the new master's pool, not alone").isEqualTo(1);
            assertThat(shared.lanes()).as("one lane, the new master's: the old master's went with it")
                    .containsExactly(new redis.clients.jedis.HostAndPort("127.0.0.1", newMaster));
            assertThat((Long) count).as("the replica had the writes").isGreaterThan(6L);
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
                assertSharesRoundTrips(jedis, false);
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
                assertSharesRoundTrips(jedis, true);
            }
        }
    }

    /**
     * Late discovery, every mode: a limiter built while no seed answered decides its exact rules (in
     * shared round trips) and its approximate rules (their sync pipelined over several slots) on
     * Redis by itself once the seeds answer. In 0.2 the approximate rules stayed on their failure
     * policy for the life of the application (Jedis' pipelined() of a client built without a
     * provider throws forever).
     */
    @Test
    void aLimiterBuiltWhileNoClusterSeedAnswersDecidesEveryModeOnRedisOnceTheyDo() {
        try (RedisClusterGroup cluster = RedisClusterGroup.start(3)) {
            cluster.nodes().forEach(RedisProcess::pause);
            assertEveryModeOnRedisOnceItAnswers(TestRedisSettings.cluster(cluster.seeds()), true, 8,
                    () -> cluster.nodes().forEach(RedisProcess::resume));
        }
    }

    @Test
    void aLimiterBuiltWhileNoSentinelAnswersDecidesEveryModeOnRedisOnceTheyDo() {
        try (RedisSentinelGroup group = RedisSentinelGroup.start()) {
            group.sentinels().forEach(RedisProcess::pause);
            // more clients than one sync call holds: the sync is a pipeline of calls
            assertEveryModeOnRedisOnceItAnswers(TestRedisSettings.sentinel(group.masterName(), group.sentinelNodes()), false,
                    SyncScript.KEYS_PER_CALL + 10, () -> group.sentinels().forEach(RedisProcess::resume));
        }
    }

    private static void assertEveryModeOnRedisOnceItAnswers(TestRedisSettings redis, boolean cluster, int clients,
                                                            Runnable answer) {
        dev.sluice.limiter.Rule exact = dev.sluice.limiter.Rule.of("exact", dev.sluice.limiter.Algorithm.FIXED_WINDOW,
                1_000_000, Duration.ofHours(1));
        dev.sluice.limiter.Rule approximate = dev.sluice.limiter.Rule.builder("approx").algorithm(dev.sluice.limiter.Algorithm.FIXED_WINDOW).limit(1_000_000)
                .window(Duration.ofHours(1)).sync(Duration.ofMillis(100)).build();
        dev.sluice.config.SluiceConfig.Builder config = dev.sluice.config.SluiceConfig.builder().rule(exact)
                .rule(approximate).keyPrefix("t:late:").redisTimeout(Duration.ofMillis(100));
        dev.sluice.config.SluiceConfig.RedisSettings settings = redis.timeout(Duration.ofMillis(100)).build();
        config = cluster ? config.redisClusterNodes(settings.clusterNodes())
                : config.redisSentinel(settings.sentinelMaster(), settings.sentinelNodes());
        dev.sluice.internal.metrics.SluiceMetrics metrics = new dev.sluice.internal.metrics.SluiceMetrics();
        java.util.function.BiFunction<dev.sluice.internal.LimiterStack, dev.sluice.limiter.Rule,
                dev.sluice.limiter.RuleDecision.Source> sources = (stack, rule) -> {
                    dev.sluice.limiter.RuleDecision.Source last = null;
                    for (int c = 0; c < clients; c++) {
                        last = stack.limiter().decide(List.of(new dev.sluice.limiter.Acquisition(rule,
                                dev.sluice.key.ClientKey.of("late-" + c)))).rules().get(0).source();
                    }
                    return last;
                };
        try (dev.sluice.internal.LimiterStack stack = dev.sluice.internal.LimiterStack.build(config.build(),
                dev.sluice.limiter.Clock.SYSTEM, null, metrics)) {
            try {
                assertThat(sources.apply(stack, exact)).isEqualTo(dev.sluice.limiter.RuleDecision.Source.BACKSTOP);
                Poll.until(Duration.ofSeconds(5), "the approximate rule on its failure policy (its sync failed)",
                        () -> sources.apply(stack, approximate) == dev.sluice.limiter.RuleDecision.Source.BACKSTOP);
            } finally {
                answer.run();
            }
            Poll.until(Duration.ofSeconds(15), "the exact rule decided by Redis",
                    () -> sources.apply(stack, exact) == dev.sluice.limiter.RuleDecision.Source.REDIS);
            Poll.until(Duration.ofSeconds(15), "the approximate rule decided from synced counts",
                    () -> sources.apply(stack, approximate) == dev.sluice.limiter.RuleDecision.Source.APPROXIMATE);
            long syncs = stack.approximate().engine().syncs();
            Poll.until(Duration.ofSeconds(5), "syncs succeeding", () -> sources.apply(stack, approximate) != null
                    && stack.approximate().engine().syncs() > syncs + 2);
            assertThat(stack.redis().roundTrips().calls()).as("exact decisions in shared round trips").isPositive();
        }
    }

    /** Once discovered, a deferred client lends its connections: calls go in shared round trips, not alone. */
    private static void assertSharesRoundTrips(UnifiedJedis jedis, boolean cluster) {
        SharedRoundTrips shared = new SharedRoundTrips(jedis, cluster);
        byte[] script = "return redis.call('INCRBY', KEYS[1], 3)".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Object reply = shared.evalsha(SharedRoundTripsTest.sha1(script), script,
                List.of(SharedRoundTripsTest.bytes("t:deferred:{shared" + System.nanoTime() + "}")), List.of());
        assertThat(reply).isEqualTo(3L);
        assertThat(shared.roundTrips()).as("NOSCRIPT, then SCRIPT LOAD and the call").isEqualTo(2);
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
