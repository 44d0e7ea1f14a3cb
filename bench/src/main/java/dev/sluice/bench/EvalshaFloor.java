package dev.sluice.bench;

import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/**
 * The floor: what one round trip costs with this client and pool, whatever the limiter. One
 * EVALSHA of the smallest script that touches the client's key ({@link #SCRIPT}), on the same
 * pool as Sluice. No limiter that keeps its state in Redis can decide with less.
 */
final class EvalshaFloor implements Contender {

    /** A read-modify-write of one key: the least a Redis limiter must do per decision. */
    static final String SCRIPT = "return redis.call('INCR', KEYS[1])";

    private final UnifiedJedis jedis;
    private final String sha;
    private final List<String>[] keys;
    private static final List<String> NO_ARGS = List.of();

    @SuppressWarnings("unchecked")
    EvalshaFloor(Workload workload) {
        jedis = BenchRedis.pooled();
        sha = jedis.scriptLoad(SCRIPT);
        String prefix = BenchRedis.prefix("floor");
        String[] clientKeys = workload.clientKeys();
        keys = new List[clientKeys.length];
        for (int i = 0; i < clientKeys.length; i++) {
            keys[i] = List.of(prefix + clientKeys[i]);
        }
    }

    @Override
    public boolean tryAcquire(int key) {
        return jedis.evalsha(sha, keys[key], NO_ARGS) != null;
    }

    @Override
    public void prepare(Workload workload) {
        // no state to exhaust: the floor is the same on every workload
    }

    @Override
    public void close() {
        jedis.close();
    }

    @Override
    public String toString() {
        return "floor";
    }
}
