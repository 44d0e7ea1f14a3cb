package dev.sluice.internal.redis;

import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * Where {@link SharedRoundTrips} gets its connections: which Redis node serves a key, and a
 * pooled connection to that node. The clients {@link RedisClients} builds tell theirs
 * ({@link Source}: one node for standalone and Sentinel, the slot's master on Cluster); a
 * {@link JedisPooled} of the user's own is adapted by {@link #of}.
 */
interface NodeConnections {

    /** The node of every key on a standalone server or a Sentinel's master. */
    Object THE_NODE = new Object() {
        @Override
        public String toString() {
            return "the node";
        }
    };

    /** The node serving {@code key} now (any value with {@code equals}), or null when not known. */
    Object nodeOf(byte[] key);

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
            return single(() -> pooled.getPool().getResource(), wait.isNegative() || wait.isZero() ? null : wait);
        }
        return null;
    }

    /** One node, whose connections come from {@code pool} (a Sentinel's provider follows its master). */
    static NodeConnections single(Supplier<Connection> pool, Duration queueWait) {
        return new NodeConnections() {
            @Override
            public Object nodeOf(byte[] key) {
                return THE_NODE;
            }

            @Override
            public Connection borrow(Object node) {
                return pool.get();
            }

            @Override
            public Duration queueWait() {
                return queueWait;
            }
        };
    }

    /**
     * The masters of a Cluster as {@code provider} knows them (its slot map, renewed by the client on
     * redirections and failures); {@code provider} may give null while the topology is not yet known.
     */
    static NodeConnections cluster(Supplier<ClusterConnectionProvider> provider, Duration queueWait) {
        return new NodeConnections() {
            @Override
            public Object nodeOf(byte[] key) {
                ClusterConnectionProvider p = provider.get();
                return p == null ? null : p.getNode(JedisClusterCRC16.getSlot(key));
            }

            @Override
            public Connection borrow(Object node) {
                ClusterConnectionProvider p = provider.get();
                if (p == null) throw new JedisConnectionException("the cluster's topology is not known yet");
                return p.getConnection((HostAndPort) node);
            }

            @Override
            public Duration queueWait() {
                return queueWait;
            }
        };
    }
}
