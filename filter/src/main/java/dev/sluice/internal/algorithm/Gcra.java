package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;

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
 * period. <b>State:</b> one value, the TAT: a Redis string of 17 bytes (struct {@code '<Bdd'}:
 * tag 6, ms, remainder).
 * <b>Expiry:</b> at the TAT (the bucket is full again) plus the margin. A caller whose clock lags
 * sees the TAT further ahead, so it is stricter, never looser; when it lags by more than a window
 * beyond the largest possible lead, its retry-after is understated (it is denied either way).
 */
public final class Gcra extends RateAlgorithm {

    static final class State extends KeyState {
        long tatMs = Long.MIN_VALUE;
        long tatRemainder;
    }

    private final long capacityUnits;
    private final long maxLeadMs;

    Gcra(Rule rule) {
        super(rule);
        this.capacityUnits = burst * windowMs;
        this.maxLeadMs = maxLeadMs(capacityUnits, limit, windowMs);
    }

    /** The largest lead of a stored time that is used as is: beyond, the caller's clock is off and any bigger value denies alike. */
    static long maxLeadMs(long capacityUnits, long limit, long windowMs) {
        return ceilDiv(capacityUnits, limit) + windowMs;
    }

    /** How far {@code (ms, remainder)} is ahead of {@code now}, in ms-times-limit units; 0 if it has passed. */
    static long lead(long ms, long remainder, long now, long limit, long maxLeadMs) {
        if (ms < now) {
            return 0; // remainder < limit, so the stored time is before now
        }
        return Math.min(ms - now, maxLeadMs) * limit + remainder;
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
        long lead = lead(s.tatMs, s.tatRemainder, now, limit, maxLeadMs);
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
                next(after), 0);
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
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long after = lead(s.tatMs, s.tatRemainder, now, limit, maxLeadMs) + cost * windowMs;
        s.tatMs = now + floorDiv(after, limit);
        s.tatRemainder = Math.floorMod(after, limit);
        s.expiresAtMs = now + ceilDiv(after, limit) + EXPIRY_MARGIN_MS;
    }
}
