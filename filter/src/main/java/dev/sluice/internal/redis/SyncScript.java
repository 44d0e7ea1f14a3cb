package dev.sluice.internal.redis;

import dev.sluice.internal.approximate.CountExchange;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.LimiterUnavailableException;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The approximate mode's exchange in Redis: {@code sync.lua} (its header documents KEYS, ARGV and the
 * reply), called by SHA and sent again with {@code EVAL} when Redis has lost it ({@code NOSCRIPT}).
 *
 * <p><b>One round trip per sync.</b> The keys go in calls of at most {@value #KEYS_PER_CALL} (a call
 * runs alone in Redis, so none holds it up for long); several calls go in one pipeline, written at once
 * and read at once. On Redis Cluster each call holds keys of one slot, and the pipeline sends each to
 * its node.
 */
public final class SyncScript implements CountExchange {

    static final String SCRIPT = RedisEngine.resource("sync.lua");
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = RedisEngine.sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    static final int KEYS_PER_CALL = 128;
    private static final int NOW_BYTES = 8;
    private static final int KEY_BYTES = 1 + 4 * 8;
    private static final double REDIS_TIME = -1;

    private final UnifiedJedis jedis;
    private final boolean cluster;

    /**
     * @param jedis   the client (standalone, Sentinel or Cluster); not closed here
     * @param cluster whether {@code jedis} talks to a Redis Cluster (one call per slot)
     */
    public SyncScript(UnifiedJedis jedis, boolean cluster) {
        this.jedis = jedis;
        this.cluster = cluster;
    }

    @Override
    public Reply exchange(List<Delta> deltas, long now) {
        List<int[]> calls = calls(deltas);
        List<byte[]> replies = new ArrayList<>(calls.size());
        try {
            if (calls.size() == 1) {
                replies.add(evaluate(keys(deltas, calls.get(0)), request(deltas, calls.get(0), now)));
            } else {
                replies.addAll(pipelined(deltas, calls, now));
            }
        } catch (JedisException e) {
            throw new LimiterUnavailableException("Redis could not sync the approximate counts: " + e.getMessage(), e,
                    RedisFailure.isTimeout(e));
        }
        Counts[] counts = new Counts[deltas.size()];
        long at = Long.MIN_VALUE;
        for (int c = 0; c < calls.size(); c++) {
            ByteBuffer reply = ByteBuffer.wrap(replies.get(c)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i : calls.get(c)) {
                double start = reply.getDouble();
                long current = (long) reply.getDouble();
                long previous = (long) reply.getDouble();
                counts[i] = start < 0 ? Counts.EMPTY : new Counts((long) start, current, previous);
            }
            at = Math.max(at, (long) reply.getDouble());
        }
        return new Reply(List.of(counts), at);
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

    private List<byte[]> pipelined(List<Delta> deltas, List<int[]> calls, long now) {
        List<byte[]> out = new ArrayList<>(calls.size());
        List<Response<Object>> responses = new ArrayList<>(calls.size());
        try (AbstractPipeline p = jedis.pipelined()) {
            for (int[] call : calls) responses.add(p.evalsha(SHA_BYTES, keys(deltas, call), request(deltas, call, now)));
            p.sync();
        }
        List<Integer> lost = new ArrayList<>();
        for (int c = 0; c < calls.size(); c++) {
            try {
                out.add((byte[]) responses.get(c).get());
            } catch (JedisDataException e) {
                if (e.getMessage() == null || !e.getMessage().startsWith("NOSCRIPT")) throw e;
                out.add(null);
                lost.add(c);
            }
        }
        if (!lost.isEmpty()) { // Redis lost the script (restart, failover, SCRIPT FLUSH): EVAL caches it again
            List<Response<Object>> again = new ArrayList<>(lost.size());
            try (AbstractPipeline p = jedis.pipelined()) {
                for (int c : lost) again.add(p.eval(SCRIPT_BYTES, keys(deltas, calls.get(c)), request(deltas, calls.get(c), now)));
                p.sync();
            }
            for (int i = 0; i < lost.size(); i++) out.set(lost.get(i), (byte[]) again.get(i).get());
        }
        return out;
    }

    private byte[] evaluate(List<byte[]> keys, List<byte[]> args) {
        try {
            return (byte[]) jedis.evalsha(SHA_BYTES, keys, args);
        } catch (JedisNoScriptException e) {
            return (byte[]) jedis.eval(SCRIPT_BYTES, keys, args);
        }
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
                    .putDouble(d.windowMs()).putDouble(d.windowStart()).putDouble(d.current()).putDouble(d.previous());
        }
        return List.of(b.array());
    }
}
