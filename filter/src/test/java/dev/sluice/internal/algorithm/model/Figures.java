package dev.sluice.internal.algorithm.model;

import java.util.List;
import java.util.function.LongPredicate;

/**
 * The figures of one rule's decision, derived from a {@link Model}'s predicates by brute force:
 * remaining by admitting cost-1 requests one after another on a copy, retry-after and reset by
 * searching for the first millisecond at which the predicate holds (both only ever become true
 * as time passes without requests, so the search may bisect).
 */
record Figures(boolean allowed, long remaining, long retryAfterMs, long resetMs, long delayMs) {

    /** The figures of every rule of one request, applying it to the models if all admit. */
    static List<Figures> decide(List<Model> models, List<Long> costs, List<Long> windows, long now) {
        boolean admitted = true;
        for (int i = 0; i < models.size(); i++) {
            admitted &= models.get(i).admits(now, costs.get(i));
        }
        Figures[] out = new Figures[models.size()];
        for (int i = 0; i < models.size(); i++) {
            Model m = models.get(i);
            long cost = costs.get(i);
            boolean allowed = m.admits(now, cost);
            if (admitted) {
                long delay = m.delayMs(now);
                m.take(now, cost);
                out[i] = new Figures(true, remaining(m, now), 0, reset(m, now), delay);
            } else {
                long retry = allowed ? 0 : cost > m.capacity() ? windows.get(i) : firstMs(now, t -> m.admits(t, cost));
                out[i] = new Figures(allowed, remaining(m, now), retry, reset(m, now), 0);
            }
        }
        return List.of(out);
    }

    private static long remaining(Model m, long now) {
        Model copy = m.copy();
        long n = 0;
        while (copy.admits(now, 1)) {
            copy.take(now, 1);
            n++;
        }
        return n;
    }

    private static long reset(Model m, long now) {
        return firstMs(now, m::fresh);
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
