package dev.sluice.internal.redis;

import dev.sluice.config.SluiceConfig;
import dev.sluice.config.SluiceConfig.HostPort;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.ClusterCommandObjects;
import redis.clients.jedis.CommandObjects;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.JedisSentineled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.executors.ClusterCommandExecutor;
import redis.clients.jedis.executors.CommandExecutor;
import redis.clients.jedis.executors.DefaultCommandExecutor;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.providers.ConnectionProvider;
import redis.clients.jedis.providers.SentineledConnectionProvider;

import javax.net.ssl.SSLParameters;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Builds the pooled Jedis client for {@link SluiceConfig.RedisSettings}: a {@link JedisPooled} for a
 * standalone server, a {@link JedisSentineled} that follows the Sentinel's master, or a
 * {@link JedisCluster}. Every call is bounded by {@code redis.timeout}:
 * <ul>
 *   <li>connect and read timeouts are both {@code redis.timeout};</li>
 *   <li>waiting for a pooled connection is bounded by {@code redis.pool.max-wait};</li>
 *   <li>a borrowed connection is not PINGed first ({@code testOnBorrow=false}), so a decision costs
 *       one round trip; broken idle connections are found by the pool's background evictor instead,
 *       and a connection that fails mid-call is discarded by Jedis;</li>
 *   <li>a new connection sends nothing before its first command (no {@code CLIENT SETNAME}/
 *       {@code SETINFO}; only {@code AUTH} and {@code SELECT} when configured): when Redis is stuck, a
 *       connection made for a waiting caller would otherwise add a second read timeout to someone's
 *       request;</li>
 *   <li>on Cluster, redirections (MOVED/ASK) and retries after a node failure stop once
 *       {@code redis.timeout} has passed in total, so a dying node costs about one timeout, not
 *       five.</li>
 * </ul>
 * TLS ({@code rediss://} or {@code redis.ssl=true}) uses the JVM's default trust store
 * ({@code javax.net.ssl.trustStore}) and verifies that the server's certificate names the host
 * (or IP address) Sluice connects to. Credentials go to {@code AUTH user password} (Redis 6 ACL) or
 * {@code AUTH password}; Sentinels are asked without credentials.
 *
 * <p>A standalone client connects on its first call. Sentinel and Cluster clients ask their
 * Sentinels or seeds for the topology at once; if none answers, the client is built anyway and a
 * background thread asks again every {@value #DEFERRED_RETRY_MILLIS} ms (calls failing at once
 * meanwhile, like calls to a dead Redis), so that an application can start while Redis is away,
 * under the failure policy, whatever the topology, and no request pays for the discovery.
 *
 * <p>Every client built here tells {@link SharedRoundTrips} where its pooled connections come from
 * ({@link NodeConnections.Source}: which node serves a key, the nodes there are), so that concurrent
 * decisions can share round trips and the failure handling can keep a breaker per node. A Cluster
 * client's slot map follows the cluster ({@link ClusterTopology}: read again every
 * {@code redis.cluster.refresh-period}, and soon after a failure or a redirection).
 */
public final class RedisClients {

    /** Sentinel/Cluster unreachable at start: the least time between two attempts to ask them for the topology. */
    static final long DEFERRED_RETRY_MILLIS = 500;

    private static final Logger LOG = LoggerFactory.getLogger(RedisClients.class);

    /** Cluster: attempts per call (first try plus redirections or retries), all within one timeout. */
    static final int CLUSTER_MAX_ATTEMPTS = 3;

    /** The thread commons-pool2 runs every pool's evictor on, one per class loader holding commons-pool2. */
    static final String EVICTOR_THREAD = "commons-pool-evictor";
    private static final long EVICTOR_EXIT_MILLIS = 1000;

    /** Clients made by {@link #create} and not yet {@link #close closed}, in this class loader. */
    private static final AtomicInteger OPEN = new AtomicInteger();

    private RedisClients() {
    }

    /**
     * A new client; the caller closes it with {@link #close(UnifiedJedis)} (which closes its pools).
     * Never fails because Redis is away: see the class comment.
     */
    public static UnifiedJedis create(SluiceConfig.RedisSettings settings) {
        return create(settings, "sluice");
    }

    /**
     * {@link #create(SluiceConfig.RedisSettings)} for the Sluice instance named {@code instance}
     * ({@code shop/sluice}), which its log lines and its discovery thread's name carry.
     */
    public static UnifiedJedis create(SluiceConfig.RedisSettings settings, String instance) {
        UnifiedJedis client = newClient(settings, instance);
        OPEN.incrementAndGet();
        return client;
    }

    /**
     * Closes a client of {@link #create}, and after the last one waits (at most a second) until
     * commons-pool2's evictor thread has ended. commons-pool2 shuts that thread's executor down when
     * its last pool closes, but the thread may still be exiting when {@code close()} returns, and a
     * container that looks for leaked threads as soon as the application has stopped (Tomcat: "appears
     * to have started a thread named [commons-pool-evictor] but has failed to stop it") would warn;
     * the distribution tests saw it about one undeployment in four.
     */
    public static void close(UnifiedJedis client) {
        try {
            client.close();
        } finally {
            if (OPEN.decrementAndGet() == 0) awaitEvictorExit();
        }
    }

    private static void awaitEvictorExit() {
        ClassLoader pools = ConnectionPoolConfig.class.getClassLoader();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EVICTOR_EXIT_MILLIS);
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            // the evictor of another copy of commons-pool2 (another application) is not ours to wait for
            if (!t.getName().equals(EVICTOR_THREAD) || t.getContextClassLoader() != pools) continue;
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            try {
                if (left > 0) t.join(left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static UnifiedJedis newClient(SluiceConfig.RedisSettings settings, String instance) {
        ConnectionPoolConfig pool = poolConfig(settings);
        if (settings.cluster()) {
            Set<HostAndPort> seeds = hostsOf(settings.clusterNodes());
            JedisClientConfig config = clientConfig(settings, false);
            try {
                return new SharingCluster(new ClusterConnectionProvider(seeds, config, pool), settings, instance);
            } catch (JedisException unreachable) {
                return deferred(settings, instance, unreachable, true, () -> new ClusterConnectionProvider(seeds, config, pool),
                        p -> new ClusterCommandExecutor((ClusterConnectionProvider) p, CLUSTER_MAX_ATTEMPTS, settings.timeout()));
            }
        }
        if (settings.sentinel()) {
            Set<HostAndPort> sentinels = hostsOf(settings.sentinelNodes());
            JedisClientConfig master = clientConfig(settings, true);
            JedisClientConfig sentinel = sentinelConfig(settings);
            try {
                return new SharingSentineled(new SentineledConnectionProvider(settings.sentinelMaster(), master, pool,
                        sentinels, sentinel), settings);
            } catch (JedisException unreachable) {
                return deferred(settings, instance, unreachable, false, () -> new SentineledConnectionProvider(
                        settings.sentinelMaster(),
                        master, pool, sentinels, sentinel), DefaultCommandExecutor::new);
            }
        }
        return new SharingPooled(new HostAndPort(settings.host(), settings.port()), clientConfig(settings, true), pool,
                settings.timeout());
    }

    private static UnifiedJedis deferred(SluiceConfig.RedisSettings settings, String instance, JedisException cause,
                                         boolean cluster, Supplier<ConnectionProvider> providers,
                                         Function<ConnectionProvider, CommandExecutor> executors) {
        LOG.warn("Sluice [{}]: no answer from {} at start ({}); starting anyway, and connecting when it answers",
                instance, settings.describe(), cause.getMessage());
        return new DeferredClient(new DeferredCommandExecutor(providers, executors, settings.describe(), instance,
                DEFERRED_RETRY_MILLIS), cluster, settings, instance);
    }

    /** A {@link JedisPooled} that lends its connections, queued calls waiting at most {@code redis.timeout}. */
    private static final class SharingPooled extends JedisPooled implements NodeConnections.Source {
        private final NodeConnections connections;

        SharingPooled(HostAndPort server, JedisClientConfig config, ConnectionPoolConfig pool, Duration timeout) {
            super(server, config, pool);
            this.connections = NodeConnections.single(() -> server, () -> getPool().getResource(), timeout,
                    pool.getMaxTotal());
        }

        @Override
        public NodeConnections nodeConnections() {
            return connections;
        }
    }

    /** A {@link JedisCluster} whose slot map follows the cluster ({@link ClusterTopology}) and that lends its connections. */
    private static final class SharingCluster extends JedisCluster implements NodeConnections.Source {
        private final ClusterTopology topology;
        private final NodeConnections connections;

        SharingCluster(ClusterConnectionProvider provider, SluiceConfig.RedisSettings settings, String instance) {
            super(provider, CLUSTER_MAX_ATTEMPTS, settings.timeout());
            this.topology = new ClusterTopology(() -> provider, settings.clusterRefreshPeriod(), instance);
            this.connections = NodeConnections.cluster(topology, settings.timeout(), settings.poolMaxTotal());
        }

        @Override
        public NodeConnections nodeConnections() {
            return connections;
        }

        @Override
        public void close() {
            try {
                topology.close();
            } finally {
                super.close();
            }
        }
    }

    /** A {@link JedisSentineled} that lends the connections of the master the Sentinels name now. */
    private static final class SharingSentineled extends JedisSentineled implements NodeConnections.Source {
        private final NodeConnections connections;

        SharingSentineled(SentineledConnectionProvider provider, SluiceConfig.RedisSettings settings) {
            super(provider);
            this.connections = NodeConnections.single(provider::getCurrentMaster, provider::getConnection,
                    settings.timeout(), settings.poolMaxTotal());
        }

        @Override
        public NodeConnections nodeConnections() {
            return connections;
        }
    }

    /** The client of a Sentinel or Cluster that did not answer at start; see {@link DeferredCommandExecutor}. */
    private static final class DeferredClient extends UnifiedJedis implements NodeConnections.Source {
        private final ClusterTopology topology;
        private final NodeConnections connections;

        DeferredClient(DeferredCommandExecutor executor, boolean cluster, SluiceConfig.RedisSettings settings,
                       String instance) {
            super(executor, null, cluster ? new ClusterCommandObjects() : new CommandObjects());
            if (cluster) {
                this.topology = new ClusterTopology(() -> (ClusterConnectionProvider) executor.provider(),
                        settings.clusterRefreshPeriod(), instance);
                this.connections = NodeConnections.cluster(topology, settings.timeout(), settings.poolMaxTotal());
            } else {
                this.topology = null;
                this.connections = NodeConnections.single(() -> executor.provider() instanceof SentineledConnectionProvider p
                        ? p.getCurrentMaster() : null, executor::connection, settings.timeout(), settings.poolMaxTotal());
            }
        }

        @Override
        public NodeConnections nodeConnections() {
            return connections;
        }

        @Override
        public void close() {
            try {
                if (topology != null) topology.close();
            } finally {
                super.close();
            }
        }
    }

    static ConnectionPoolConfig poolConfig(SluiceConfig.RedisSettings settings) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(settings.poolMaxTotal());
        pool.setMaxIdle(settings.poolMaxIdle());
        pool.setMinIdle(settings.poolMinIdle());
        pool.setMaxWait(settings.poolMaxWait());
        pool.setBlockWhenExhausted(true);
        pool.setTestOnBorrow(false);
        pool.setTestOnCreate(false);
        pool.setTestOnReturn(false);
        pool.setTestWhileIdle(true);
        pool.setTimeBetweenEvictionRuns(Duration.ofSeconds(30));
        // commons-pool would register an MBean per pool under a generated name; Sluice's own MXBeans
        // are the documented ones, and nothing is left registered by a web application's class loader.
        pool.setJmxEnabled(false);
        return pool;
    }

    static JedisClientConfig clientConfig(SluiceConfig.RedisSettings settings, boolean withDatabase) {
        int timeout = timeoutMillis(settings.timeout());
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(timeout)
                .socketTimeoutMillis(timeout)
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .user(blankToNull(settings.user()))
                .password(blankToNull(settings.password()));
        if (withDatabase) {
            b.database(settings.database());
        }
        if (settings.ssl()) {
            b.ssl(true).sslParameters(verifyingHostname());
        }
        return b.build();
    }

    static JedisClientConfig sentinelConfig(SluiceConfig.RedisSettings settings) {
        int timeout = timeoutMillis(settings.timeout());
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(timeout)
                .socketTimeoutMillis(timeout)
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED);
        if (settings.ssl()) {
            b.ssl(true).sslParameters(verifyingHostname());
        }
        return b.build();
    }

    private static SSLParameters verifyingHostname() {
        SSLParameters p = new SSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        return p;
    }

    private static int timeoutMillis(Duration timeout) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    }

    private static Set<HostAndPort> hostsOf(List<HostPort> nodes) {
        Set<HostAndPort> out = new LinkedHashSet<>();
        for (HostPort n : nodes) {
            out.add(new HostAndPort(n.host(), n.port()));
        }
        return out;
    }

    private static String blankToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
