package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Rule;

/**
 * A reference model of one algorithm for one client: the definition, written as plainly as
 * possible, in exact rational arithmetic, with no care for speed or memory. {@link Figures}
 * derives every reported number (remaining, retry-after, reset) from these few predicates by
 * brute force, independently of the closed forms the engines use.
 */
interface Model {

    /** Whether a request of {@code cost} at {@code now} is admitted. Changes nothing. */
    boolean admits(long now, long cost);

    /**
     * Applies an admitted request. Taking {@code c} at one instant is the same as taking 1, {@code c}
     * times, at that instant (true of every algorithm's definition), which lets {@link Figures}
     * count what remains by bisection rather than one request at a time.
     */
    void take(long now, long cost);

    /** Whether the state at {@code now} decides exactly as a client never seen (its quota is full). */
    boolean fresh(long now);

    /** Leaky bucket: how long an admitted request at {@code now} waits for its slot; else 0. */
    default long delayMs(long now) {
        return 0;
    }

    /** The largest cost ever admitted. */
    long capacity();

    Model copy();

    static Model of(Rule rule) {
        long limit = rule.limit();
        long window = rule.windowMillis();
        switch (rule.algorithm()) {
            case FIXED_WINDOW:
                return new FixedWindowModel(limit, window);
            case SLIDING_WINDOW_COUNTER:
                return new SlidingWindowCounterModel(limit, window);
            case SLIDING_WINDOW_LOG:
                return new SlidingWindowLogModel(limit, window);
            case TOKEN_BUCKET:
                return new TokenBucketModel(limit, window, rule.burst());
            case LEAKY_BUCKET:
                return new LeakyBucketModel(limit, window, rule.burst(), rule.maxDelay().toMillis());
            case GCRA:
                return new GcraModel(limit, window, rule.burst());
            default:
                throw new IllegalArgumentException(rule.algorithm().id());
        }
    }
}
