package dev.sluice.internal;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.approximate.ApproximateEngine;
import dev.sluice.internal.approximate.ApproximateLimiter;
import dev.sluice.internal.cache.DeniedClientCache;
import dev.sluice.internal.failover.FailoverLimiter;
import dev.sluice.internal.failover.Nodes;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.internal.redis.RedisClients;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.internal.redis.SyncScript;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Settlement;
import redis.clients.jedis.UnifiedJedis;

import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * The one composition of Sluice's limiter, used by {@code Sluice}, the filter and the tests alike.
 * With {@code backend=redis}, a decision passes, in this order:
 * <ol>
 *   <li>the <b>approximate mode</b> ({@code rule.<name>.sync}): the acquisitions of approximate rules are
 *       decided here, from this instance's counts, and never go further per request (their counts go to
 *       Redis once per sync interval, on a thread of their own); the others go on (see
 *       {@link ApproximateLimiter} for a request with both);</li>
 *   <li>the <b>denied-client cache</b> ({@code denied-cache}): a client Redis denied a moment ago is
 *       denied again from memory, without a call;</li>
 *   <li>the <b>failure handling</b>: the circuit breaker, then, when Redis cannot answer, the failure
 *       policy of the request's rules (the local backstop at {@code fallback-limit} for {@code open}
 *       rules, a refusal for {@code closed} ones);</li>
 *   <li>the <b>Redis engine</b>: one script call.</li>
 * </ol>
 * The cache is outside the failure handling, so its answers count as neither a success nor a failure
 * of Redis: a flood from a denied client cannot keep the breaker from opening. With
 * {@code backend=local} the local engine decides alone.
 */
public final class LimiterStack implements AutoCloseable {

    private final RateLimiter top;
    private final LocalEngine local;
    private final RedisEngine redis;
    private final FailoverLimiter failover;
    private final DeniedClientCache cache;
    private final ApproximateLimiter approximate;
    private final UnifiedJedis ownedClient;

    private LimiterStack(RateLimiter top, LocalEngine local, RedisEngine redis, FailoverLimiter failover,
                         DeniedClientCache cache, ApproximateLimiter approximate, UnifiedJedis ownedClient) {
        this.top = top;
        this.local = local;
        this.redis = redis;
        this.failover = failover;
        this.cache = cache;
        this.approximate = approximate;
        this.ownedClient = ownedClient;
    }

    /**
     * Builds the stack for a configuration.
     *
     * @param config  the validated configuration
     * @param clock   the instance's clock (the local engine's, and the scripts' with {@code clock=local})
     * @param client  a Redis client the caller owns and closes, or {@code null} to create one from
     *                {@code config.redis()} (closed with this stack)
     * @param metrics where the layers count what they do; its {@link SluiceMetrics#name() name} is in their log lines
     */
    public static LimiterStack build(SluiceConfig config, Clock clock, UnifiedJedis client, SluiceMetrics metrics) {
        return build(config, clock, client, metrics, UnaryOperator.identity());
    }

    /**
     * {@link #build(SluiceConfig, Clock, UnifiedJedis, SluiceMetrics)} with {@code aroundRedis} wrapped
     * around the Redis engine: tests observe the production stack's calls to Redis this way.
     */
    public static LimiterStack build(SluiceConfig config, Clock clock, UnifiedJedis client, SluiceMetrics metrics,
                                     UnaryOperator<RateLimiter> aroundRedis) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(clock, "clock");
        LocalEngine local = new LocalEngine(clock, config.localMaxKeys());
        if (config.backend() == SluiceConfig.Backend.LOCAL) {
            metrics.breakerState("NONE");
            return new LimiterStack(local, local, null, null, null, null, null); // sync changes nothing for one instance
        }
        UnifiedJedis jedis = client != null ? client : RedisClients.create(config.redis(), metrics.name());
        try {
            boolean redisClock = config.clock() == SluiceConfig.ClockSource.REDIS;
            boolean cluster = config.redis().cluster();
            RedisEngine redis = new RedisEngine(jedis, config.keyPrefix(), redisClock, clock, cluster, metrics::name);
            FailoverLimiter failover = new FailoverLimiter(aroundRedis.apply(redis), local, config.breaker(),
                    config.redis().describe(), metrics, Nodes.of(redis::nodeOf, redis::nodes, cluster));
            metrics.slotsReleasedLate(redis::slotsReleasedLate);
            failover.addListener(new FailoverLimiter.Listener() {
                @Override
                public void releasesNotSent(List<Settlement> releases) {
                    redis.releaseLater(releases); // sent once Redis answers, not on the request's thread
                }
            });
            RateLimiter top = failover;
            DeniedClientCache cache = null;
            SluiceConfig.DeniedCacheSettings settings = config.deniedCache();
            if (settings.enabled()) {
                cache = new DeniedClientCache(failover, redisClock, settings.maxKeys(),
                        settings.revalidateAfter().toNanos(), failover::redisAvailable, System::nanoTime);
                DeniedClientCache forget = cache;
                failover.addListener(new FailoverLimiter.Listener() {
                    @Override
                    public void redisRecovered() {
                        forget.clear(); // Redis may be back without its data
                    }
                });
                top = cache;
                metrics.deniedCache(cache::size);
            }
            // its sync thread starts with the first approximate rule
            ApproximateEngine counts = new ApproximateEngine(clock, redisClock, new SyncScript(jedis, cluster),
                    config.keyPrefix(), config.localMaxKeys(), true, metrics::name);
            ApproximateLimiter approximate = new ApproximateLimiter(top, failover, counts);
            return new LimiterStack(approximate, local, redis, failover, cache, approximate, client == null ? jedis : null);
        } catch (RuntimeException e) {
            if (client == null) RedisClients.close(jedis);
            throw e;
        }
    }

    /** Where every decision goes. */
    public RateLimiter limiter() {
        return top;
    }

    /** The local engine: the whole limiter with {@code backend=local}, else the backstop. */
    public LocalEngine local() {
        return local;
    }

    /** The Redis engine, or {@code null} with {@code backend=local}. */
    public RedisEngine redis() {
        return redis;
    }

    /** The failure handling, or {@code null} with {@code backend=local}. */
    public FailoverLimiter failover() {
        return failover;
    }

    /** The approximate mode's layer, or {@code null} with {@code backend=local}. */
    public ApproximateLimiter approximate() {
        return approximate;
    }

    /** The denied-client cache, or {@code null} when off or with {@code backend=local}. */
    public DeniedClientCache cache() {
        return cache;
    }

    /** Closes the layers and the Redis client if this stack created it. */
    @Override
    public void close() {
        try {
            top.close();
        } finally {
            if (ownedClient != null) RedisClients.close(ownedClient);
        }
    }
}
