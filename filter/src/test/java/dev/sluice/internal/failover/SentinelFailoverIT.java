package dev.sluice.internal.failover;

import dev.sluice.key.ClientKey;
import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.internal.redis.RedisClients;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisSentinelGroup;
import dev.sluice.testing.TestRedisSettings;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisSentineled;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis Sentinel: a master, a replica and three Sentinels started by the test; {@code SENTINEL
 * FAILOVER} under load. The limiter keeps deciding, through the new master once Sentinel announces
 * it, with at most the failure policy's effect (open rules on the local backstop, closed rules
 * refused) during the switch.
 */
class SentinelFailoverIT {

    private static final Duration TIMEOUT = Duration.ofMillis(50);
    private static final SluiceConfig.BreakerSettings BREAKER =
            new SluiceConfig.BreakerSettings(3, Duration.ofMillis(100), Duration.ofSeconds(1));
    private static final Rule API = new Rule("api", Algorithm.FIXED_WINDOW, 10_000_000, Duration.ofMinutes(1),
            10_000_000, 1, FailurePolicy.OPEN, 10_000_000, Duration.ZERO);
    private static final Rule BUCKET = new Rule("bucket", Algorithm.TOKEN_BUCKET, 10_000_000, Duration.ofMinutes(1),
            10_000_000, 1, FailurePolicy.OPEN, 10_000_000, Duration.ZERO);
    private static final Rule LOGIN = new Rule("login", Algorithm.FIXED_WINDOW, 10_000_000, Duration.ofMinutes(1),
            10_000_000, 1, FailurePolicy.CLOSED, 10_000_000, Duration.ZERO);

    @Test
    void decisionsContinueThroughTheNewMasterAfterAFailover() throws Exception {
        SluiceMetrics metrics = new SluiceMetrics();
        try (RedisSentinelGroup group = RedisSentinelGroup.start();
             UnifiedJedis jedis = RedisClients.create(TestRedisSettings.sentinel(group.masterName(), group.sentinelNodes())
                     .timeout(TIMEOUT).build())) {
            RedisEngine engine = new RedisEngine(jedis, "sentinel:", true, Clock.SYSTEM, false);
            FailoverLimiter limiter = new FailoverLimiter(ChaosLoad.observe(engine), new LocalEngine(Clock.SYSTEM, 10_000),
                    BREAKER, "sentinel " + group.masterName(), metrics);
            int oldMaster = group.masterPort();
            ChaosOutcome outcome;
            try (ChaosLoad load = new ChaosLoad(limiter, List.of(API, BUCKET, LOGIN), 4, 200_000).start()) {
                Poll.until(Duration.ofSeconds(10), "200 decisions by Redis",
                        () -> load.samples().stream().filter(ChaosLoad.Sample::byRedis).count() >= 200);

                long faultAt = System.nanoTime();
                group.failover();
                int newMaster = group.awaitNewMaster(oldMaster, Duration.ofSeconds(20));
                long announcedAt = System.nanoTime();
                assertThat(newMaster).isEqualTo(group.initialReplica().port());

                outcome = ChaosOutcome.finish(load, "sentinel-failover", faultAt, announcedAt, 3_000);
                assertThat(((JedisSentineled) jedis).getCurrentMaster().getPort()).isEqualTo(newMaster);
            }
            // a decision after the switch is written on the new master
            limiter.decide(List.of(new dev.sluice.limiter.Acquisition(API, ClientKey.parse("after-failover"))));
            try (Jedis newMaster = new Jedis("127.0.0.1", group.masterPort(), 1000)) {
                assertThat(newMaster.exists(engine.key(API, ClientKey.parse("after-failover")))).isTrue();
            }
            // the switch may cost a few failed calls (the old master turning read-only, its clients killed),
            // and a Sentinel announcement takes up to a second or two: recovery is measured from the announcement
            outcome.assertContract(TIMEOUT.toMillis() * 2, 40, 3_000);
        } finally {
            metrics.unregister();
        }
    }

    /**
     * The approximate mode through a Sentinel failover: its rules keep admitting (from their counts,
     * or on the backstop while a sync fails), and within a few seconds of the announcement the syncs
     * reach the new master, whose breaker is a fresh one (the old master's goes).
     */
    @Test
    void approximateRulesSyncWithTheNewMasterAfterAFailover() throws Exception {
        Rule approx = Rule.builder("approx").algorithm(Algorithm.FIXED_WINDOW).limit(10_000_000).window(Duration.ofHours(1))
                .sync(Duration.ofMillis(100)).build();
        SluiceMetrics metrics = new SluiceMetrics();
        try (RedisSentinelGroup group = RedisSentinelGroup.start()) {
            dev.sluice.config.SluiceConfig config = dev.sluice.config.SluiceConfig.builder()
                    .redisSentinel(group.masterName(), group.sentinelNodes()).redisTimeout(TIMEOUT)
                    .keyPrefix("sentinel:approx:").rule(approx).rule(LOGIN).build();
            try (dev.sluice.internal.LimiterStack stack = dev.sluice.internal.LimiterStack.build(config, Clock.SYSTEM,
                    null, metrics);
                 ChaosLoad load = new ChaosLoad(stack.limiter(), List.of(approx, LOGIN), 3, 200_000).start()) {
                var engine = stack.approximate().engine();
                Poll.until(Duration.ofSeconds(10), "syncs", () -> engine.syncs() > 3);
                int oldMaster = group.masterPort();
                group.failover();
                int newMaster = group.awaitNewMaster(oldMaster, Duration.ofSeconds(20));
                long announcedAt = System.nanoTime();
                long syncsAtAnnouncement = engine.syncs();
                long ms = Poll.millisUntil(Duration.ofSeconds(10), "a sync with the new master",
                        () -> engine.syncs() > syncsAtAnnouncement + 2 && engine.available());
                Poll.until(Duration.ofSeconds(5), "the exact rule decided by the new master",
                        () -> load.lastRedisDecisionNanos() - announcedAt > 0);
                System.out.printf(java.util.Locale.ROOT, "CHAOS sentinel-failover-approximate: syncs with the new master"
                        + " %d ms after the announcement; breakers=%s%n", ms, stack.failover().breakerStates());
                load.close();
                assertThat(load.unexpected()).as("exceptions thrown by decide()").isNull();
                assertThat(load.samples()).as("the approximate (open) rule admits throughout")
                        .filteredOn(x -> !x.closedRule()).allSatisfy(x -> {
                            assertThat(x.allowed()).isTrue();
                            assertThat(x.source()).isIn(dev.sluice.limiter.RuleDecision.Source.APPROXIMATE,
                                    dev.sluice.limiter.RuleDecision.Source.BACKSTOP);
                        });
                assertThat(stack.failover().breakerStates()).containsOnlyKeys("127.0.0.1:" + newMaster);
                try (Jedis master = new Jedis("127.0.0.1", newMaster, 1000)) {
                    assertThat(master.keys("sentinel:approx:{approx:*")).as("the counts synced to the new master").isNotEmpty();
                }
            }
        } finally {
            metrics.unregister();
        }
    }
}
