package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * The current count, the previous one and when the current one's window ends, read in windows
 * of the rule's current length: the current count counts whole until the first window that starts
 * at or after its end (the end rounded up to a multiple of the window), then fades through that
 * window as the previous count; the previous count fades up to the end. Estimate = previous x
 * uncovered share + current, exactly.
 */
final class SlidingWindowCounterModel extends Model {

    private long end = Long.MIN_VALUE;
    private long current;
    private long previous;

    /** {start of the window in effect, its current count, its previous count} at {@code now}. */
    private long[] read(Rule r, long now) {
        long w = r.windowMillis();
        if (end != Long.MIN_VALUE) {
            long rounded = Math.floorDiv(end + w - 1, w) * w;
            long c = Math.min(current, maxCount(r)); // a count charged under a shorter window: at most maxCount here
            if (now < rounded) return new long[]{rounded - w, c, Math.min(previous, maxCount(r))};
            if (now < rounded + w) return new long[]{rounded, 0, c};
        }
        return new long[]{Math.floorDiv(now, w) * w, 0, 0};
    }

    private Ratio estimate(Rule r, long now) {
        long[] s = read(r, now);
        long w = r.windowMillis();
        long elapsed = Math.max(now, s[0]) - s[0]; // a lagging caller is at the window's start
        return Ratio.of(s[2] * (w - elapsed), w).plus(Ratio.of(s[1]));
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        return estimate(r, now).plus(Ratio.of(cost)).compareTo(Ratio.of(r.limit())) <= 0;
    }

    @Override
    Object take(Rule r, long now, long cost) {
        long[] s = read(r, now);
        end = s[0] + r.windowMillis();
        current = s[1] + cost;
        previous = s[2];
        return end;
    }

    /** As a request of {@code extra} taken at {@code now}, past the limit, the count at most {@link #maxCount}. */
    @Override
    void charge(Rule r, long now, long extra) {
        take(r, now, chargeable(extra, r));
        current = Math.min(current, maxCount(r));
    }

    /** Off the current count while the request's window is current, off the previous in the next window. */
    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        long takenEnd = (long) taken;
        if (end == takenEnd) current -= Math.min(cost, current);
        else if (end == takenEnd + r.windowMillis()) previous -= Math.min(cost, previous);
    }

    @Override
    boolean fresh(Rule r, long now) {
        return estimate(r, now).compareTo(Ratio.ZERO) == 0;
    }

    @Override
    void clear() {
        end = Long.MIN_VALUE;
        current = 0;
        previous = 0;
    }

    @Override
    Model copy() {
        SlidingWindowCounterModel m = new SlidingWindowCounterModel();
        m.end = end;
        m.current = current;
        m.previous = previous;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.SLIDING_WINDOW_COUNTER;
    }
}
