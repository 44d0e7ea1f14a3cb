package dev.sluice.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.failover.ChaosLoad.Sample;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.local.LocalEngine;
import dev.sluice.metrics.SluiceMetrics;
import dev.sluice.redis.RedisClients;
import dev.sluice.redis.RedisEngine;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedisSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis misbehaving under load, at the limiter API: the Redis engine (clock=redis) with the local
 * backstop and the failover limiter, on a {@code redis-server} of the test's own, with the
 * configuration defaults (redis.timeout 50 ms, max-wait = timeout; breaker 3 failures, 100 ms
 * doubling to 1 s). Rules: {@code api} (fixed-window, open), {@code bucket} (token-bucket, open),
 * {@code login} (fixed-window, closed), with limits no test reaches: every open-rule decision must
 * admit, whatever Redis does.
 *
 * <p>Each scenario prints one {@code CHAOS <scenario>: ...} line with the figures it measured.
 */
class ChaosIT {

    private static final Duration TIMEOUT = Duration.ofMillis(50);
    private static final SluiceConfig.BreakerSettings BREAKER =
            new SluiceConfig.BreakerSettings(3, Duration.ofMillis(100), Duration.ofSeconds(1));
    /**
     * Scheduling noise: what a decision may take beyond its Redis bound on a shared, overloaded 2-core
     * machine (load average above 10 seen). The figures printed are the measured ones.
     */
    private static final long MARGIN_MS = Long.getLong("chaos.margin-ms", 150);
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
    private static final ProtocolCommand DEBUG = () -> "DEBUG".getBytes(StandardCharsets.US_ASCII);

    private final MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
    private RedisProcess redis;
    private UnifiedJedis jedis;
    private SluiceMetrics metrics;
    private FailoverLimiter limiter;

    private static Rule rule(String name, Algorithm algorithm, FailurePolicy policy) {
        return new Rule(name, algorithm, 10_000_000, Duration.ofMinutes(1), 10_000_000, 1, policy, 10_000_000, Duration.ZERO);
    }

    private void startRedisAndLimiter(String scenario, int poolSize, String... redisArgs) {
        redis = RedisProcess.start(redisArgs);
        jedis = RedisClients.create(TestRedisSettings.standalone(redis.url()).timeout(TIMEOUT)
                .pool(poolSize, TIMEOUT).build());
        RedisEngine engine = new RedisEngine(jedis, "chaos:", true, Clock.SYSTEM, false);
        metrics = new SluiceMetrics();
        metrics.register("chaos-" + scenario, RULES);
        limiter = new FailoverLimiter(ChaosLoad.observe(engine), new LocalEngine(Clock.SYSTEM, 10_000), BREAKER,
                redis.url(), metrics);
    }

    @AfterEach
    void stop() {
        if (limiter != null) limiter.close();
        if (jedis != null) jedis.close();
        if (metrics != null) metrics.unregister();
        if (redis != null) redis.close();
    }

