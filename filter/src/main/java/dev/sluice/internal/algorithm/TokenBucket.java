package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.math.BigInteger;

/**
 * {@code token-bucket}: a bucket of {@code burst} tokens (default {@code limit}) that refills
 * continuously at {@code limit} tokens per {@code window}. A request of cost {@code c} is
 * admitted when the bucket holds at least {@code c} tokens, and takes them.
 *
 * <p>Tokens are kept exactly, as integers scaled by the window: {@code tokens * windowMs} units,
 * refilled by {@code elapsedMs * limit} units, so no rounding accumulates and the Lua script
 * computes the same numbers. {@code remaining} is the whole tokens left; a denied request's
 * {@code retryAfterMs} is the time until {@code c} tokens have refilled (rounded up to the next
 * millisecond); {@code resetMs} is the time until the bucket is full; {@code nextMs} (allowed) is the
 * time until it holds one more whole token, 0 when it is full.
 *
 * <p><b>Accuracy:</b> exact: over any interval of length {@code t}, at most
 * {@code burst + limit * t / window} tokens are admitted. <b>Bursts:</b> up to {@code burst} at
 * once after an idle period. Equivalent to {@link Gcra}, which keeps one number instead of two.
 *
 * <p><b>State:</b> the scaled tokens, the time they were counted, the window that scales them and
 * what was given back so far (whole tokens, rounded up per refund, modulo 2^52), one Redis string of 28 bytes (struct
 * {@code '<Bi7I6I7I7'}: tag 4, tokens x windowMs (negative: a debt, see {@link #charge}), ms, windowMs, tokens
 * given back). The
 * stored time never moves backwards: a caller whose clock lags refills nothing rather than rewinding
 * it. <b>Expiry:</b> when the bucket would be full again plus the margin.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the bucket keeps the tokens it has, capped at
 * the new burst, and refills at the new rate from the time they were counted. Tokens counted in
 * another window's units are rescaled exactly, rounded down to a unit of the new window
 * (1/windowMs of a token), never in the client's favour.
 *
 * <p><b>Giving back</b> ({@code rule.<r>.count}): the bucket regains the cost, less what would have
 * been lost to the bucket being full had the request never been made: at most what refills between
 * now and the moment the bucket the request left would have been full.
 */
public final class TokenBucket extends RateAlgorithm {

    static final class State extends KeyState {
        /** Whether anything was written: a state never seen holds a full bucket. */
        boolean seen;
        /** Tokens times {@link #windowMs}; negative: a debt (a charge past empty, {@link #charge}). */
        long scaledTokens;
        long stamp;
        /** The window the tokens are scaled by: the rule's when they were counted. */
        long windowMs;
        /** Everything given back so far, modulo {@link RateAlgorithm#REFUNDS_MODULUS}. */
        long refunded;
    }

    private final long capacityUnits;

    TokenBucket(Rule rule) {
        super(rule);
        this.capacityUnits = burst * windowMs;
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
        long at = stamp(s, now);
        long tokens = tokens(s, at);
        long skew = at - now;
        long remainingNow = floorDiv(tokens, windowMs);
        long resetNow = tokens < capacityUnits ? skew + ceilDiv(capacityUnits - tokens, limit) : 0;
        long nextNow = next(tokens, skew);
        if (cost > burst) {
            return impossible(remainingNow, resetNow);
        }
        long need = cost * windowMs;
        if (tokens < need) {
            return Verdict.deny(remainingNow, resetNow, skew + ceilDiv(need - tokens, limit));
        }
        long left = tokens - need;
        long debt = capacityUnits - left; // the bucket would be full again debt / limit ms after `at`
        return Verdict.admit(remainingNow, resetNow, nextNow, floorDiv(left, windowMs), skew + ceilDiv(debt, limit),
                next(left, skew), 0, at + floorDiv(debt, limit), Math.floorMod(debt, limit), s.refunded);
    }

    /** The time until {@code tokens} have refilled to one more whole token; 0 for a full bucket. */
    private long next(long tokens, long skew) {
        if (tokens >= capacityUnits) {
            return 0;
        }
        // a bucket in debt (negative tokens) grows its remaining from 0 to 1
        return skew + ceilDiv((Math.max(0, floorDiv(tokens, windowMs)) + 1) * windowMs - tokens, limit);
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long at = stamp(s, now);
        store(s, at, tokens(s, at) - cost * windowMs);
    }

