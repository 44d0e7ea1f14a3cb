package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Acquisition;

import java.util.List;
import java.util.function.LongPredicate;

/**
 * The figures of one rule's decision, derived from a {@link Model}'s predicates by brute force:
 * remaining by admitting cost-1 requests one after another on copies (bisecting on how many);
 * retry-after, reset and next
 * (the time until remaining grows) by searching for the first millisecond at which the predicate
 * holds (each only ever becomes true as time passes without requests, so the search may bisect).
 * Next is 0 when remaining never grows by waiting (it is already what a fresh state has), and the
 * retry-after for a denying rule.
 */
record Figures(boolean allowed, long remaining, long retryAfterMs, long resetMs, long nextMs, long delayMs) {

    /**
     * The figures of every rule of one request ({@code models.get(i)} is the state of
     * {@code request.get(i)}'s rule and client): when every enforcing rule admits it, each rule that
     * admits takes its cost from its model; a shadow rule ({@code dryRun}) that denies takes nothing
     * and refuses nothing.
     */
    static List<Figures> decide(List<Model> models, List<Acquisition> request, long now) {
        boolean admitted = true;
        for (int i = 0; i < models.size(); i++) {
            admitted &= models.get(i).admits(now, request.get(i).cost()) || request.get(i).rule().dryRun();
        }
        Figures[] out = new Figures[models.size()];
        for (int i = 0; i < models.size(); i++) {
            Model m = models.get(i);
            long cost = request.get(i).cost();
            boolean allowed = m.admits(now, cost);
            if (admitted && allowed) {
                long delay = m.delayMs(now);
                m.take(now, cost);
                long remaining = remaining(m, now);
                out[i] = new Figures(true, remaining, 0, reset(m, now), next(m, now, remaining), delay);
            } else {
                long retry = allowed ? 0 : cost > m.capacity() ? request.get(i).rule().windowMillis() : firstMs(now, t -> m.admits(t, cost));
                long remaining = remaining(m, now);
                out[i] = new Figures(allowed, remaining, retry, reset(m, now), allowed ? next(m, now, remaining) : retry, 0);
            }
        }
        return List.of(out);
    }

    /** How many cost-1 requests at {@code now} would be admitted one after another: the largest k with {@link #admitsOneMore}. */
    private static long remaining(Model m, long now) {
        long admitted = 0;
        long refused = m.capacity() + 1; // each one takes a unit of capacity
        while (refused - admitted > 1) {
            long mid = admitted + (refused - admitted) / 2;
            if (admitsOneMore(m, now, mid - 1)) admitted = mid;
            else refused = mid;
        }
        return admitted;
    }

    /** Whether, after {@code taken} cost-1 requests at {@code now}, one more is admitted. */
    private static boolean admitsOneMore(Model m, long now, long taken) {
        if (taken == 0) return m.admits(now, 1);
        Model copy = m.copy();
        copy.take(now, taken);
        return copy.admits(now, 1);
    }

    private static long reset(Model m, long now) {
        return firstMs(now, m::fresh);
    }

    /** The first ms at which remaining exceeds {@code remaining}; 0 if even a fresh state has no more. */
    private static long next(Model m, long now, long remaining) {
        if (!admitsOneMore(m, now + reset(m, now), remaining)) return 0;
        return firstMs(now, t -> admitsOneMore(m, t, remaining));
    }

    /** The smallest {@code w >= 0} such that {@code holds(now + w)}. */
    private static long firstMs(long now, LongPredicate holds) {
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
