package dev.sluice.internal.redis;

import dev.sluice.internal.approximate.CountExchange;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.LimiterUnavailableException;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The approximate mode's exchange in Redis: {@code sync.lua} (its header documents KEYS, ARGV and the
 * reply), called by SHA and sent again with {@code EVAL} when Redis has lost it ({@code NOSCRIPT}).
 *
 * <p><b>One round trip per sync.</b> The keys go in calls of at most {@value #KEYS_PER_CALL} (a call
 * runs alone in Redis, so none holds it up for long). The calls for one node are pipelined on one of
 * its pooled connections (the same connections as the decisions', {@link NodeConnections}): written
 * to every node first, then read node by node. On Redis Cluster each call holds keys of one slot and
 * goes to the master the slot map names for it.
 *
 * <p><b>Each call stands on its own.</b> A call's reply is its keys' counts; a call that failed (its
 * node timed out or dropped the connection, or refused the script) has no reply, and only its keys
 * are reported as not exchanged ({@link CountExchange.Reply}): what the other nodes acknowledged is
 * never sent again. A call redirected ({@code MOVED}/{@code ASK}: a slot migrated or failed over) goes
 * again alone through the client, which follows the redirection, and the slot map is read again soon.
 * Only when no call at all succeeded does the exchange fail. Clients whose connections Sluice cannot
 * reach (a user's own client of another kind) make every call alone.
 *
 * <p><b>A node that timed out</b> may have run the calls it was sent once it answers again (a stuck
 * node reads them later), and their counts, kept as unsent, go again with the next sync: counted
 * twice, erring low. So that they are not counted once more per sync while it stays stuck, the next
 * sync first asks that node for a {@code PING} and sends it nothing until one is answered.
 */
public final class SyncScript implements CountExchange {

    static final String SCRIPT = RedisEngine.resource("sync.lua");
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = RedisEngine.sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    static final int KEYS_PER_CALL = 128;
    private static final int NOW_BYTES = 8;
    private static final int KEY_BYTES = 1 + 6 * 8;
    private static final double REDIS_TIME = -1;

    private final UnifiedJedis jedis;
    private final boolean cluster;
    private final NodeConnections nodes;
    /** Nodes whose last call timed out: pinged before they are sent anything again. Only the sync thread uses it. */
    private final java.util.Set<Object> stuck = new java.util.HashSet<>();

    /**
     * @param jedis   the client (standalone, Sentinel or Cluster); not closed here
     * @param cluster whether {@code jedis} talks to a Redis Cluster (one call per slot)
     */
    public SyncScript(UnifiedJedis jedis, boolean cluster) {
        this.jedis = jedis;
        this.cluster = cluster;
        this.nodes = NodeConnections.of(jedis);
    }

    @Override
    public Reply exchange(List<Delta> deltas, long now) {
        List<int[]> calls = calls(deltas);
        byte[][] replies = new byte[calls.size()][];
        RuntimeException[] failures = new RuntimeException[calls.size()];
        Map<Object, List<Integer>> byNode = new LinkedHashMap<>();
        List<Integer> alone = new ArrayList<>();
        for (int c = 0; c < calls.size(); c++) {
            Object node = nodes == null ? null : nodes.nodeOf(deltas.get(calls.get(c)[0]).key());
            if (node == null) {
                alone.add(c);
            } else {
                byNode.computeIfAbsent(node, n -> new ArrayList<>()).add(c);
            }
        }
        List<Sent> sent = new ArrayList<>(byNode.size());
        for (Map.Entry<Object, List<Integer>> e : byNode.entrySet()) {
            sent.add(send(e.getKey(), e.getValue(), deltas, calls, now, failures));
        }
        for (Sent s : sent) {
            read(s, deltas, calls, now, replies, failures, alone);
        }
        for (int c : alone) {
            try {
                replies[c] = alone(keys(deltas, calls.get(c)), request(deltas, calls.get(c), now));
            } catch (RuntimeException e) {
                failures[c] = e;
            }
        }
        return reply(deltas, calls, replies, failures);
    }

    /** One node's calls, written on one of its connections (null: the connection failed). */
    private record Sent(Object node, List<Integer> calls, Connection connection) {
    }

    private Sent send(Object node, List<Integer> callsOfNode, List<Delta> deltas, List<int[]> calls, long now,
                      RuntimeException[] failures) {
        Connection connection = null;
        try {
            connection = nodes.borrow(node);
            if (stuck.contains(node)) {
                connection.ping(); // throws while the node is still stuck: nothing more is queued on it
                stuck.remove(node);
            }
            for (int c : callsOfNode) {
                connection.sendCommand(command(Protocol.Command.EVALSHA, SHA_BYTES, deltas, calls.get(c), now));
            }
            return new Sent(node, callsOfNode, connection);
        } catch (RuntimeException e) {
            if (connection != null) connection.close();
            for (int c : callsOfNode) failures[c] = e;
            nodes.failed(node);
            return new Sent(node, callsOfNode, null);
        }
    }

    /** Reads one node's replies, in order; a call the node lost its script for goes again on the same connection. */
    private void read(Sent s, List<Delta> deltas, List<int[]> calls, long now, byte[][] replies,
                      RuntimeException[] failures, List<Integer> alone) {
        if (s.connection() == null) return;
        int at = 0;
        try (Connection connection = s.connection()) {
            List<Integer> noScript = new ArrayList<>();
            for (; at < s.calls().size(); at++) {
                int c = s.calls().get(at);
                Object reply = next(connection);
                if (reply instanceof JedisNoScriptException) {
                    noScript.add(c);
                } else if (reply instanceof JedisRedirectionException && cluster) {
                    nodes.redirected(); // not run there: the client follows the redirection
                    alone.add(c);
                } else if (reply instanceof RuntimeException error) {
                    failures[c] = error;
                } else {
                    replies[c] = (byte[]) reply;
                }
            }
            if (!noScript.isEmpty()) { // Redis lost the script (restart, failover, SCRIPT FLUSH): EVAL caches it again
                for (int c : noScript) {
                    connection.sendCommand(command(Protocol.Command.EVAL, SCRIPT_BYTES, deltas, calls.get(c), now));
                }
                for (int c : noScript) {
                    Object reply = next(connection);
                    if (reply instanceof RuntimeException error) {
                        failures[c] = error;
                    } else {
                        replies[c] = (byte[]) reply;
                    }
                }
            }
        } catch (RuntimeException e) {
            // the connection failed (a timeout, the node gone): the calls not yet answered have no reply
            for (int c : s.calls()) {
                if (replies[c] == null && failures[c] == null && !alone.contains(c)) failures[c] = e;
            }
            if (RedisFailure.nodeTimedOut(e)) stuck.add(s.node());
            nodes.failed(s.node());
        }
    }

    /** The next reply; an error reply is returned, not thrown (the connection is still good). */
    private static Object next(Connection connection) {
        try {
            return connection.getOne();
        } catch (JedisDataException error) {
            return error;
        }
    }

    private Reply reply(List<Delta> deltas, List<int[]> calls, byte[][] replies, RuntimeException[] failures) {
        Counts[] counts = new Counts[deltas.size()];
        long at = Long.MIN_VALUE;
        RuntimeException failure = null;
        boolean any = false;
        for (int c = 0; c < calls.size(); c++) {
            if (replies[c] == null) {
                if (failure == null) failure = failures[c];
                continue; // its keys' counts stay null: not exchanged
            }
            any = true;
            ByteBuffer reply = ByteBuffer.wrap(replies[c]).order(ByteOrder.LITTLE_ENDIAN);
            for (int i : calls.get(c)) {
                double start = reply.getDouble();
                long current = (long) reply.getDouble();
                long previous = (long) reply.getDouble();
                counts[i] = start < 0 ? Counts.EMPTY : new Counts((long) start, current, previous);
            }
            at = Math.max(at, (long) reply.getDouble());
        }
        if (!any) {
            RuntimeException e = failure != null ? failure : new IllegalStateException("no reply");
            throw new LimiterUnavailableException("Redis could not sync the approximate counts: " + e.getMessage(), e,
                    RedisFailure.isTimeout(e));
        }
        return new Reply(Arrays.asList(counts), at);
    }

    /** The deltas' indexes, grouped into calls: by slot on a Cluster, at most {@link #KEYS_PER_CALL} each. */
    private List<int[]> calls(List<Delta> deltas) {
        Map<Integer, List<Integer>> bySlot = new LinkedHashMap<>();
        for (int i = 0, n = deltas.size(); i < n; i++) {
            int slot = cluster ? JedisClusterCRC16.getSlot(deltas.get(i).key()) : 0;
            bySlot.computeIfAbsent(slot, s -> new ArrayList<>()).add(i);
        }
        List<int[]> calls = new ArrayList<>();
        for (List<Integer> slot : bySlot.values()) {
            for (int from = 0; from < slot.size(); from += KEYS_PER_CALL) {
                List<Integer> part = slot.subList(from, Math.min(slot.size(), from + KEYS_PER_CALL));
                calls.add(part.stream().mapToInt(Integer::intValue).toArray());
            }
        }
        return calls;
    }

    /**
     * A {@code PING} through the client: nothing to exchange, only whether Redis answers; on a Cluster to
     * one node the client picks (not {@code UnifiedJedis.ping()}, which asks every node, replicas and
     * nodes gone included, and fails if one does not answer).
     */
    @Override
    public void ping() {
        try {
            jedis.executeCommand(new CommandObject<>(new CommandArguments(Protocol.Command.PING), BuilderFactory.STRING));
        } catch (RuntimeException e) {
            throw new LimiterUnavailableException("Redis did not answer a PING: " + e.getMessage(), e, RedisFailure.isTimeout(e));
        }
    }

    /** A call through the client, which follows redirections. */
    private byte[] alone(List<byte[]> keys, List<byte[]> args) {
        try {
            return (byte[]) jedis.evalsha(SHA_BYTES, keys, args);
        } catch (JedisNoScriptException e) {
            return (byte[]) jedis.eval(SCRIPT_BYTES, keys, args);
        }
    }

    private static CommandArguments command(Protocol.Command command, byte[] script, List<Delta> deltas, int[] call,
                                            long now) {
        CommandArguments c = new CommandArguments(command).add(script).add(call.length);
        for (int i : call) c.add(deltas.get(i).key());
        return c.add(request(deltas, call, now).get(0));
    }

    private static List<byte[]> keys(List<Delta> deltas, int[] call) {
        List<byte[]> keys = new ArrayList<>(call.length);
        for (int i : call) keys.add(deltas.get(i).key());
        return keys;
    }

    private static List<byte[]> request(List<Delta> deltas, int[] call, long now) {
        ByteBuffer b = ByteBuffer.allocate(NOW_BYTES + KEY_BYTES * call.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putDouble(now < 0 ? REDIS_TIME : now);
        for (int i : call) {
            Delta d = deltas.get(i);
            b.put(d.algorithm() == Algorithm.FIXED_WINDOW ? (byte) 1 : (byte) 2)
                    .putDouble(d.windowMs()).putDouble(d.windowStart()).putDouble(d.current()).putDouble(d.previous())
                    .putDouble(d.givenCurrent()).putDouble(d.givenPrevious());
        }
        return List.of(b.array());
    }
}
