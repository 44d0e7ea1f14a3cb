package dev.sluice.internal.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Connection;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * A Cluster client's slot map, kept following the cluster: which master serves each slot. Jedis
 * renews its map only after a {@code MOVED} on its own calls or after two consecutive connection
 * failures within one call's retry time: a killed master refuses at once, and a call sent alone through
 * the client may then renew the map itself, in the caller's thread; a hung master's calls each take a
 * whole {@code redis.timeout} and never do, so after its replica is promoted the client would go on
 * naming the hung master. Here one daemon
 * thread ({@code sluice-cluster-topology}) reads the map again
 * <ul>
 *   <li>every {@code redis.cluster.refresh-period};</li>
 *   <li>soon after a call timed out, failed to connect or was redirected ({@link #refreshSoon}): at
 *       once, but at most once per {@link #MIN_INTERVAL_MILLIS} ms, so a node's outage costs the
 *       cluster one {@code CLUSTER SLOTS} a second.</li>
 * </ul>
 * No request waits for this class's refresh (it costs up to a timeout per unresponsive seed).
 */
final class ClusterTopology implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClusterTopology.class);

    /** The least time between two refreshes asked for by failures or redirections. */
    static final long MIN_INTERVAL_MILLIS = 1000;
    /** How long {@link #close} (and the discovery's) waits for its thread: undeploy then leaves none behind. */
    static final long CLOSE_WAIT_MILLIS = 2000;

    private final Supplier<ClusterConnectionProvider> provider;
    private final long periodNanos;
    private final long minIntervalNanos;
    private final Thread thread;
    private volatile boolean soon;
    private final String instance;
    private volatile boolean closed;
    private volatile long refreshes;

    /**
     * @param provider the client's provider, or null while the cluster has not answered yet
     * @param period   the time between two periodic refreshes
     * @param instance the Sluice instance this client belongs to (its log lines and thread name)
     */
    ClusterTopology(Supplier<ClusterConnectionProvider> provider, Duration period, String instance) {
        this.instance = instance;
        this.provider = provider;
        this.periodNanos = period.toNanos();
        this.minIntervalNanos = Math.min(periodNanos, TimeUnit.MILLISECONDS.toNanos(MIN_INTERVAL_MILLIS));
        this.thread = new Thread(this::run, "sluice-cluster-topology-" + instance);
        thread.setDaemon(true);
        thread.start();
    }

    /** The master that serves {@code key}'s slot now, or null while the cluster has not answered. */
    HostAndPort masterOf(byte[] key) {
        ClusterConnectionProvider p = provider.get();
        return p == null ? null : p.getNode(JedisClusterCRC16.getSlot(key));
    }

    /** The masters of the slot map now. */
    Set<Object> masters() {
        ClusterConnectionProvider p = provider.get();
        Set<Object> out = new HashSet<>();
        if (p == null) return out;
        for (int slot = 0; slot < Protocol.CLUSTER_HASHSLOTS; slot++) {
            HostAndPort n = p.getNode(slot);
            if (n != null) out.add(n);
        }
        return out;
    }

    /** A pooled connection to {@code node}. */
    Connection connection(HostAndPort node) {
        ClusterConnectionProvider p = provider.get();
        if (p == null) throw new JedisConnectionException("the cluster's topology is not known yet");
        return p.getConnection(node);
    }

    /** Reads the slot map again soon (at most once per {@link #MIN_INTERVAL_MILLIS}), in the background. */
    void refreshSoon() {
        if (!soon) {
            soon = true;
            LockSupport.unpark(thread);
        }
    }

    /** Refreshes done so far (tests wait on it). */
    long refreshes() {
        return refreshes;
    }

    private void run() {
        long last = System.nanoTime() - minIntervalNanos;
        while (!closed) {
            long now = System.nanoTime();
            long due = soon ? last + minIntervalNanos : last + periodNanos;
            if (due - now > 0) {
                LockSupport.parkNanos(this, due - now);
                continue; // woken early (asked soon, or closed), or due: look again
            }
            soon = false;
            last = System.nanoTime();
            ClusterConnectionProvider p = provider.get();
            if (p == null) continue;
            try {
                p.renewSlotCache();
                refreshes++;
                if (closed) {
                    // the client closed its pools while this refresh ran (it waits for it at most
                    // CLOSE_WAIT_MILLIS), and the refresh made new ones, each with connections and an
                    // evictor thread of its own: close them too (closing twice is harmless)
                    p.close();
                }
            } catch (RuntimeException e) {
                LOG.debug("Sluice [{}]: reading the cluster's slot map failed: {}", instance, e.toString());
            }
        }
    }

    /** Stops the thread and waits a little for it (a refresh under way: at most a timeout per seed), as the pool's evictor is. */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        awaitEnd(thread);
    }

    /** Waits at most {@link #CLOSE_WAIT_MILLIS} for {@code thread} to end (not when it is the caller). */
    static void awaitEnd(Thread thread) {
        if (Thread.currentThread() == thread) return;
        try {
            thread.join(CLOSE_WAIT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
