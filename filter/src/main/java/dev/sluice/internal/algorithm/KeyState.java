package dev.sluice.internal.algorithm;

/**
 * The mutable state one algorithm keeps for one client of one rule, in the local engine. The
 * Redis engine keeps the same state in one Redis key (the format is documented on each
 * algorithm); this class only exists in-process.
 *
 * <p>Not thread-safe: the engine holds a lock while it calls {@link RateAlgorithm#decide} and
 * {@link RateAlgorithm#take}.
 */
public abstract class KeyState {

    /** When this state is back to full (plus {@link RateAlgorithm#EXPIRY_MARGIN_MS}); absent states are expired. */
    long expiresAtMs = Long.MIN_VALUE;

    KeyState() {
    }

    /**
     * Whether this state may be forgotten at {@code now}: it is then indistinguishable from a
     * client that was never seen (the Redis key would have expired).
     */
    public final boolean isExpired(long now) {
        return now >= expiresAtMs;
    }
}
