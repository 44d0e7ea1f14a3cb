package dev.sluice;

import dev.sluice.config.ConfigLoader;
import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.failover.FailoverLimiter;
import dev.sluice.key.BoundedKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.internal.cache.DeniedClientCache;
import dev.sluice.internal.redis.RedisClients;
import dev.sluice.internal.redis.RedisEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * The programmatic entry point: builds the same limiter the filter uses from {@link Properties}
 * or a {@link Map} with the keys of the configuration reference, for code outside a servlet
 * container (batch jobs, message consumers, other frameworks).
 *
 * <pre>{@code
 * try (Sluice sluice = Sluice.create(props)) {
 *     Decision d = sluice.tryAcquire("api", "customer-42");
 *     if (!d.allowed()) { ... d.retryAfterMs() ... }
 * }
 * }</pre>
 *
 * <p>Thread-safe. {@link #close()} releases the Redis pool.
 */
public final class Sluice implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Sluice.class);

    private final SluiceConfig config;
    private final Map<String, Rule> rules;
    private final RateLimiter limiter;
    private final UnifiedJedis redisClient;
    private final SluiceMetrics metrics;

    private Sluice(SluiceConfig config, RateLimiter limiter, UnifiedJedis redisClient, SluiceMetrics metrics) {
        this.config = config;
        Map<String, Rule> byName = new LinkedHashMap<>();
        for (RuleConfig rc : config.rules()) {
            byName.put(rc.name(), rc.rule());
        }
        this.rules = Collections.unmodifiableMap(byName);
        this.limiter = limiter;
        this.redisClient = redisClient;
        this.metrics = metrics;
    }

    /** Builds a limiter from properties (keys as in the configuration reference). */
    public static Sluice create(Properties properties) {
        Map<String, String> map = new LinkedHashMap<>();
        for (String name : properties.stringPropertyNames()) {
            map.put(name, properties.getProperty(name));
        }
        return create(map);
    }

    /** Builds a limiter from a map (keys as in the configuration reference). */
    public static Sluice create(Map<String, String> configuration) {
        return create(ConfigLoader.load(configuration), Clock.SYSTEM);
    }

    /**
     * Builds a limiter from a validated configuration. {@code clock} is the instance's clock: the
     * local engine's, and the scripts' with {@code clock=local}; tests pass a fake one.
     */
    public static Sluice create(SluiceConfig config, Clock clock) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(clock, "clock");
        LocalEngine local = new LocalEngine(clock, config.localMaxKeys());
        SluiceMetrics metrics = new SluiceMetrics();
        if (config.backend() == SluiceConfig.Backend.LOCAL) {
            log.info("Sluice: backend=local; limits are per instance ({} rules)", config.rules().size());
            return new Sluice(config, local, null, metrics);
        }
        UnifiedJedis jedis = RedisClients.create(config.redis());
        try {
            boolean redisClock = config.clock() == SluiceConfig.ClockSource.REDIS;
            RateLimiter redis = new RedisEngine(jedis, config.keyPrefix(), redisClock, clock, config.redis().cluster());
            if (config.deniedCache()) {
                redis = new DeniedClientCache(redis, redisClock, config.deniedCacheMaxKeys());
            }
            RateLimiter limiter = new FailoverLimiter(redis, local, config.breaker(), config.redis().describe(), metrics);
            log.info("Sluice: backend=redis at {}, clock={}, {} rules", config.redis().describe(),
                    config.clock().name().toLowerCase(java.util.Locale.ROOT), config.rules().size());
            return new Sluice(config, limiter, jedis, metrics);
        } catch (RuntimeException e) {
            RedisClients.close(jedis);
            throw e;
        }
    }

    public SluiceConfig config() {
        return config;
    }

    /** The limiter all decisions go through. */
    public RateLimiter limiter() {
        return limiter;
    }

    /**
     * What this limiter counts (decisions, fallbacks, Redis errors, breaker state, latency). The
     * filter registers it over JMX; programmatic users may call {@link SluiceMetrics#register}.
     */
    public SluiceMetrics metrics() {
        return metrics;
    }

    /** The configured rule named {@code name}. */
    public Rule rule(String name) {
        Rule rule = rules.get(name);
        if (rule == null) {
            throw new IllegalArgumentException("no rule '" + name + "'; configured: " + rules.keySet());
        }
        return rule;
    }

    /** The configured rules by name, in configuration order. */
    public Map<String, Rule> rules() {
        return rules;
    }

    /** Takes the rule's configured cost for {@code clientKey} (any string; it is bounded before use). */
    public Decision tryAcquire(String ruleName, String clientKey) {
        Rule rule = rule(ruleName);
        return tryAcquire(ruleName, clientKey, rule.cost());
    }

    /** Takes {@code cost} tokens of the rule for {@code clientKey}. */
    public Decision tryAcquire(String ruleName, String clientKey, long cost) {
        Rule rule = rule(ruleName);
        return decide(List.of(new Acquisition(rule, BoundedKey.forApplicationKey(clientKey), cost)));
    }

    /** Decides several rules for one request atomically (see {@link RateLimiter#decide}). */
    public Decision decide(List<Acquisition> acquisitions) {
        return limiter.decide(acquisitions);
    }

    @Override
    public void close() {
        try {
            metrics.unregister();
            limiter.close();
        } finally {
            if (redisClient != null) {
                try {
                    RedisClients.close(redisClient);
                } catch (Exception e) {
                    log.debug("closing the Redis client failed", e);
                }
            }
        }
    }
}
