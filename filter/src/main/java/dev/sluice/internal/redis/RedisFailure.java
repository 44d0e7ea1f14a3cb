package dev.sluice.internal.redis;

import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisDataException;

import java.net.SocketTimeoutException;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * What a failed call says about the Redis node, however Jedis wrapped it. Jedis reports a read
 * timeout as the cause of a {@code JedisConnectionException}, but a connect timeout as a
 * <em>suppressed</em> exception of one ("Failed to connect to ..."), and a cluster call that ran out
 * of its retry time as a {@code JedisClusterOperationException} with no cause at all ("Cluster retry
 * deadline exceeded", the last failure suppressed when attempts ran out instead). So both causes and
 * suppressed exceptions are searched.
 */
final class RedisFailure {

    private RedisFailure() {
    }

    /** The node did not answer in time: a connect or read timed out, or the cluster call ran out of time. */
    static boolean nodeTimedOut(Throwable e) {
        return search(e, false);
    }

    /**
     * A Cluster node refused a call of several keys of one slot while that slot migrates and it holds
     * only some of them ({@code TRYAGAIN}): the call is sound and runs once the keys are in one place
     * again. The client library does not send it again by itself.
     */
    static boolean tryAgain(Object e) {
        return e instanceof JedisDataException d && d.getMessage() != null && d.getMessage().startsWith("TRYAGAIN");
    }

    /** {@link #nodeTimedOut}, or no pooled connection came within {@code redis.pool.max-wait}. */
    static boolean isTimeout(Throwable e) {
        return search(e, true);
    }

    private static boolean search(Throwable e, boolean poolWait) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Throwable> next = new ArrayDeque<>();
        if (e != null) next.add(e);
        while (!next.isEmpty()) {
            Throwable t = next.poll();
            if (!seen.add(t)) continue;
            if (t instanceof SocketTimeoutException || poolWait && t instanceof NoSuchElementException) return true;
            if (t instanceof JedisClusterOperationException && t.getCause() == null && t.getMessage() != null
                    && t.getMessage().contains("deadline exceeded")) {
                return true;
            }
            if (t.getCause() != null) next.add(t.getCause());
            Collections.addAll(next, t.getSuppressed());
        }
        return false;
    }
}
