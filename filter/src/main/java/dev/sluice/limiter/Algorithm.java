package dev.sluice.limiter;

import java.util.Locale;

/** The algorithms a rule can use. Their semantics are documented on the classes in {@code dev.sluice.internal.algorithm}. */
public enum Algorithm {
    FIXED_WINDOW("fixed-window"),
    SLIDING_WINDOW_COUNTER("sliding-window-counter"),
    SLIDING_WINDOW_LOG("sliding-window-log"),
    TOKEN_BUCKET("token-bucket"),
    LEAKY_BUCKET("leaky-bucket"),
    GCRA("gcra");

    private final String id;

    Algorithm(String id) {
        this.id = id;
    }

    /** Whether this algorithm counts requests per window (no bucket, so no {@code burst}). */
    public boolean isWindow() {
        return this == FIXED_WINDOW || this == SLIDING_WINDOW_COUNTER || this == SLIDING_WINDOW_LOG;
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