    /**
     * Takes {@code extra} tokens, past empty if need be: the bucket then holds a debt (negative tokens, at most
     * {@link #maxDebtUnits}), which the refill repays before it admits anything again.
     */
    @Override
    public void charge(KeyState state, long now, long extra) {
        State s = (State) state;
        long at = stamp(s, now);
        store(s, at, Math.max(tokens(s, at) - chargeable(extra, windowMs) * windowMs, -maxDebtUnits(limit)));
    }

    /** The bucket holds {@code left} scaled tokens at {@code at}, and expires when full again, plus the margin. */
    private void store(State s, long at, long left) {
        s.seen = true;
        s.scaledTokens = left;
        s.stamp = at;
        s.windowMs = windowMs;
        s.expiresAtMs = at + ceilDiv(capacityUnits - left, limit) + EXPIRY_MARGIN_MS;
    }

    /**
     * Refunds what the bucket can regain without being better than if the request had never
     * happened. If nothing was taken or given back since the request (the bucket would still be
     * full at the moment its take left, and the refund counter has not moved), the request is
     * undone: the cost comes back exactly. Otherwise at most the cost, and at most what refills
     * between now and the moment the bucket the request left would have been full, less what was
     * given back since it was taken ({@link #refundBound}): the bucket without the request would
     * have stopped refilling (full) that much earlier. Whatever was taken since only delays that
     * moment, so the bound holds under concurrency (docs/algorithms.md). Now is never before the
     * stored time; tokens of another window's units: nothing is given back.
     */
    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        State s = (State) state;
        if (!s.seen || s.windowMs != windowMs) {
            return;
        }
        long debt = capacityUnits - s.scaledTokens;
        long refund;
        if (s.refunded == take.givenBack() && s.stamp + floorDiv(debt, limit) == take.ms()
                && Math.floorMod(debt, limit) == take.fraction()) {
            refund = cost * windowMs; // untouched since the take: undone
        } else {
            long bound = refundBound(take, s.refunded, Math.max(now, s.stamp), limit, windowMs);
            if (bound <= 0) return;
            refund = Math.min(cost * windowMs, bound);
            s.refunded = addRefund(s.refunded, refund, windowMs);
        }
        s.scaledTokens += refund;
    }

    private static long stamp(State s, long now) {
        return !s.seen ? now : Math.max(now, s.stamp);
    }

    /** The scaled tokens at {@code at}: the stored ones plus the refill since, capped at the capacity. */
    private long tokens(State s, long at) {
        if (!s.seen) {
            return capacityUnits;
        }
        long stored = Math.min(s.windowMs == windowMs ? s.scaledTokens : rescaled(s.scaledTokens, s.windowMs), capacityUnits);
        long elapsed = at - s.stamp;
        // compare before multiplying: elapsed * limit could leave the exact range after a long idle
        return elapsed >= ceilDiv(capacityUnits - stored, limit) ? capacityUnits : stored + elapsed * limit;
    }

    /**
     * {@code units} tokens scaled by {@code fromWindowMs}, in this rule's units: exactly
     * {@code floor(units * windowMs / fromWindowMs)}, at most the capacity, a debt at most {@link #MAX_DEBT_UNITS} (every value below 2^53,
     * as the script computes it).
     */
    private long rescaled(long units, long fromWindowMs) {
        long whole = floorDiv(units, fromWindowMs);
        if (whole >= burst) {
            return capacityUnits;
        }
        if (whole < -(MAX_DEBT_UNITS / windowMs) - 1) {
            return -MAX_DEBT_UNITS; // a debt read in a much longer window: kept within the exact range
        }
        long fraction = BigInteger.valueOf(units - whole * fromWindowMs).multiply(BigInteger.valueOf(windowMs))
                .divide(BigInteger.valueOf(fromWindowMs)).longValueExact();
        return Math.max(whole * windowMs + fraction, -MAX_DEBT_UNITS);
    }
}
