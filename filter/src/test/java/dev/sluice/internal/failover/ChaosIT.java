package dev.sluice.internal.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.internal.failover.ChaosLoad.Sample;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.commands.ProtocolCommand;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis misbehaving under load, at the limiter API: the production composition ({@link LimiterStack}:
 * denied-client cache, failure handling with the local backstop, the Redis engine with clock=redis)
 * on a {@code redis-server} of the test's own, with the configuration defaults (redis.timeout 50 ms,
 * max-wait = timeout; breaker 3 failures, 100 ms doubling to 1 s). Rules: {@code api}
 * (fixed-window, open), {@code bucket} (token-bucket, open), {@code login} (fixed-window, closed),
 * with limits no test reaches: every open-rule decision must admit, whatever Redis does.
 *
 * <p>Meanwhile one client floods the rule {@code flood} (one request an hour), which denies it: the
 * denied-client cache answers that flood from memory. Those answers must count as neither success
 * nor failure of Redis, so the other clients still see the breaker open and stop paying the timeout
 * (before 0.2 the flood kept resetting the breaker's failure count).
 *
 * <p>Each scenario prints one {@code CHAOS <scenario>: ...} line with the figures it measured.
 */
class ChaosIT {

    private static final Duration TIMEOUT = Duration.ofMillis(50);
    private static final SluiceConfig.BreakerSettings BREAKER =
            new SluiceConfig.BreakerSettings(3, Duration.ofMillis(100), Duration.ofSeconds(1));
    /** Failed Redis calls an outage may cost: the breaker's threshold, calls in flight, and one per probe. */
    private static final long MAX_FAILED_CALLS = 30;
    /** Recovery bound: the breaker's longest open interval plus a margin. */
    private static final long RECOVERY_BOUND_MS = BREAKER.openMax().toMillis() + 500;

    /** How long a kill or a pause lasts: 100 + 200 + 400 + 800 ms of failed probes take the breaker to open-max. */
    private static final Duration FAULT = Duration.ofMillis(1600);

    private static final Rule API = rule("api", Algorithm.FIXED_WINDOW, FailurePolicy.OPEN);
    private static final Rule BUCKET = rule("bucket", Algorithm.TOKEN_BUCKET, FailurePolicy.OPEN);
    private static final Rule LOGIN = rule("login", Algorithm.FIXED_WINDOW, FailurePolicy.CLOSED);
    private static final List<Rule> RULES = List.of(API, BUCKET, LOGIN);
    private static final Rule FLOOD = Rule.builder("flood").limit(1).window(Duration.ofHours(1)).build();
    private static final ProtocolCommand DEBUG = () -> "DEBUG".getBytes(StandardCharsets.US_ASCII);

    private final MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
    private RedisProcess redis;
    private SluiceMetrics metrics;
    private LimiterStack stack;
    private RateLimiter limiter;

    private static Rule rule(String name, Algorithm algorithm, FailurePolicy policy) {
        return new Rule(name, algorithm, 10_000_000, Duration.ofMinutes(1), 10_000_000, 1, policy, 10_000_000, Duration.ZERO);
    }

    private void startRedisAndLimiter(String scenario, int poolSize, String... redisArgs) {
        startRedisAndLimiter(scenario, poolSize, TIMEOUT, redisArgs);
    }

    private void startRedisAndLimiter(String scenario, int poolSize, Duration timeout, String... redisArgs) {
        redis = RedisProcess.start(redisArgs);
        SluiceConfig.Builder config = SluiceConfig.builder().redisUrl(redis.url()).redisTimeout(timeout)
                .redisPoolMaxTotal(poolSize).redisPoolMaxWait(timeout).keyPrefix("chaos:").localMaxKeys(10_000)
                .breakerFailureThreshold(BREAKER.failureThreshold()).breakerOpenBase(BREAKER.openBase())
                .breakerOpenMax(BREAKER.openMax());
        RULES.forEach(config::rule);
        config.rule(FLOOD);
        metrics = new SluiceMetrics();
        metrics.register("chaos-" + scenario, RULES);
        stack = LimiterStack.build(config.build(), Clock.SYSTEM, null, metrics, ChaosLoad::observe);
        limiter = stack.limiter();
    }

    @AfterEach
    void stop() {
        if (stack != null) stack.close();
        if (metrics != null) metrics.unregister();
        if (redis != null) redis.close();
    }

    @Test
    void redisKilledMidLoadAndRestartedEmpty() throws Exception {
        startRedisAndLimiter("kill-restart", 16);
        ObjectName bean = SluiceMetrics.instanceObjectName("chaos-kill-restart");
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000, FLOOD).start()) {
            warmUp(load);
            long faultAt = System.nanoTime();
            redis.kill();
            awaitFallbacks(300);
            holdFault(faultAt);
            assertThat(jmx.getAttribute(bean, "BreakerState")).as("read over JMX during the outage").isIn("OPEN", "HALF_OPEN");
            assertThat((Long) jmx.getAttribute(bean, "FallbackDecisions")).isPositive();
            assertThat((Long) jmx.getAttribute(bean, "ClosedRuleRefusals")).isPositive();
            assertThat((Long) jmx.getAttribute(bean, "RedisErrors")).isPositive();

            redis.restart(); // empty: no keys, no script cache
            long mendedAt = System.nanoTime();
            ChaosOutcome o = finish(load, "kill-restart", faultAt, mendedAt);

            assertThat(jmx.getAttribute(bean, "BreakerState")).isEqualTo("CLOSED");
            assertThat((Long) jmx.getAttribute(bean, "BreakerOpenings")).isGreaterThanOrEqualTo(1L);
            o.assertContract(TIMEOUT.toMillis() * 2, MAX_FAILED_CALLS, RECOVERY_BOUND_MS); // a pool wait, then a read
        }
    }

    @Test
    void redisPausedWithSigstopThenResumed() throws Exception {
        startRedisAndLimiter("sigstop", 16);
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000, FLOOD).start()) {
            warmUp(load);
            long faultAt = System.nanoTime();
            redis.pause();
            awaitFallbacks(300);
            holdFault(faultAt);
            redis.resume();
            long mendedAt = System.nanoTime();

            ChaosOutcome o = finish(load, "sigstop", faultAt, mendedAt);

            assertThat((Long) jmx.getAttribute(SluiceMetrics.instanceObjectName("chaos-sigstop"), "RedisTimeouts"))
                    .as("a paused Redis times out rather than refusing").isPositive();
            o.assertContract(TIMEOUT.toMillis() * 2, MAX_FAILED_CALLS, RECOVERY_BOUND_MS); // a pool wait, then a read
        }
    }

    @Test
    void scriptFlushUnderLoadIsInvisible() throws Exception {
        // this scenario is about the script cache, not timeouts: a busy machine must not turn a slow reply
        // into a fallback here
        Duration timeout = Duration.ofSeconds(1);
        startRedisAndLimiter("script-flush", 16, timeout);
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000, FLOOD).start();
             Jedis admin = new Jedis("127.0.0.1", redis.port())) {
            warmUp(load);
            long faultAt = System.nanoTime();
            for (int i = 0; i < 20; i++) {
                admin.scriptFlush();
                long flushedAt = System.nanoTime();
                Poll.until(Duration.ofSeconds(5), "a Redis decision after SCRIPT FLUSH",
                        () -> load.lastRedisDecisionNanos() - flushedAt > 0);
            }
            long mendedAt = System.nanoTime();

            ChaosOutcome o = finish(load, "script-flush", faultAt, mendedAt);

            assertThat(o.fault.stream().filter(s -> !s.byRedis()).count())
                    .as("decisions not made by Redis while its script cache was flushed").isZero();
            assertThat(o.failedRedisCalls()).isZero();
            o.assertContract(timeout.toMillis(), 0, RECOVERY_BOUND_MS);
        }
    }

    /**
     * An operator flushes Redis to lift every limit: the flooding client, denied for an hour and answered
     * from the denied-client cache, is admitted again within the revalidate interval (1 s), as Redis
     * alone would admit it.
     */
    @Test
    void flushallLiftsARememberedDenialWithinTheRevalidateInterval() throws Exception {
        // about the cache following Redis, not timeouts: a busy machine must not turn a slow reply into a fallback
        startRedisAndLimiter("flushall", 16, Duration.ofSeconds(1));
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 2, 200_000, FLOOD).start();
             Jedis admin = new Jedis("127.0.0.1", redis.port())) {
            warmUp(load);
            Poll.until(Duration.ofSeconds(5), "the flood answered from memory",
                    () -> load.flood().requests() - load.flood().redisCalls() > 10_000);
            long admittedBefore = load.flood().admitted();
            long flushedAt = System.nanoTime();
            admin.flushAll();
            Poll.until(Duration.ofSeconds(5), "the flooding client admitted again after FLUSHALL",
                    () -> load.flood().admitted() > admittedBefore);
            double followedMs = (System.nanoTime() - flushedAt) / 1e6;
            ChaosOutcome o = finish(load, "flushall", flushedAt, flushedAt);
            System.out.printf(java.util.Locale.ROOT, "CHAOS flushall: the denied client was admitted again %.0f ms after"
                    + " FLUSHALL (denied-cache.revalidate 1000 ms)%n", followedMs);
            assertThat(followedMs).isLessThanOrEqualTo(1000 + ChaosOutcome.MARGIN_MS + 500);
            assertThat(o.failedRedisCalls()).isZero();
        }
    }

    @Test
    void poolExhaustedBySlowCalls() throws Exception {
        // 2 connections for 6 threads; DEBUG SLEEP makes the server stall like a slow command would
        startRedisAndLimiter("pool-exhausted", 2, "--enable-debug-command", "yes");
        ObjectName bean = SluiceMetrics.instanceObjectName("chaos-pool-exhausted");
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 6, 200_000, FLOOD).start();
             Jedis admin = new Jedis("127.0.0.1", redis.port(), 5_000)) {
            warmUp(load);
            long healthyFallbacks = (Long) jmx.getAttribute(bean, "FallbackDecisions");
            long healthyDecisions = load.samples().size();
            long faultAt = System.nanoTime();
            CompletableFuture<Object> sleep = CompletableFuture.supplyAsync(() -> admin.sendCommand(DEBUG, "SLEEP", "1.6"));
            awaitFallbacks(300);
            sleep.join();
            long mendedAt = System.nanoTime();

            ChaosOutcome o = finish(load, "pool-exhausted", faultAt, mendedAt);

            // 2 connections for 6 threads is not ordinary load: on a busy machine some pool waits time out
            // even before the fault, so the healthy phase's fallbacks are reported, not asserted
            System.out.printf("CHAOS pool-exhausted: fallbacks before the fault %d of %d decisions%n",
                    healthyFallbacks, healthyDecisions);
            assertThat((Long) jmx.getAttribute(bean, "RedisTimeouts")).as("pool waits and reads counted as timeouts")
                    .isPositive();
            o.assertContract(TIMEOUT.toMillis() * 2, MAX_FAILED_CALLS, RECOVERY_BOUND_MS); // a pool wait, then a read on the freed connection
        }
    }

    /**
     * Keeps the fault in place until {@link #FAULT} after it began: long enough for failed probes to
     * double the breaker's open interval to its maximum, so the recovery figure is the worst case.
     * (The fault's length is part of the scenario; nothing is awaited here.)
     */
    private static void holdFault(long faultAt) {
        long end = faultAt + FAULT.toNanos();
        while (System.nanoTime() - end < 0) {
            LockSupport.parkNanos(end - System.nanoTime());
        }
    }

    private void warmUp(ChaosLoad load) {
        Poll.until(Duration.ofSeconds(10), "200 decisions by Redis", () -> load.samples().stream()
                .filter(Sample::byRedis).count() >= 200);
    }

    private void awaitFallbacks(long n) {
        long before = metrics == null ? 0 : fallbacksSoFar();
        Poll.until(Duration.ofSeconds(10), n + " decisions by the failure policy",
                () -> fallbacksSoFar() - before >= n);
    }

    private long fallbacksSoFar() {
        try {
            ObjectName bean = SluiceMetrics.instanceObjectName(metrics.instanceName());
            return (Long) jmx.getAttribute(bean, "FallbackDecisions") + (Long) jmx.getAttribute(bean, "ClosedRuleRefusals");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Waits for recovery and a stretch of healthy decisions, stops the load, and prints the figures. */
    private static ChaosOutcome finish(ChaosLoad load, String scenario, long faultAt, long mendedAt) {
        return ChaosOutcome.finish(load, scenario, faultAt, mendedAt, RECOVERY_BOUND_MS);
    }
}
