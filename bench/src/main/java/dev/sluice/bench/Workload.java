package dev.sluice.bench;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;

import java.time.Duration;

/**
 * What the clients do. Every contender gets the same keys and an equivalent limit.
 * <ul>
 *   <li>{@code HOT}: every request on one key that always has tokens left (a limit no run can
 *       exhaust): the contended allow path;</li>
 *   <li>{@code EXHAUSTED}: every request on one key that has nothing left for an hour: the deny path
 *       (where Sluice's denied-client cache answers without Redis);</li>
 *   <li>{@code KEYS_10K}: requests spread over 10,000 keys with tokens left: many clients, no contention.</li>
 * </ul>
 */
public enum Workload {
    /**
     * A billion tokens refilling a million a second: not even the local engine at 10M/s drains it
     * in a trial. (limit x window in ms stays within the engine's 2^50 bound.)
     */
    HOT(1, 1_000_000_000L, Duration.ofSeconds(1_000)),
    EXHAUSTED(1, 1, Duration.ofHours(1)),
    /**
     * 100,000 tokens per key refilling at 0.1/s: slower than each key is used (a few times a
     * second), so the keys stay in Redis between touches as an active client's do. (A bucket that
     * is full again expires, and a workload of expired keys would measure key creation.)
     */
    KEYS_10K(10_000, 100_000L, Duration.ofSeconds(1_000_000));

    /** How many distinct client keys. */
    public final int keys;
    /** Requests per window (bucket capacity and refill for the bucket algorithms). */
    public final long limit;
    public final Duration window;

    Workload(int keys, long limit, Duration window) {
        this.keys = keys;
        this.limit = limit;
        this.window = window;
    }

    /**
     * The rule of this workload for {@code algorithm}: {@code limit} per {@code window}, burst =
     * limit. A leaky bucket with {@code max-delay} 0 admits only at free drain slots, so it has no
     * "tokens left" to spend: here it may hold requests for up to a window (its queue, of
     * {@code burst}, is what is left), and an admitted decision is one with a delay.
     */
    public static Rule rule(String algorithm, Workload workload) {
        Algorithm a = Algorithm.fromId(algorithm);
        Duration maxDelay = a == Algorithm.LEAKY_BUCKET ? workload.window : Duration.ZERO;
        long limit = workload.limit;
        Duration window = workload.window;
        if (a == Algorithm.SLIDING_WINDOW_LOG && limit > Rule.MAX_LOG_LIMIT) {
            // the log keeps an entry per admitted request, so its limit is bounded: the same allow path
            // with short windows instead (hot: 10,000 per 20 ms; 10,000 keys: each used a few times a
            // second, 10,000 per second each, a few entries per key)
            limit = Rule.MAX_LOG_LIMIT;
            window = workload == HOT ? Duration.ofMillis(20) : Duration.ofSeconds(1);
        }
        return new Rule("api", a, limit, window, limit, 1, FailurePolicy.OPEN,
                limit, maxDelay);
    }

    /** The client keys, built once: the benchmark loop never formats a key. */
    public String[] clientKeys() {
        String[] out = new String[keys];
        for (int i = 0; i < keys; i++) {
            out[i] = keys == 1 ? "ip=203.0.113.7" : "ip=10.0." + (i / 256) + "." + (i % 256);
        }
        return out;
    }
}
