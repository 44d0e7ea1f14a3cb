package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.time.Duration;

/**
 * {@code leaky-bucket}: shapes traffic to a steady {@code limit} per {@code window}, one drain
 * slot every {@code window / limit}, with no bursts. The state is the time of the next free slot.
 *
 * <ul>
 *   <li>A request that arrives at or after the next free slot passes at once ({@code delayMs} 0).</li>
 *   <li>Otherwise it must wait for its slot. With {@code maxDelay} 0 it is rejected; with
 *       {@code maxDelay} &gt; 0 it is admitted with {@code delayMs} = the time to its slot if that
 *       is at most {@code maxDelay}, else rejected. The caller holds an admitted request for
 *       {@code delayMs} before letting it through, which is what smooths the output.</li>
 *   <li>{@code burst} caps the queue: including its own, a request may find at most {@code burst}
 *       slots' worth of requests admitted and not yet drained ({@code queue + cost <= burst},
 *       measured in slots, fractional).</li>
 *   <li>A request of cost {@code c} occupies {@code c} consecutive slots.</li>
 * </ul>
 * {@code remaining} is how many more cost-1 requests would be admitted right now (some of them
 * delayed); {@code retryAfterMs} is the time until a request of the same cost would be admitted
 * (with its own delay, if any); {@code resetMs} is the time until the queue is empty; {@code nextMs}
 * (allowed) is the time until the queue has drained enough for {@code remaining} to grow, 0 when
 * draining cannot raise it (an empty queue, or {@code maxDelay} shorter than a slot bounds it).
 *
 * <p>With a large {@code maxDelay}, admissions are those of {@link Gcra} with the same burst,
 * but the requests are released one slot apart instead of at once.
 *
 * <p><b>Accuracy:</b> exact: requests are released at most one per slot. <b>Bursts:</b> none at
 * the output; up to {@code burst} slots may be queued. <b>State:</b> one value, the next free slot
 * as whole milliseconds plus a remainder in {@code [0, limit)}, with the limit it is counted in and,
 * for giving back, the latest time a request took at and what was given back so far: a Redis string
 * of 27 bytes (struct {@code '<BdI7I4I7'}: tag 5, the latest time, how far the slot is ahead of it in
 * ms x limit, limit, given back modulo 2^52). <b>Expiry:</b> when the queue has drained, plus the margin.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the next free slot stays where it is (the
 * requests already admitted keep their slots), and the new slot length, burst and max delay apply
 * from it. A remainder counted in another limit's units is rounded up to the next whole
 * millisecond (never in the client's favour).
 *
 * <p><b>Giving back</b> (not offered with {@code rule.<r>.count}: a held request was already
 * smoothed; used on Redis Cluster, when a later rule of the request denies it): as {@link Gcra}, the
 * next free slot moves back by the cost's slots, at most by how far the slot the request left is
 * still ahead.
 */
public final class LeakyBucket extends RateAlgorithm {

    static final class State extends KeyState {
        long nextMs = Long.MIN_VALUE;
        /** In units of 1/{@link #limit} ms. */
        long nextRemainder;
        /** The limit the remainder is counted in: the rule's when the slot was written. */
        long limit;
        /** The latest time a request took at. */
        long stamp;
        /** Everything given back so far, in whole ms (rounded up per refund), modulo {@link RateAlgorithm#REFUNDS_MODULUS}. */
        long refunded;
    }

    private final long capacityUnits;
    private final long maxLeadMs;
    private final long maxDelayUnits;

    LeakyBucket(Rule rule) {
        super(rule);
        this.capacityUnits = burst * windowMs;
        this.maxLeadMs = Gcra.maxLeadMs(capacityUnits, limit, windowMs);
        this.maxDelayUnits = effectiveMaxDelayMs(rule.maxDelay(), capacityUnits, limit) * limit;
    }

    /** {@code maxDelay} in ms, capped where the burst binds anyway (keeps the arithmetic exact). */
    static long effectiveMaxDelayMs(Duration maxDelay, long capacityUnits, long limit) {
        return Math.min(maxDelay.toMillis(), ceilDiv(capacityUnits, limit));
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
        long ms = Gcra.storedMs(s.nextMs, s.nextRemainder, s.limit, limit);
        long remainder = Gcra.storedRemainder(s.nextRemainder, s.limit, limit);
        long far = Gcra.farLeadMs(ms, now, maxLeadMs);
        if (far >= 0) {
            // denied (the queue is beyond the burst); its figures worked out in ms, exactly
            long resetNow = far + (remainder > 0 ? 1 : 0);
            if (cost > burst) {
                return impossible(-1, resetNow);
            }
            long retry = far + Math.max(ceilDiv(remainder + cost * windowMs - capacityUnits, limit),
                    ceilDiv(remainder - maxDelayUnits, limit));
            return Verdict.deny(-1, resetNow, retry);
        }
        long queued = Gcra.lead(ms, remainder, now, limit, maxLeadMs);
        long remainingNow = remaining(queued);
        long resetNow = ceilDiv(queued, limit);
        long nextNow = next(queued);
        if (cost > burst) {
            return impossible(remainingNow, resetNow);
        }
        long after = queued + cost * windowMs;
        if (queued > maxDelayUnits || after > capacityUnits) {
            long retry = Math.max(0, Math.max(ceilDiv(after - capacityUnits, limit), ceilDiv(queued - maxDelayUnits, limit)));
            return Verdict.deny(remainingNow, resetNow, retry);
        }
        return Verdict.admit(remainingNow, resetNow, nextNow, remaining(after), ceilDiv(after, limit), next(after),
                ceilDiv(queued, limit), now + floorDiv(after, limit), Math.floorMod(after, limit), s.refunded);
    }

    /**
     * The time until {@link #remaining} grows as the queue drains: one more cost-1 request fits
     * once the queue is at most {@code (r + 1)} slots below the burst and at most {@code r} slots
     * below the longest delay. 0 when no drain can make room for more (remaining is as high as it gets).
     */
    private long next(long queued) {
        long r = Math.max(0, remaining(queued));
        long room = Math.min(capacityUnits - (r + 1) * windowMs, maxDelayUnits - r * windowMs);
        return room < 0 ? 0 : ceilDiv(queued - room, limit);
    }

    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        State s = (State) state;
        if (s.limit == limit) {
            long[] slot = Gcra.givenBack(s.nextMs, s.nextRemainder, s.stamp, s.refunded, now, cost, take, limit, windowMs);
            s.nextMs = slot[0];
            s.nextRemainder = slot[1];
            s.refunded = slot[2];
        }
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long after = Gcra.lead(Gcra.storedMs(s.nextMs, s.nextRemainder, s.limit, limit),
                Gcra.storedRemainder(s.nextRemainder, s.limit, limit), now, limit, maxLeadMs) + cost * windowMs;
        s.nextMs = now + floorDiv(after, limit);
        s.nextRemainder = Math.floorMod(after, limit);
        s.limit = limit;
        s.stamp = Math.max(now, s.stamp);
        s.expiresAtMs = now + ceilDiv(after, limit) + EXPIRY_MARGIN_MS;
    }

    /** How many cost-1 requests would be admitted one after another with {@code queued} units ahead. */
    private long remaining(long queued) {
        long byBurst = floorDiv(capacityUnits - queued, windowMs);
        long byDelay = queued <= maxDelayUnits ? floorDiv(maxDelayUnits - queued, windowMs) + 1 : 0;
        return Math.min(byBurst, byDelay);
    }
}
