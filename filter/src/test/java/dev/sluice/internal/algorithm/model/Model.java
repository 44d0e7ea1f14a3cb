package dev.sluice.internal.algorithm.model;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * A reference model of one algorithm for one client: the definition, written as plainly as
 * possible, in exact rational arithmetic, with no care for speed or memory. {@link Figures}
 * derives every reported number (remaining, retry-after, reset) from these few predicates by
 * brute force, independently of the closed forms the engines use.
 *
 * <p>The state belongs to the rule's name and the client; the figures (limit, window, burst, max
 * delay) come with each call, as they do to the engines, so a client whose figures change (a plan
 * switch, a reload) is read in the new figures as each algorithm defines. A state expires, as its
 * Redis key does, when it would have been back to full under the figures it was written with, plus
 * the margin ({@link #written}, {@link #settle}).
 */
abstract class Model {

    /** When the state is forgotten; {@code Long.MAX_VALUE} until something is written. Copied by {@link #copy}. */
    long expiresAt = Long.MAX_VALUE;
    /** The figures of the last write, null before; for the tests' coverage only. */
    Rule writtenWith;

    /** Whether a request of {@code cost} at {@code now} is admitted. Changes nothing. */
    abstract boolean admits(Rule r, long now, long cost);

    /**
     * Applies an admitted request. Taking {@code c} at one instant is the same as taking 1, {@code c}
     * times, at that instant (true of every algorithm's definition), which lets {@link Figures}
     * count what remains by bisection rather than one request at a time.
     *
     * @return what identifies the take, for {@link #giveBack}
     */
    abstract Object take(Rule r, long now, long cost);

    /**
     * Gives back what the request of {@code cost} that {@link #take} answered {@code taken} took,
     * decided under {@code r}, at {@code now}: the definition of docs/algorithms.md's table.
     */
    abstract void giveBack(Rule r, long now, long cost, Object taken);

    /**
     * Gives back as {@link #giveBack(Rule, long, long, Object)}, the request having been decided under
     * {@code asTaken} and the figures in force now being {@code inForce} (a reload or a plan switch
     * between the two): computed with the take's figures, which identify the take; an algorithm whose
     * bound those figures would overstate gives less (see the token bucket).
     */
    void giveBack(Rule asTaken, Rule inForce, long now, long cost, Object taken) {
        giveBack(asTaken, now, cost, taken);
    }

    /**
     * Charges {@code extra} more at {@code now}, whatever the limit ({@code rule.<r>.actual-cost}): taken as a
     * request of {@code extra} at {@code now} would be, admitted or not, within the bounds where the engines'
     * arithmetic is exact ({@link #chargeable}, and each algorithm's cap on a debt). Only for the algorithms
     * that settle a cost.
     */
    void charge(Rule r, long now, long extra) {
        throw new UnsupportedOperationException(r.algorithm().id() + " settles no cost");
    }

    /** The most one charge takes: {@code extra x window} at most 2^52. */
    static long chargeable(long extra, Rule r) {
        return Math.min(extra, (1L << 52) / r.windowMillis());
    }

    /** The largest count a window holds once charged past its limit: {@code count x window} at most 2^51. */
    static long maxCount(Rule r) {
        return (1L << 51) / r.windowMillis();
    }

    /** The most a bucket owes, in tokens x window (ms x limit for gcra): 2^51, and at most 2^36 ms of refill. */
    static long maxDebtUnits(Rule r) {
        return r.limit() >= 1L << 15 ? 1L << 51 : Math.min(1L << 51, r.limit() << 36);
    }

    /** Whether the state at {@code now} decides exactly as a client never seen (its quota is full). */
    abstract boolean fresh(Rule r, long now);

    /** Leaky bucket: how long an admitted request at {@code now} waits for its slot; else 0. */
    long delayMs(Rule r, long now) {
        return 0;
    }

    /** Forgets everything: the state of a client never seen. */
    abstract void clear();

    abstract Model copy();

    /** After a write at {@code now} under {@code r}: the state expires when it is back to full under {@code r}, plus the margin. */
    final void written(Rule r, long now) {
        writtenWith = r;
        expiresAt = Figures.firstMs(now, t -> fresh(r, t)) + now + RateAlgorithm.EXPIRY_MARGIN_MS;
    }

    /** Before a decision at {@code now}: an expired state is forgotten, as Redis forgets the key. */
    final void settle(long now) {
        if (now >= expiresAt) {
            clear();
            expiresAt = Long.MAX_VALUE;
            writtenWith = null;
        }
    }

    /** The model of a client never seen of {@code algorithm}. */
    static Model of(Algorithm algorithm) {
        return switch (algorithm) {
            case FIXED_WINDOW -> new FixedWindowModel();
            case SLIDING_WINDOW_COUNTER -> new SlidingWindowCounterModel();
            case SLIDING_WINDOW_LOG -> new SlidingWindowLogModel();
            case TOKEN_BUCKET -> new TokenBucketModel();
            case LEAKY_BUCKET -> new LeakyBucketModel();
            case GCRA -> new GcraModel();
            case CONCURRENCY -> new ConcurrencyModel();
        };
    }

    /** The algorithm this models. */
    abstract Algorithm algorithm();
}
