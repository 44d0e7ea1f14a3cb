package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * The next free drain slot as an exact fraction. A request waits for max(slot, now); admitted
 * if that wait, rounded up to a whole ms, is at most maxDelay and the queue including it holds
 * at most burst slots. The slot stays when the figures change; written under another limit, a
 * fractional slot is rounded up to a whole ms.
 */
final class LeakyBucketModel extends Model {

    private Ratio next; // null: never seen
    private long stamp; // the latest time a request took at
    private Ratio refunded = Ratio.ZERO; // every refund given back so far, in ms, each rounded up to whole ms
    private long limit; // the limit the slot was written under

    private Ratio queued(Rule r, long now) {
        if (next == null) return Ratio.ZERO;
        Ratio kept = limit == r.limit() ? next : Ratio.of(next.ceil());
        return kept.minus(Ratio.of(now)).max(Ratio.ZERO);
    }

    private static Ratio slot(Rule r) {
        return Ratio.of(r.windowMillis(), r.limit());
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        Ratio q = queued(r, now);
        return q.ceil() <= r.maxDelay().toMillis() && q.plus(slot(r).times(cost)).compareTo(slot(r).times(r.burst())) <= 0;
    }

    @Override
    Object take(Rule r, long now, long cost) {
        stamp = next == null ? now : Math.max(now, stamp);
        next = Ratio.of(now).plus(queued(r, now)).plus(slot(r).times(cost));
        limit = r.limit();
        return new Ratio[]{next, refunded};
    }

    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        if (next == null || limit != r.limit()) return;
        Ratio[] t = (Ratio[]) taken;
        if (next.equals(t[0]) && refunded.equals(t[1])) {
            next = next.minus(slot(r).times(cost)).max(Ratio.of(stamp)); // nothing taken or given back since: undone, not before the latest take
            return;
        }
        // The refund counter only grows over a state's life: one below the take's belongs to a state
        // that replaced the take's (another algorithm's take in between): nothing to give back, as in
        // the engines, where the counter's difference, modulo 2^52, is then beyond any bound.
        if (refunded.compareTo(t[1]) < 0) return;
        Ratio before = next;
        next = GcraModel.givenBack(next, t[0].minus(refunded.minus(t[1])), Math.max(now, stamp), slot(r).times(cost));
        refunded = refunded.plus(Ratio.of(before.minus(next).ceil())); // the engines count whole ms, rounded up
    }

    @Override
    long delayMs(Rule r, long now) {
        return queued(r, now).ceil();
    }

    @Override
    boolean fresh(Rule r, long now) {
        return queued(r, now).compareTo(Ratio.ZERO) == 0;
    }

    @Override
    void clear() {
        next = null;
        refunded = Ratio.ZERO; // an expired state's counter goes with it: the engines' next state starts at 0
    }

    @Override
    Model copy() {
        LeakyBucketModel m = new LeakyBucketModel();
        m.next = next;
        m.limit = limit;
        m.stamp = stamp;
        m.refunded = refunded;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.LEAKY_BUCKET;
    }
}
