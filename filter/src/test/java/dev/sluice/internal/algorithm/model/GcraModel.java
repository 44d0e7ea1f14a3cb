package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * The theoretical arrival time as an exact fraction; admitted if pushing it stays within burst
 * intervals of now. The TAT stays when the figures change; written under another limit, a
 * fractional TAT is rounded up to a whole ms.
 */
final class GcraModel extends Model {

    private Ratio tat; // null: never seen
    private long limit; // the limit the TAT was written under

    private Ratio base(Rule r, long now) {
        if (tat == null) return Ratio.of(now);
        Ratio kept = limit == r.limit() ? tat : Ratio.of(tat.ceil());
        return kept.max(Ratio.of(now));
    }

    private static Ratio interval(Rule r) {
        return Ratio.of(r.windowMillis(), r.limit());
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        Ratio pushed = base(r, now).plus(interval(r).times(cost));
        return pushed.minus(Ratio.of(now)).compareTo(interval(r).times(r.burst())) <= 0;
    }

    @Override
    void take(Rule r, long now, long cost) {
        tat = base(r, now).plus(interval(r).times(cost));
        limit = r.limit();
    }

    @Override
    boolean fresh(Rule r, long now) {
        return tat == null || base(r, now).compareTo(Ratio.of(now)) <= 0;
    }

    @Override
    void clear() {
        tat = null;
    }

    @Override
    Model copy() {
        GcraModel m = new GcraModel();
        m.tat = tat;
        m.limit = limit;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.GCRA;
    }
}
