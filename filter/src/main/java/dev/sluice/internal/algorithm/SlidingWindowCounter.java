package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * {@code sliding-window-counter}: approximates a window that slides with time by weighting the
 * previous fixed window's count by how much of it the sliding window still covers. At a time
 * {@code e} ms into the current (epoch-aligned) window, the estimate is
 * {@code previous * (window - e) / window + current}; a request of cost {@code c} is admitted when
 * the estimate plus {@code c} is at most {@code limit}.
 *
 * <p>{@code remaining} is {@code floor(limit - estimate)}; {@code retryAfterMs} is the first
 * millisecond at which the estimate (falling as the previous window's weight fades, or as the
 * current count becomes the previous one) leaves room for {@code c}; {@code resetMs} is the end
 * of the next window, when both counts have faded; {@code nextMs} (allowed) is the first
 * millisecond at which the estimate leaves room for one more than {@code remaining}.
 *
 * <p><b>Accuracy:</b> never more than {@code limit} per aligned window (the estimate includes the
 * whole current count). Over a sliding interval of one window's length that covers a fraction
 * {@code f} of the current window, at most {@code limit + previous * f < 2 * limit} are admitted;
 * the extra only arises when the previous window's requests were bunched at its end (the
 * estimate assumes they were spread evenly). With the previous window's traffic spread evenly,
 * the estimate is the sliding count. The error is the other way, too: requests bunched at the
 * start of the previous window are over-counted, so a request can be denied although fewer
 * than {@code limit} fell in the last window's length.
 * <b>Bursts:</b> up to {@code limit} minus the weighted previous count.
 *
 * <p><b>State:</b> two counters and when the current one's window ends: a Redis string of 25 bytes
 * (struct {@code '<Bddd'}: tag 2, end ms, current, previous). <b>Expiry:</b> at the end of the next
 * window (when the current count has faded too) plus the margin.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the counts keep their places relative to the
 * stored end, read in windows of the current length: the current count counts whole until the first
 * window that starts at or after that end, then fades through that window as the previous count; the
 * previous count fades up to the end. A stored end that is not a multiple of the current window is
 * rounded up to one (never in the client's favour). With an unchanged window this is the aligned
 * counter above.
 *
 * <p><b>Giving back</b> ({@code rule.<r>.count}): the cost comes off the current count while the
 * request's window is the current one, off the previous count in the window after.
 */
public final class SlidingWindowCounter extends RateAlgorithm {

    static final class State extends KeyState {
        /** When the current count's window ends. */
        long end = Long.MIN_VALUE;
        long current;
        long previous;
    }

    private final long quotaUnits;

    SlidingWindowCounter(Rule rule) {
        super(rule);
        this.quotaUnits = limit * windowMs;
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public KeyState newState() {
        return new State();
    }

    @Override
    public Verdict decide(KeyState state, long now, long cost) {
        State s = (State) state;
        long start = windowStart(s, now);
        long current = current(s, start);
        long previous = previous(s, start);
        long elapsed = Math.max(now, start) - start; // a lagging caller is at the start of the stored window
        long previousUnits = previous * (windowMs - elapsed);
        long remainingNow = floorDiv(quotaUnits - previousUnits - current * windowMs, windowMs);
        long resetNow = current > 0 ? start + 2 * windowMs - now : previous > 0 ? start + windowMs - now : 0;
        if (cost > limit) {
            return impossible(remainingNow, resetNow);
        }
        if (previousUnits + (current + cost) * windowMs > quotaUnits) {
            return Verdict.deny(remainingNow, resetNow, admitAt(start, current, previous, cost) - now);
        }
        long remainingAfter = floorDiv(quotaUnits - previousUnits - (current + cost) * windowMs, windowMs);
        return Verdict.admit(remainingNow, resetNow, next(start, current, previous, remainingNow, now), remainingAfter,
                start + 2 * windowMs - now, next(start, current + cost, previous, remainingAfter, now), 0, start + windowMs, 0, 0);
    }

    /**
     * The first millisecond at which a request of {@code cost}, denied now, fits: the estimate
     * falls as the previous window's weight fades, then as the current count becomes the previous.
     */
    private long admitAt(long start, long current, long previous, long cost) {
        if (current + cost <= limit) {
            // still in this window, once the previous window's weight has faded enough (previous > 0 here)
            return start + windowMs - floorDiv((limit - current - cost) * windowMs, previous);
        }
        // in the next window, once this window's count (then the previous) has faded enough
        return start + windowMs + Math.max(0, windowMs - floorDiv((limit - cost) * windowMs, current));
    }

    /** The time until {@code remaining} grows: until a request of one more than it fits; 0 at the full quota. */
    private long next(long start, long current, long previous, long remaining, long now) {
        long more = Math.max(0, remaining) + 1;
        return more > limit ? 0 : admitAt(start, current, previous, more) - now;
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long start = windowStart(s, now);
        long current = current(s, start);
        s.previous = previous(s, start);
        s.current = current + cost;
        s.end = start + windowMs;
        s.expiresAtMs = start + 2 * windowMs + EXPIRY_MARGIN_MS;
    }

    /** The current count grows by {@code extra}, past the limit if need be: as a request taken at {@code now}. */
    @Override
    public void charge(KeyState state, long now, long extra) {
        State s = (State) state;
        long start = windowStart(s, now);
        long current = current(s, start);
        s.previous = previous(s, start);
        s.current = Math.min(current + chargeable(extra, windowMs), maxCount(windowMs));
        s.end = start + windowMs;
        s.expiresAtMs = start + 2 * windowMs + EXPIRY_MARGIN_MS;
    }

    /**
     * The cost comes off the count it is in: the current count while the window the request was
     * counted in is still the current one (the stored end has not moved), the previous count once
     * exactly one window has turned since; later it has faded out.
     */
    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        State s = (State) state;
        if (s.end == take.ms()) {
            s.current -= Math.min(cost, s.current);
        } else if (s.end == take.ms() + windowMs) {
            s.previous -= Math.min(cost, s.previous);
        }
    }

    /** The stored end rounded up to a multiple of the window: where the stored current count's window ends now. */
    private long storedEnd(State s) {
        return -floorDiv(-s.end, windowMs) * windowMs;
    }

    /**
     * The start of the window in effect: the window of the stored current count while it lasts (a
     * lagging caller is at its start), else the caller's window.
     */
    private long windowStart(State s, long now) {
        if (s.end != Long.MIN_VALUE) {
            long end = storedEnd(s);
            if (now < end) return end - windowMs;
        }
        return floorDiv(now, windowMs) * windowMs;
    }

    /** Counts are read at most {@link #maxCount}: one charged past the limit under a shorter window stays exact in this one. */
    private long current(State s, long start) {
        return s.end != Long.MIN_VALUE && start + windowMs == storedEnd(s) ? Math.min(s.current, maxCount(windowMs)) : 0;
    }

    private long previous(State s, long start) {
        if (s.end == Long.MIN_VALUE) return 0;
        long end = storedEnd(s);
        if (start + windowMs == end) return Math.min(s.previous, maxCount(windowMs));
        return start == end ? Math.min(s.current, maxCount(windowMs)) : 0;
    }
}
