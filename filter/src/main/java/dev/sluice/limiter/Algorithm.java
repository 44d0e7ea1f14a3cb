package dev.sluice.limiter;

import java.util.Locale;

/** The algorithms a rule can use. Their semantics are documented on the classes in {@code dev.sluice.internal.algorithm}. */
public enum Algorithm {
    FIXED_WINDOW("fixed-window"),
    SLIDING_WINDOW_COUNTER("sliding-window-counter"),
    SLIDING_WINDOW_LOG("sliding-window-log"),
    TOKEN_BUCKET("token-bucket"),
    LEAKY_BUCKET("leaky-bucket"),
    GCRA("gcra"),
    /**
     * Not a rate: at most {@code limit} requests of one client in flight at once, each holding a slot
     * from its admission until it completes (a lease that its instance renews while it runs).
     */
    CONCURRENCY("concurrency");

    private final String id;

    Algorithm(String id) {
        this.id = id;
    }

    /** Whether this algorithm counts requests per window (no bucket, so no {@code burst}). */
    public boolean isWindow() {
        return this == FIXED_WINDOW || this == SLIDING_WINDOW_COUNTER || this == SLIDING_WINDOW_LOG;
    }

    /**
     * Whether this is {@link #CONCURRENCY}: a limit on requests in flight, which has no window (its
     * rule's {@code window} is the lease), takes one slot per request and frees it when the request
     * completes rather than with time.
     */
    public boolean isConcurrency() {
        return this == CONCURRENCY;
    }

    /** Whether this algorithm counts what requests took per unit of time (every algorithm but {@link #CONCURRENCY}). */
    public boolean isRate() {
        return this != CONCURRENCY;
    }

    /**
     * Whether a cost known only after the response can be settled on this algorithm
     * ({@code rule.<name>.actual-cost}): the windows that count (fixed-window, sliding-window-counter) and
     * the buckets that refill (token-bucket, gcra). The log keeps an entry per token and the leaky bucket
     * schedules slots, so neither can owe; a concurrency rule has no cost.
     */
    public boolean settlesCost() {
        return this == FIXED_WINDOW || this == SLIDING_WINDOW_COUNTER || this == TOKEN_BUCKET || this == GCRA;
    }

    /** The name used in configuration, e.g. {@code token-bucket}. */
    public String id() {
        return id;
    }

    /** @return the algorithm named {@code id}, or {@code null} if there is none */
    public static Algorithm fromId(String id) {
        String wanted = id.trim().toLowerCase(Locale.ROOT);
        for (Algorithm a : values()) {
            if (a.id.equals(wanted)) {
                return a;
            }
        }
        return null;
    }

    /** The configuration names of all algorithms, comma separated, for error messages. */
    public static String ids() {
        StringBuilder sb = new StringBuilder();
        for (Algorithm a : values()) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(a.id);
        }
        return sb.toString();
    }
}