    @Test
    void redisKilledMidLoadAndRestartedEmpty() throws Exception {
        startRedisAndLimiter("kill-restart", 16);
        ObjectName bean = SluiceMetrics.instanceObjectName("chaos-kill-restart");
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000).start()) {
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
            Outcome o = finish(load, "kill-restart", faultAt, mendedAt);

            assertThat(jmx.getAttribute(bean, "BreakerState")).isEqualTo("CLOSED");
            assertThat((Long) jmx.getAttribute(bean, "BreakerOpenings")).isGreaterThanOrEqualTo(1L);
            o.assertContract(TIMEOUT.toMillis() * 2); // a pool wait can precede a read; connects fail at once
        }
    }

    @Test
    void redisPausedWithSigstopThenResumed() throws Exception {
        startRedisAndLimiter("sigstop", 16);
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000).start()) {
            warmUp(load);
            long faultAt = System.nanoTime();
            redis.pause();
            awaitFallbacks(300);
            holdFault(faultAt);
            redis.resume();
            long mendedAt = System.nanoTime();

            Outcome o = finish(load, "sigstop", faultAt, mendedAt);

            assertThat((Long) jmx.getAttribute(SluiceMetrics.instanceObjectName("chaos-sigstop"), "RedisTimeouts"))
                    .as("a paused Redis times out rather than refusing").isPositive();
            // a stuck Redis accepts connections: a new one can cost a connect and a read timeout after a pool wait
            o.assertContract(TIMEOUT.toMillis() * 3);
        }
    }

    @Test
    void scriptFlushUnderLoadIsInvisible() throws Exception {
        startRedisAndLimiter("script-flush", 16);
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 4, 200_000).start();
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

            Outcome o = finish(load, "script-flush", faultAt, mendedAt);

            assertThat(o.fault.stream().filter(s -> !s.byRedis()).count())
                    .as("decisions not made by Redis while its script cache was flushed").isZero();
            o.assertContract(TIMEOUT.toMillis());
        }
    }

    @Test
    void poolExhaustedBySlowCalls() throws Exception {
        // 2 connections for 6 threads; DEBUG SLEEP makes the server stall like a slow command would
        startRedisAndLimiter("pool-exhausted", 2, "--enable-debug-command", "yes");
        ObjectName bean = SluiceMetrics.instanceObjectName("chaos-pool-exhausted");
        try (ChaosLoad load = new ChaosLoad(limiter, RULES, 6, 200_000).start();
             Jedis admin = new Jedis("127.0.0.1", redis.port(), 5_000)) {
            warmUp(load);
            long healthyFallbacks = (Long) jmx.getAttribute(bean, "FallbackDecisions");
            long faultAt = System.nanoTime();
            CompletableFuture<Object> sleep = CompletableFuture.supplyAsync(() -> admin.sendCommand(DEBUG, "SLEEP", "1.6"));
            awaitFallbacks(300);
            sleep.join();
            long mendedAt = System.nanoTime();

            Outcome o = finish(load, "pool-exhausted", faultAt, mendedAt);

            assertThat(healthyFallbacks).as("no fallback with a healthy Redis, even with 2 connections for 6 threads")
                    .isZero();
            assertThat((Long) jmx.getAttribute(bean, "RedisTimeouts")).as("pool waits and reads counted as timeouts")
                    .isPositive();
            o.assertContract(TIMEOUT.toMillis() * 2); // a pool wait, then a read on the freed connection
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
    private Outcome finish(ChaosLoad load, String scenario, long faultAt, long mendedAt) throws InterruptedException {
        Poll.until(Duration.ofMillis(RECOVERY_BOUND_MS + 2_000), "a Redis decision after Redis was mended",
                () -> load.lastRedisDecisionNanos() - mendedAt > 0);
        long recoveredAt = load.lastRedisDecisionNanos();
        Poll.until(Duration.ofSeconds(5), "Redis deciding for 300 ms after recovery",
                () -> load.lastRedisDecisionNanos() - recoveredAt > 300_000_000L);
        load.close();
        Outcome o = new Outcome(load, faultAt, mendedAt);
        System.out.println(o.line(scenario));
        if (Boolean.getBoolean("chaos.debug")) {
            o.all.stream().filter(Sample::calledRedis).sorted((a, b) -> Long.compare(b.nanos(), a.nanos())).limit(8)
                    .forEach(x -> System.out.printf(Locale.ROOT, "  slow: +%.1fms took %.1fms (Redis call %.1fms) %s%n",
                            (x.startNanos() - faultAt) / 1e6, x.nanos() / 1e6, x.redisNanos() / 1e6, x.source()));
        }
        return o;
    }

    /** What the samples say about one scenario. */
    private static final class Outcome {
        final List<Sample> all;
        final List<Sample> fault;
        final long mendedAt;
        final Sample firstRedisAfterMend;
        final Throwable unexpected;

        Outcome(ChaosLoad load, long faultAt, long mendedAt) {
            this.all = load.samples().stream().filter(s -> s.startNanos() - faultAt >= 0).toList(); // warm-up excluded
            this.mendedAt = mendedAt;
            this.unexpected = load.unexpected();
            this.firstRedisAfterMend = all.stream().filter(s -> s.byRedis() && s.startNanos() - mendedAt >= 0)
                    .findFirst().orElseThrow();
            long recoveredAt = firstRedisAfterMend.startNanos();
            this.fault = all.stream().filter(s -> s.startNanos() - faultAt >= 0 && s.startNanos() - recoveredAt < 0)
                    .toList();
        }

        double recoverySeconds() {
            return Math.max(0, firstRedisAfterMend.startNanos() + firstRedisAfterMend.nanos() - mendedAt) / 1e9;
        }

        List<Sample> redisCalls() {
            return all.stream().filter(Sample::calledRedis).toList();
        }

        List<Sample> withoutRedis() {
            return all.stream().filter(s -> !s.calledRedis()).toList();
        }

        long failedRedisCalls() {
            return all.stream().filter(s -> s.calledRedis() && !s.byRedis()).count();
        }

        String line(String scenario) {
            long fallback = fault.stream().filter(s -> s.source() == Source.LOCAL).count();
            long unavailable = fault.stream().filter(s -> s.source() == Source.UNAVAILABLE).count();
            return String.format(Locale.ROOT, "CHAOS %s: decisions=%d during-fault=%d fallback=%d unavailable=%d "
                            + "failed-redis-calls=%d p99-during-fault-ms=%.2f max-redis-call-ms=%.1f max-without-redis-ms=%.2f "
                            + "recovery-s=%.3f",
                    scenario, all.size(), fault.size(), fallback, unavailable, failedRedisCalls(), ChaosLoad.p99Millis(fault),
                    ChaosLoad.maxMillis(redisCalls()), ChaosLoad.maxMillis(withoutRedis()), recoverySeconds());
        }

        void assertContract(long redisBoundMs) {
            assertThat(unexpected).as("exceptions thrown by decide()").isNull();
            assertThat(all).as("open rules: every decision admits, none unavailable")
                    .filteredOn(s -> !s.closedRule())
                    .allSatisfy(s -> {
                        assertThat(s.failed()).isFalse();
                        assertThat(s.allowed()).isTrue();
                        assertThat(s.source()).isIn(Source.REDIS, Source.LOCAL);
                    });
            assertThat(all).as("closed rules: decided by Redis or refused as unavailable, never by the backstop")
                    .filteredOn(Sample::closedRule)
                    .allSatisfy(s -> assertThat(s.source()).isIn(Source.REDIS, Source.UNAVAILABLE));
            assertThat(failedRedisCalls()).as("failed Redis calls: the breaker stops calling a sick Redis")
                    .isLessThanOrEqualTo(MAX_FAILED_CALLS);
            assertThat(ChaosLoad.maxMillis(redisCalls())).as("slowest decision that called Redis (ms)")
                    .isLessThanOrEqualTo((double) redisBoundMs + MARGIN_MS);
            assertThat(ChaosLoad.maxMillis(withoutRedis())).as("slowest decision that did not call Redis (ms)")
                    .isLessThanOrEqualTo((double) MARGIN_MS);
            assertThat(recoverySeconds() * 1000).as("ms from Redis mended to its first decision")
                    .isLessThanOrEqualTo((double) RECOVERY_BOUND_MS);
            assertThat(all).as("after recovery every decision is Redis's again")
                    .filteredOn(s -> s.startNanos() - firstRedisAfterMend.startNanos() > 100_000_000L)
                    .isNotEmpty()
                    .allSatisfy(s -> assertThat(s.source()).isEqualTo(Source.REDIS));
        }
    }
}
