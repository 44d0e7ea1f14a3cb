package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * {@code gcra}: the generic cell rate algorithm, a token bucket kept as one number. Requests
 * are spaced by an emission interval of {@code window / limit}; the state is the theoretical
 * arrival time (TAT) of the next request if the client sent at exactly that rate. A request of
 * cost {@code c} pushes the TAT {@code c} intervals further; it is admitted when the pushed TAT is
 * at most {@code burst} intervals ahead of now.
 *
 * <p>Admissions, {@code remaining}, {@code retryAfterMs}, {@code resetMs} and {@code nextMs} are exactly those of
 * {@link TokenBucket} with capacity {@code burst} refilling {@code limit} per window: the bucket
 * holds {@code burst - (TAT - now) / interval} tokens. Exact integer arithmetic: the interval is
 * {@code windowMs} units of "ms times limit", and the TAT is kept as whole milliseconds plus a
 * remainder in {@code [0, limit)}.
 *
 * <p><b>Accuracy:</b> exact, as the token bucket. <b>Bursts:</b> up to {@code burst} after an idle
 * period. <b>State:</b> one value, the TAT, with the limit its remainder is counted in, the latest
 * time a request took at and what was given back so far (for giving back): a Redis string of 27
 * bytes (struct {@code '<BdI7I4I7'}: tag 6, the latest time, how far the TAT is ahead of it in
 * ms x limit, limit, whole ms given back modulo 2^52).
 * <b>Expiry:</b> at the TAT (the bucket is full again) plus the margin. A caller whose clock lags
 * sees the TAT further ahead, so it is stricter, never looser.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the TAT stays where it is, the moment the
 * client's bucket is full again, and the new interval and burst apply to it: a bucket half empty
 * under one plan is as many milliseconds from full under the next. A remainder counted in another
 * limit's units is rounded up to the next whole millisecond (never in the client's favour).
 *
 * <p><b>Giving back</b> ({@code rule.<r>.count}): as {@link TokenBucket}: the TAT moves back by the
 * cost's intervals, at most by how far the TAT the request left is still ahead of now (of the latest
 * time a request took at, if later: a lagging clock gives back no more).
 */
public final class Gcra extends RateAlgorithm {

    static final class State extends KeyState {
        long tatMs = Long.MIN_VALUE;
        /** In units of 1/{@link #limit} ms. */
        long tatRemainder;
        /** The limit the remainder is counted in: the rule's when the TAT was written. */
        long limit;
        /** The latest time a request took at. */
        long stamp;
        /** Everything given back so far, in whole ms (rounded up per refund), modulo {@link RateAlgorithm#REFUNDS_MODULUS}. */
        long refunded;
    }

    private final long capacityUnits;
    private final long maxLeadMs;

    Gcra(Rule rule) {
        super(rule);
        this.capacityUnits = burst * windowMs;
        this.maxLeadMs = maxLeadMs(capacityUnits, limit, windowMs);
    }

    /**
     * The largest lead of a stored time that is computed in units: beyond it the arithmetic would
     * leave the exact range, and any request is denied (its figures are then computed in ms, see
     * {@link #farLeadMs}).
     */
    static long maxLeadMs(long capacityUnits, long limit, long windowMs) {
        return ceilDiv(capacityUnits, limit) + windowMs;
    }

    /** A stored time's ms, its remainder counted in units of 1/{@code storedLimit} ms: rounded up to a whole ms in another limit's units. */
    static long storedMs(long ms, long remainder, long storedLimit, long limit) {
        return storedLimit != limit && remainder > 0 ? ms + 1 : ms;
    }

    /** A stored time's remainder in units of 1/{@code limit} ms (0 once rounded up, see {@link #storedMs}). */
    static long storedRemainder(long remainder, long storedLimit, long limit) {
        return storedLimit != limit ? 0 : remainder;
    }

    /** How far {@code (ms, remainder)} is ahead of {@code now}, in ms-times-limit units; 0 if it has passed. */
    static long lead(long ms, long remainder, long now, long limit, long maxLeadMs) {
        if (ms < now) {
            return 0; // remainder < limit, so the stored time is before now
        }
        return Math.min(ms - now, maxLeadMs) * limit + remainder;
    }

    /**
     * The lead of {@code ms} in ms when it is beyond {@code maxLeadMs} (a caller whose clock lags
     * far behind, or a TAT written under figures that allowed a much longer lead: another plan),
     * else -1. Such a request is denied, and its figures are computed exactly in ms.
     */
    static long farLeadMs(long ms, long now, long maxLeadMs) {
        return ms >= now && ms - now > maxLeadMs ? ms - now : -1;
    }

    @Override
    public long capacity() {
        return burst;
    }

    @Override
    public KeyState newState() {
        return new State();
    }

