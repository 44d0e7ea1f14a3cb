package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * {@code sliding-window-log}: exact. Every admitted token is logged with its time; a request of
 * cost {@code c} is admitted when the tokens logged in the last {@code window} (the interval
 * {@code (now - window, now]}) plus {@code c} are at most {@code limit}.
 *
 * <p><b>Cost:</b> a request of cost {@code c} logs {@code c} entries at its time, so the log never
 * holds more than {@code limit} entries whatever the costs. {@code remaining} is {@code limit}
 * minus the entries in the window; a denied request's {@code retryAfterMs} is the time until
 * enough of the oldest entries have left the window; {@code resetMs} is the time until the
 * newest has; {@code nextMs} (allowed) the time until the oldest has.
 *
 * <p><b>Accuracy:</b> exact: no interval of one window's length ever holds more than
 * {@code limit} admitted tokens. <b>Bursts:</b> the whole quota at once, then nothing until it
 * slides out. <b>State:</b> one sorted-set entry per admitted token (score: its time; member: the
 * time and the entry's index within that ms, 8 bytes, unique whatever the figures), trimmed on
 * each admission; memory grows with the limit
 * (see docs/algorithms.md for the measured bytes). Entries are logged at
 * {@code max(now, newest entry)}, so a caller whose clock lags cannot log into the past.
 * <b>Expiry:</b> one window after the newest entry, plus the margin. In process the log is kept
 * as (time, count) runs.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the entries stay, and the new window and
 * limit apply to them: the same log, counted in another window against another limit.
 *
 * <p><b>Giving back</b> ({@code rule.<r>.count}): {@code cost} entries logged at the request's time
 * are removed (as many as are left), exactly what it added.
 */
public final class SlidingWindowLog extends RateAlgorithm {

    /** A ring of (time, count) runs, oldest first. */
    static final class State extends KeyState {
        long[] times = new long[4];
        long[] counts = new long[4];
        int head;
        int size;
        long total;

        long time(int i) {
            return times[(head + i) & (times.length - 1)];
        }

        long count(int i) {
            return counts[(head + i) & (counts.length - 1)];
        }

        void dropOldest() {
            total -= counts[head];
            head = (head + 1) & (times.length - 1);
            size--;
        }

        void append(long time, long count) {
            if (size > 0 && time(size - 1) == time) {
                counts[(head + size - 1) & (counts.length - 1)] += count;
            } else {
                if (size == times.length) grow();
                int i = (head + size) & (times.length - 1);
                times[i] = time;
                counts[i] = count;
                size++;
            }
            total += count;
        }

        /** Removes up to {@code count} entries logged at {@code time}. */
        void remove(long time, long count) {
            for (int i = 0; i < size; i++) {
                if (time(i) != time) continue;
                int at = (head + i) & (times.length - 1);
                long removed = Math.min(count, counts[at]);
                counts[at] -= removed;
                total -= removed;
                if (counts[at] == 0) {
                    for (int j = i; j < size - 1; j++) { // close the gap: runs stay in time order
                        int to = (head + j) & (times.length - 1);
                        int from = (head + j + 1) & (times.length - 1);
                        times[to] = times[from];
                        counts[to] = counts[from];
                    }
                    size--;
                }
                return;
            }
        }

        private void grow() {
            long[] t = new long[times.length * 2];
            long[] c = new long[counts.length * 2];
            for (int i = 0; i < size; i++) {
                t[i] = time(i);
                c[i] = count(i);
            }
            times = t;
            counts = c;
            head = 0;
        }
    }

    SlidingWindowLog(Rule rule) {
        super(rule);
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
        long newest = s.size > 0 ? s.time(s.size - 1) : Long.MIN_VALUE;
        long at = Math.max(now, newest);
        int first = 0;
        long expired = 0;
        while (first < s.size && s.time(first) <= at - windowMs) {
            expired += s.count(first++);
        }
        long inWindow = s.total - expired;
        long resetNow = inWindow > 0 ? newest + windowMs - now : 0;
        if (cost > limit) {
            return impossible(limit - inWindow, resetNow);
        }
        if (inWindow + cost > limit) {
            long mustLeave = inWindow + cost - limit;
            int i = first;
            for (long left = s.count(i); left < mustLeave; left += s.count(i)) {
                i++;
            }
            return Verdict.deny(limit - inWindow, resetNow, s.time(i) + windowMs - now);
        }
        // an admitting rule has room left, so one more fits as soon as the oldest entry leaves
        long oldest = first < s.size ? s.time(first) : at;
        long nextNow = inWindow > 0 ? oldest + windowMs - now : 0;
        return Verdict.admit(limit - inWindow, resetNow, nextNow, limit - inWindow - cost, at + windowMs - now,
                oldest + windowMs - now, 0, at, 0, 0);
    }

    /** Removes {@code cost} of the entries logged at the request's time ({@code take.ms()}), those that are left. */
    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        ((State) state).remove(take.ms(), cost);
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long at = s.size > 0 ? Math.max(now, s.time(s.size - 1)) : now;
        while (s.size > 0 && s.time(0) <= at - windowMs) {
            s.dropOldest();
        }
        s.append(at, cost);
        s.expiresAtMs = at + windowMs + EXPIRY_MARGIN_MS;
    }
}
