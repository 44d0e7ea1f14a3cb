package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * A count and when it ends. A request counted while the count applies adds to it and extends it
 * to the end of its own epoch-aligned window (so a lagging clock counts against the window
 * already started, and a count survives a change of window until it ends); otherwise counting
 * starts afresh in the request's window; a calendar rule's windows are {@link CalendarModel}'s.
 * A give-back takes the cost off the count while it is
 * the one the request was added to.
 */
final class FixedWindowModel extends Model {

    private long end = Long.MIN_VALUE;
    private long count;

    private long countAt(long now) {
        return now < end ? count : 0;
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        return countAt(now) + cost <= r.limit();
    }

    @Override
    Object take(Rule r, long now, long cost) {
        long windowEnd = r.calendar() != null ? CalendarModel.end(r.calendar(), now)
                : Math.floorDiv(now, r.windowMillis()) * r.windowMillis() + r.windowMillis();
        count = countAt(now) + cost;
        end = now < end ? Math.max(end, windowEnd) : windowEnd;
        return end;
    }

    /** As a request of {@code extra} taken at {@code now}, past the limit, the count at most 2^51 whatever the window. */
    @Override
    void charge(Rule r, long now, long extra) {
        take(r, now, Math.min(extra, 1L << 51));
        count = Math.min(count, 1L << 51);
    }

    /** The count drops by the cost while it is the count the request was added to: it still ends where the request left it. */
    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        if (end == (long) taken) count -= Math.min(cost, count);
    }

    @Override
    boolean fresh(Rule r, long now) {
        return countAt(now) == 0;
    }

    @Override
    void clear() {
        end = Long.MIN_VALUE;
        count = 0;
    }

    @Override
    Model copy() {
        FixedWindowModel m = new FixedWindowModel();
        m.end = end;
        m.count = count;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.FIXED_WINDOW;
    }
}