    @Override
    public Verdict decide(KeyState state, long now, long cost) {
        State s = (State) state;
        long ms = storedMs(s.tatMs, s.tatRemainder, s.limit, limit);
        long remainder = storedRemainder(s.tatRemainder, s.limit, limit);
        long far = farLeadMs(ms, now, maxLeadMs);
        if (far >= 0) {
            // denied; lead x limit could leave the exact range, so the figures are worked out in ms
            long resetNow = far + (remainder > 0 ? 1 : 0);
            return cost > burst ? impossible(-1, resetNow)
                    : Verdict.deny(-1, resetNow, far + ceilDiv(remainder + cost * windowMs - capacityUnits, limit));
        }
        long lead = lead(ms, remainder, now, limit, maxLeadMs);
        long remainingNow = floorDiv(capacityUnits - lead, windowMs);
        long resetNow = ceilDiv(lead, limit);
        long nextNow = next(lead);
        if (cost > burst) {
            return impossible(remainingNow, resetNow);
        }
        long after = lead + cost * windowMs;
        if (after > capacityUnits) {
            return Verdict.deny(remainingNow, resetNow, ceilDiv(after - capacityUnits, limit));
        }
        return Verdict.admit(remainingNow, resetNow, nextNow, floorDiv(capacityUnits - after, windowMs), ceilDiv(after, limit),
                next(after), 0, now + floorDiv(after, limit), Math.floorMod(after, limit), s.refunded);
    }

    /**
     * The time until a lead of {@code lead} units has fallen far enough for one more whole token
     * (as {@link TokenBucket}); 0 when nothing is ahead. A lead beyond the capacity (a lagging
     * caller) counts as no token at all.
     */
    private long next(long lead) {
        if (lead <= 0) {
            return 0;
        }
        long whole = Math.max(0, floorDiv(capacityUnits - lead, windowMs)) + 1;
        return ceilDiv(lead - (capacityUnits - whole * windowMs), limit);
    }

    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        State s = (State) state;
        if (s.limit == limit) {
            long[] tat = givenBack(s.tatMs, s.tatRemainder, s.stamp, s.refunded, now, cost, take, limit, windowMs);
            s.tatMs = tat[0];
            s.tatRemainder = tat[1];
            s.refunded = tat[2];
        }
    }

    /**
     * The time {@code (ms, remainder)} (TAT or next free slot, in 1/limit ms) and the refund counter
     * once a request of {@code cost} whose decision returned {@code take} is given back at
     * {@code now} (never before {@code stamp}, the latest time a request took at). If nothing was
     * taken or given back since (the time is where the take left it, the counter has not moved),
     * the request is undone: earlier by exactly the cost's intervals, but not before {@code stamp}
     * (where another request undone since may have moved it). Otherwise earlier by at most
     * those, at most by {@link #refundBound} (see {@link TokenBucket}'s give-back, the same bucket),
     * never before now. Exact: nothing is multiplied beyond that bound.
     */
    static long[] givenBack(long ms, long remainder, long stamp, long refunded, long now, long cost, RuleDecision.Take take,
                            long limit, long windowMs) {
        if (refunded == take.givenBack() && ms == take.ms() && remainder == take.fraction()) {
            long back = remainder - cost * windowMs; // untouched since the take: undone
            long backMs = ms + floorDiv(back, limit);
            return backMs < stamp ? new long[]{stamp, 0, refunded} : new long[]{backMs, Math.floorMod(back, limit), refunded};
        }
        long at = Math.max(now, stamp);
        long bound = refundBound(take, refunded, at, limit, limit);
        if (bound <= 0 || ms < at || ms == at && remainder == 0) {
            return new long[]{ms, remainder, refunded}; // nothing to give: the bucket is full, or would have been
        }
        long refund = Math.min(cost * windowMs, bound);
        long back = remainder - refund;
        long backMs = ms + floorDiv(back, limit);
        long backRemainder = Math.floorMod(back, limit);
        if (backMs < at) { // never before now: what comes back is what the lead held
            refund = (ms - at) * limit + remainder;
            backMs = at;
            backRemainder = 0;
        }
        return new long[]{backMs, backRemainder, addRefund(refunded, refund, limit)};
    }

    /**
     * Pushes the TAT {@code extra} intervals further, beyond the burst if need be (at most
     * {@link #maxDebtUnits} ahead of now): the bucket is then in debt until the TAT is within the burst again.
     */
    @Override
    public void charge(KeyState state, long now, long extra) {
        State s = (State) state;
        long ms = storedMs(s.tatMs, s.tatRemainder, s.limit, limit);
        long remainder = storedRemainder(s.tatRemainder, s.limit, limit);
        if (farLeadMs(ms, now, maxLeadMs) > MAX_DEBT_UNITS / limit) {
            return; // a debt beyond what one may owe under this limit already (charged under a smaller one)
        }
        long lead = ms < now ? 0 : (ms - now) * limit + remainder; // not capped as a decision's: the whole debt counts
        long after = Math.min(lead + chargeable(extra, windowMs) * windowMs, Math.max(lead, maxDebtUnits(limit)));
        s.tatMs = now + floorDiv(after, limit);
        s.tatRemainder = Math.floorMod(after, limit);
        s.limit = limit;
        s.stamp = Math.max(now, s.stamp);
        s.expiresAtMs = now + ceilDiv(after, limit) + EXPIRY_MARGIN_MS;
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long after = lead(storedMs(s.tatMs, s.tatRemainder, s.limit, limit), storedRemainder(s.tatRemainder, s.limit, limit), now,
                limit, maxLeadMs) + cost * windowMs;
        s.tatMs = now + floorDiv(after, limit);
        s.tatRemainder = Math.floorMod(after, limit);
        s.limit = limit;
        s.stamp = Math.max(now, s.stamp);
        s.expiresAtMs = now + ceilDiv(after, limit) + EXPIRY_MARGIN_MS;
    }
}
