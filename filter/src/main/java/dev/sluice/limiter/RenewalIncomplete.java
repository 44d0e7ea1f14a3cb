package dev.sluice.limiter;

/**
 * A renewal ({@link RateLimiter#renew}) that could not reach every slot's store (a Redis node away,
 * its breaker open): the slots it reached were renewed, and {@link #held()} says which of them were
 * still held; the others are to be renewed again soon.
 */
public final class RenewalIncomplete extends LimiterUnavailableException {

    private static final long serialVersionUID = 1L;

    private final boolean[] held;
    private final boolean[] reached;

    /**
     * @param held    per slot, whether it was still held (meaningful where {@code reached})
     * @param reached per slot, whether its store answered
     */
    public RenewalIncomplete(String message, Throwable cause, boolean[] held, boolean[] reached) {
        super(message, cause, cause instanceof LimiterUnavailableException u && u.isTimeout());
        this.held = held.clone();
        this.reached = reached.clone();
    }

    /** Per slot, whether it was still held (for the slots {@link #reached()}). */
    public boolean[] held() {
        return held.clone();
    }

    /** Per slot, whether its store answered: the others were not renewed. */
    public boolean[] reached() {
        return reached.clone();
    }
}
