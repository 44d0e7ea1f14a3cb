package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Rule;

import java.util.function.LongPredicate;

/**
 * The figures of one rule's decision, derived from a {@link Model}'s predicates by brute force:
 * remaining by admitting cost-1 requests one after another on copies (bisecting on how many);
 * retry-after, reset and next
 * (the time until remaining grows) by searching for the first millisecond at which the predicate
 * holds (each only ever becomes true as time passes without requests, so the search may bisect).
 * Next is 0 when remaining never grows by waiting (it is already what a fresh state has), and the
 * retry-after for a denying rule. The window is the rule's, or for a calendar rule the length of the
 * calendar window holding {@code now} ({@link CalendarModel}).
 */
record Figures(boolean allowed, long remaining, long retryAfterMs, long resetMs, long nextMs, long delayMs, long windowMs) {

    /** A concurrency rule's retry-after, reset and next: a hint, not a time anything happens at. */
    static final long CONCURRENCY_HINT_MS = 1000;

    /** The figures of a rule that took a request's cost from {@code m} (already applied). */
    static Figures taken(Model m, Rule r, long now, long delay) {
        if (r.algorithm().isConcurrency()) {
            return new Figures(true, remaining(m, r, now), 0, CONCURRENCY_HINT_MS, CONCURRENCY_HINT_MS, 0, r.windowMillis());
        }
        long remaining = remaining(m, r, now);
        return new Figures(true, remaining, 0, reset(m, r, now), next(m, r, now, remaining), delay, windowMs(r, now));
    }

    /** The figures of a rule that took nothing: it denies {@code cost}, or another rule denied the request. */
    static Figures untouched(Model m, Rule r, long now, long cost) {
        boolean allowed = m.admits(r, now, cost);
        if (r.algorithm().isConcurrency()) {
            return new Figures(allowed, remaining(m, r, now), allowed ? 0 : CONCURRENCY_HINT_MS, CONCURRENCY_HINT_MS,
                    CONCURRENCY_HINT_MS, 0, r.windowMillis());
        }
        long retry = allowed ? 0 : cost > r.capacity() ? r.windowMillis() : firstMs(now, t -> m.admits(r, t, cost));
        long remaining = remaining(m, r, now);
        return new Figures(allowed, remaining, retry, reset(m, r, now), allowed ? next(m, r, now, remaining) : retry, 0,
                windowMs(r, now));
    }

    private static long windowMs(Rule r, long now) {
        if (r.calendar() == null) return r.windowMillis();
        long[] w = CalendarModel.window(r.calendar(), now);
        return w[1] - w[0];
    }

    /** How many cost-1 requests at {@code now} would be admitted one after another: the largest k with {@link #admitsOneMore}. */
    private static long remaining(Model m, Rule r, long now) {
        long admitted = 0;
        long refused = r.capacity() + 1; // each one takes a unit of capacity
        while (refused - admitted > 1) {
            long mid = admitted + (refused - admitted) / 2;
            if (admitsOneMore(m, r, now, mid - 1)) admitted = mid;
            else refused = mid;
        }
        return admitted;
    }

    /** Whether, after {@code taken} cost-1 requests at {@code now}, one more is admitted. */
    private static boolean admitsOneMore(Model m, Rule r, long now, long taken) {
        if (taken == 0) return m.admits(r, now, 1);
        Model copy = m.copy();
        copy.take(r, now, taken);
        return copy.admits(r, now, 1);
    }

    private static long reset(Model m, Rule r, long now) {
        return firstMs(now, t -> m.fresh(r, t));
    }

    /** The first ms at which remaining exceeds {@code remaining}; 0 if even a fresh state has no more. */
    private static long next(Model m, Rule r, long now, long remaining) {
        if (!admitsOneMore(m, r, now + reset(m, r, now), remaining)) return 0;
        return firstMs(now, t -> admitsOneMore(m, r, t, remaining));
    }

    /** The smallest {@code w >= 0} such that {@code holds(now + w)}. */
    static long firstMs(long now, LongPredicate holds) {
        if (holds.test(now)) return 0;
        long bad = 0;
        long good = 1;
        while (!holds.test(now + good)) {
            bad = good;
            good *= 2;
        }
        while (good - bad > 1) {
            long mid = bad + (good - bad) / 2;
            if (holds.test(now + mid)) good = mid;
            else bad = mid;
        }
        return good;
    }
}
