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
    private long stamp; // the latest time a request took at
    private Ratio refunded = Ratio.ZERO; // every refund given back so far, in ms, each rounded up to whole ms
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
    Object take(Rule r, long now, long cost) {
        stamp = tat == null ? now : Math.max(now, stamp);
        tat = base(r, now).plus(interval(r).times(cost));
        limit = r.limit();
        return new Ratio[]{tat, refunded};
    }

    /**
     * The TAT moves {@code extra} intervals further, beyond the burst if need be: no further than
     * {@link #maxDebtUnits} (in ms x limit) ahead of now, unless it already was.
     */
    @Override
    void charge(Rule r, long now, long extra) {
        Ratio from = base(r, now);
        Ratio lead = from.minus(Ratio.of(now));
        long leadMs = lead.floor();
        long maxLeadMs = Math.floorDiv(r.burst() * r.windowMillis() + r.limit() - 1, r.limit()) + r.windowMillis();
        if (leadMs > maxLeadMs && leadMs > (1L << 51) / r.limit()) return; // beyond what one may owe under this limit
        Ratio most = Ratio.of(maxDebtUnits(r), r.limit()).max(lead);
        stamp = tat == null ? now : Math.max(now, stamp);
        tat = Ratio.of(now).plus(lead.plus(interval(r).times(chargeable(extra, r))).min(most));
        limit = r.limit();
    }

    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        if (tat == null || limit != r.limit()) return;
        Ratio[] t = (Ratio[]) taken;
        if (tat.equals(t[0]) && refunded.equals(t[1])) {
            tat = tat.minus(interval(r).times(cost)).max(Ratio.of(stamp)); // nothing taken or given back since: undone, not before the latest take
            return;
        }
        // The refund counter only grows over a state's life: one below the take's belongs to a state
        // that replaced the take's (another algorithm's take in between): nothing to give back, as in
        // the engines, where the counter's difference, modulo 2^52, is then beyond any bound.
        if (refunded.compareTo(t[1]) < 0) return;
        Ratio before = tat;
        tat = givenBack(tat, t[0].minus(refunded.minus(t[1])), Math.max(now, stamp), interval(r).times(cost));
        refunded = refunded.plus(Ratio.of(before.minus(tat).ceil())); // the engines count whole ms, rounded up
    }

    /**
     * {@code time} (a TAT or next free slot) once the request that left it at {@code taken} (less
     * what was given back since) is given back at {@code at}: earlier by the request's {@code span},
     * at most by how far {@code taken} is still ahead of {@code at} (the bucket without the request
     * would have been full that much earlier), and never before {@code at}.
     */
    static Ratio givenBack(Ratio time, Ratio taken, long at, Ratio span) {
        Ratio now = Ratio.of(at);
        if (time.compareTo(now) <= 0 || taken.compareTo(now) <= 0) return time;
        return time.minus(span.min(taken.minus(now))).max(now);
    }

    @Override
    boolean fresh(Rule r, long now) {
        return tat == null || base(r, now).compareTo(Ratio.of(now)) <= 0;
    }

    @Override
    void clear() {
        tat = null;
        refunded = Ratio.ZERO; // an expired state's counter goes with it: the engines' next state starts at 0
    }

    @Override
    Model copy() {
        GcraModel m = new GcraModel();
        m.tat = tat;
        m.limit = limit;
        m.stamp = stamp;
        m.refunded = refunded;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.GCRA;
    }
}
