package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

/**
 * Tokens as an exact fraction, refilled at limit/window per ms up to the burst; time never
 * rewinds. Tokens counted under another window are rounded down to a 1/window of a token of the
 * current one; tokens above the current burst count as the burst.
 */
final class TokenBucketModel extends Model {

    private Ratio tokens; // null: never seen
    private long stamp;
    private long window; // the window the tokens were counted under
    private Ratio refunded = Ratio.ZERO; // every refund given back so far, each rounded up to whole tokens

    private Ratio tokensAt(Rule r, long now) {
        if (tokens == null) return Ratio.of(r.burst());
        Ratio kept = tokens;
        long w = r.windowMillis();
        if (window != w) kept = Ratio.of(kept.times(w).max(Ratio.of(-(1L << 51))).floor(), w); // a debt: at most 2^51
        long elapsed = Math.max(now, stamp) - stamp;
        return kept.min(Ratio.of(r.burst())).plus(Ratio.of(elapsed * r.limit(), w)).min(Ratio.of(r.burst()));
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        return tokensAt(r, now).compareTo(Ratio.of(cost)) >= 0;
    }

    /** @return the moment the bucket left would be full, had nothing else been taken */
    @Override
    Object take(Rule r, long now, long cost) {
        Ratio left = tokensAt(r, now).minus(Ratio.of(cost));
        stamp = tokens == null ? now : Math.max(now, stamp);
        tokens = left;
        window = r.windowMillis();
        return new Ratio[]{Ratio.of(stamp).plus(Ratio.of(r.burst()).minus(left).times(Ratio.of(r.windowMillis(), r.limit()))), refunded};
    }

    /** As a request of {@code extra} taken at {@code now}, past empty: negative tokens, at most {@link #maxDebtUnits} owed. */
    @Override
    void charge(Rule r, long now, long extra) {
        long w = r.windowMillis();
        Ratio left = tokensAt(r, now).minus(Ratio.of(chargeable(extra, r)));
        stamp = tokens == null ? now : Math.max(now, stamp);
        window = w;
        tokens = left.max(Ratio.of(-maxDebtUnits(r), w));
    }

    /**
     * Undone if nothing was taken or given back since; else the cost, but at most what refills
     * between now (not before the stored time) and the moment the bucket the request left would have
     * been full, less what was given back since it was taken: without the request, the bucket would
     * have been full, and stopped refilling, that much earlier.
     */
    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        if (tokens == null || window != r.windowMillis()) return;
        Ratio[] t = (Ratio[]) taken;
        Ratio full = Ratio.of(stamp).plus(Ratio.of(r.burst()).minus(tokens).times(Ratio.of(r.windowMillis(), r.limit())));
        Ratio refund;
        if (full.equals(t[0]) && refunded.equals(t[1])) {
            refund = Ratio.of(cost); // nothing taken or given back since: undone
        } else {
            // The refund counter only grows over a state's life: one below the take's belongs to a state
            // that replaced the take's (another algorithm's take in between): nothing to give back, as in
            // the engines, where the counter's difference, modulo 2^52, is then beyond any bound.
            if (refunded.compareTo(t[1]) < 0) return;
            Ratio ahead = t[0].minus(Ratio.of(Math.max(now, stamp)));
            Ratio bound = ahead.times(Ratio.of(r.limit(), r.windowMillis())).minus(refunded.minus(t[1]));
            if (bound.compareTo(Ratio.ZERO) <= 0) return;
            refund = Ratio.of(cost).min(bound);
            refunded = refunded.plus(Ratio.of(refund.ceil())); // the engines count whole tokens, rounded up
        }
        tokens = tokens.plus(refund);
    }

    /**
     * Under figures in force that refill faster ({@code limit} up) or hold less ({@code burst} down)
     * than the request's, the bucket may have filled up since the take more than the take's figures
     * tell, so nothing is given back; otherwise the request's figures bound the give-back, as they
     * understate what its absence would have left (docs/algorithms.md, "Changed figures").
     */
    @Override
    void giveBack(Rule asTaken, Rule inForce, long now, long cost, Object taken) {
        if (inForce.limit() > asTaken.limit() || inForce.burst() < asTaken.burst()) return;
        giveBack(asTaken, now, cost, taken);
    }

    @Override
    boolean fresh(Rule r, long now) {
        return tokensAt(r, now).compareTo(Ratio.of(r.burst())) == 0;
    }

    @Override
    void clear() {
        tokens = null;
        refunded = Ratio.ZERO; // an expired state's counter goes with it: the engines' next state starts at 0
    }

    @Override
    Model copy() {
        TokenBucketModel m = new TokenBucketModel();
        m.tokens = tokens;
        m.stamp = stamp;
        m.window = window;
        m.refunded = refunded;
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.TOKEN_BUCKET;
    }
}
