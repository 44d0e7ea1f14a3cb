package dev.sluice.bench;

import dev.sluice.internal.LimiterStack;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.ConnectionFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.providers.PooledConnectionProvider;

import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The Redis every benchmark talks to, and the one pool configuration all contenders share, so
 * that Sluice, Bucket4j and the bare-EVALSHA floor differ only in what they send.
 *
 * <p>The server comes from {@code -Dsluice.bench.redis=redis://127.0.0.1:PORT}; {@code bench/run.sh}
 * starts a {@code redis-server} of its own on a free port and passes it. There is no default:
 * a benchmark must never load a shared server by accident.
 */
public final class BenchRedis {

    /** Connections per pool: the largest thread count measured, so no contender ever waits for a connection. */
    public static final int POOL_SIZE = 64;

    /** Read timeout: generous, a benchmark must not measure fallbacks. */
    public static final int TIMEOUT_MS = 2_000;

    private BenchRedis() {
    }

    public static URI uri() {
        String url = System.getProperty("sluice.bench.redis");
        if (url == null || url.isBlank()) {
            throw new IllegalStateException("-Dsluice.bench.redis=redis://127.0.0.1:PORT is required "
                    + "(bench/run.sh starts a redis-server of its own and passes it)");
        }
        URI uri = URI.create(url.trim());
        if (!"127.0.0.1".equals(uri.getHost()) && !"localhost".equals(uri.getHost())) {
            throw new IllegalStateException("benchmarks send load to the loopback only: " + url);
        }
        return uri;
    }

    public static String host() {
        return uri().getHost();
    }

    public static int port() {
        return uri().getPort() < 0 ? 6379 : uri().getPort();
    }

    /** The pool settings of every contender. */
    public static <T> GenericObjectPoolConfig<T> poolConfig() {
        GenericObjectPoolConfig<T> c = new GenericObjectPoolConfig<>();
        c.setMaxTotal(POOL_SIZE);
        c.setMaxIdle(POOL_SIZE);
        c.setMinIdle(0);
        c.setMaxWait(Duration.ofMillis(TIMEOUT_MS));
        c.setTestOnBorrow(false);
        c.setTestWhileIdle(false);
        c.setJmxEnabled(false);
        return c;
    }

    /**
     * A {@link JedisPooled}, as Sluice's engine takes it (and then shares round trips between
     * concurrent decisions) and the floor uses (one call per round trip, as any Jedis user).
     */
    public static JedisPooled pooled() {
        return new JedisPooled(provider(hostAndPort()));
    }

    /** The same, to another server of the run's own (a second {@code redis-server}, e.g. {@link CostGuard}'s under valgrind). */
    static JedisPooled pooled(HostAndPort server) {
        return new JedisPooled(provider(server));
    }

    /**
     * The same pool behind a plain {@code UnifiedJedis}, whose connections Sluice cannot borrow: every
     * decision makes its own round trip, as before shared round trips.
     */
    public static UnifiedJedis unshared() {
        return new UnifiedJedis(provider(hostAndPort()));
    }

    private static PooledConnectionProvider provider(HostAndPort server) {
        ConnectionFactory connections = new ConnectionFactory(
                RoundTrips.socketFactory(server, TIMEOUT_MS), clientConfig());
        return new PooledConnectionProvider(connections, poolConfig());
    }

    /** A classic {@code JedisPool}, as Bucket4j's proxy manager takes it. */
    public static JedisPool jedisPool() {
        return new JedisPool(BenchRedis.<Jedis>poolConfig(), RoundTrips.socketFactory(hostAndPort(), TIMEOUT_MS),
                clientConfig());
    }

    /** A plain connection for the harness's own look-ups (INFO), not counted as a round trip of anyone's. */
    public static Jedis admin() {
        return admin(hostAndPort());
    }

    static Jedis admin(HostAndPort server) {
        return new Jedis(server, clientConfig());
    }

    private static HostAndPort hostAndPort() {
        return new HostAndPort(host(), port());
    }

    private static JedisClientConfig clientConfig() {
        return DefaultJedisClientConfig.builder().connectionTimeoutMillis(TIMEOUT_MS).socketTimeoutMillis(TIMEOUT_MS).build();
    }

    /** A unique namespace for one benchmark trial's keys, so trials never see each other's state. */
    public static String prefix(String what) {
        return "bench:" + what + ":" + Long.toString(System.nanoTime(), 36) + ":";
    }

    /** Seconds of CPU the Redis server has used (user + system), from {@code INFO cpu}. */
    public static double cpuSeconds(Jedis jedis) {
        double total = 0;
        for (String line : jedis.info("cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_user:") || line.startsWith("used_cpu_sys:")) {
                total += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return total;
    }

    /** {@code INFO commandstats} as command -> calls (commands run inside scripts included). */
    public static Map<String, Long> commandCalls(Jedis jedis) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String line : jedis.info("commandstats").split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) continue;
            String name = line.substring("cmdstat_".length(), line.indexOf(':'));
            int at = line.indexOf("calls=") + "calls=".length();
            out.put(name, Long.parseLong(line.substring(at, line.indexOf(',', at))));
        }
        return out;
    }

    /**
     * Sluice's production composition ({@code LimiterStack}: denied-client cache, failure handling,
     * Redis engine) over {@code jedis}, which the caller keeps and closes.
     */
    static dev.sluice.internal.LimiterStack stack(UnifiedJedis jedis, String prefix, dev.sluice.limiter.Rule rule,
                                                  boolean deniedCache) {
        dev.sluice.config.SluiceConfig config = dev.sluice.config.SluiceConfig.builder().rule(rule).keyPrefix(prefix)
                .deniedCache(deniedCache).deniedCacheMaxKeys(10_000).redisTimeout(java.time.Duration.ofSeconds(2))
                .build();
        return dev.sluice.internal.LimiterStack.build(config, dev.sluice.limiter.Clock.SYSTEM, jedis,
                new dev.sluice.internal.metrics.SluiceMetrics());
    }
}
