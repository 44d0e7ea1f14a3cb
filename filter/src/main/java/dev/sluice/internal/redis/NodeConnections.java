package dev.sluice.internal.redis;

import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Where Sluice's calls get their connections: which Redis node serves a key, a pooled connection to
 * that node, and which nodes there are now. The clients {@link RedisClients} builds tell theirs
 * ({@link Source}: the server for standalone, the master the Sentinels name now, the slot's master
 * on Cluster); a {@link JedisPooled} of the user's own is adapted by {@link #of}. A node is any value
 * with {@code equals} ({@link HostAndPort} for Sluice's clients); its {@code toString} names it in
 * the metrics.
 */
interface NodeConnections {

    /** The node of a client whose node Sluice cannot see (a user's pool). */
    Object THE_NODE = new Object() {
        @Override
        public String toString() {
            return "redis";
        }
    };

    /** The node serving {@code key} now, or null when not known (no topology discovered yet). */
    Object nodeOf(byte[] key);

    /** The nodes there are now (on Cluster: the masters of the slot map); empty while none is known. */
    Set<Object> nodes();

    /**
     * A connection to {@code node} from its pool (within the pool's {@code max-wait}); closing it gives
     * it back, or discards it when broken.
     */
    Connection borrow(Object node);

    /**
     * How long a call may wait in the queue for its shared round trip to start: {@code redis.timeout},
     * which also bounds the round trip it waits behind; null for no bound of its own.
     */
    Duration queueWait();

    /**
     * The most connections one node's pool lends at once ({@code redis.pool.max-total}, or a user's pool's
     * {@code maxTotal}); {@link Integer#MAX_VALUE} when not bounded. Round trips in flight to a node are
     * never more: a carrier would wait in the pool for a connection the others hold through their round trips.
     */
    int connectionsPerNode();

    /**
     * A call to {@code node} failed: it timed out or its connection failed. On Cluster the slot map is
     * read again soon (in the background, at most once a second): the node may have been replaced.
     */
    default void failed(Object node) {
    }

    /** A call was redirected ({@code MOVED}/{@code ASK}): on Cluster the slot map is read again soon. */
    default void redirected() {
    }

    /** A client that tells where its connections come from: those {@link RedisClients} builds. */
    interface Source {
        NodeConnections nodeConnections();
    }

    /** The connections of {@code client}, or null when Sluice cannot reach them (each call then goes alone). */
    static NodeConnections of(UnifiedJedis client) {
        if (client instanceof Source own) {
            return own.nodeConnections();
        }
        if (client instanceof JedisPooled pooled) {
            // a user's pool: its timeouts are not known here, its max-wait is (the in-flight round trip
            // a call waits behind is bounded by the socket timeout in any case)
            Duration wait = pooled.getPool().getMaxWaitDuration();
            return single(() -> THE_NODE, () -> pooled.getPool().getResource(),
                    wait.isNegative() || wait.isZero() ? null : wait, pooled.getPool().getMaxTotal());
        }
        return null;
    }

    /**
     * One node at a time, whose connections come from {@code pool}: a standalone server, or the master
     * a Sentinel names now ({@code node} follows it; null while no Sentinel has answered).
     *
     * @param maxConnections the pool's most connections at once; negative for no bound
     */
    static NodeConnections single(Supplier<Object> node, Supplier<Connection> pool, Duration queueWait, int maxConnections) {
        return new NodeConnections() {
            @Override
            public Object nodeOf(byte[] key) {
                return node.get();
            }

            @Override
            public Set<Object> nodes() {
                Object n = node.get();
                return n == null ? Set.of() : Set.of(n);
            }

            @Override
            public Connection borrow(Object at) {
                return pool.get();
            }

            @Override
            public Duration queueWait() {
                return queueWait;
            }

            @Override
            public int connectionsPerNode() {
                return bound(maxConnections);
            }
        };
    }

    /**
     * The masters of a Cluster as {@code topology} knows them (its slot map, which follows the cluster).
     *
     * @param maxConnections each node's pool's most connections at once; negative for no bound
     */
    static NodeConnections cluster(ClusterTopology topology, Duration queueWait, int maxConnections) {
        return new NodeConnections() {
            @Override
            public Object nodeOf(byte[] key) {
                return topology.masterOf(key);
            }

            @Override
            public Set<Object> nodes() {
                return topology.masters();
            }

            @Override
            public Connection borrow(Object node) {
                if (node == null) throw new JedisConnectionException("the cluster's topology is not known yet");
                return topology.connection((HostAndPort) node);
            }

            @Override
            public Duration queueWait() {
                return queueWait;
            }

            @Override
            public int connectionsPerNode() {
                return bound(maxConnections);
            }

            @Override
            public void failed(Object node) {
                topology.refreshSoon();
            }

            @Override
            public void redirected() {
                topology.refreshSoon();
            }
        };
    }

    /** A pool's {@code maxTotal} as a bound: commons-pool2 reads a negative one as no bound. */
    private static int bound(int maxTotal) {
        return maxTotal < 0 ? Integer.MAX_VALUE : maxTotal;
    }
}
