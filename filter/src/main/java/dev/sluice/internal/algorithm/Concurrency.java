package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * {@code concurrency}: at most {@code limit} requests of one client in flight at once. Not a rate:
 * nothing comes back with time. A request takes a slot when it is admitted and frees it when it
 * completes (its give-back is the release); a request is admitted when fewer than {@code limit}
 * slots are held.
 *
 * <p><b>Leases.</b> A slot is a lease that ends {@code lease} ({@link Rule#lease()}, the rule's
 * {@code window}) after it was taken or last renewed; an ended lease is no longer held, whether or not
 * it was released. The instance holding a slot renews it while its request runs (every third of the
 * lease), so a slot outlives its request only when its instance stops answering for it (killed,
 * partitioned): by at most the lease. A renewal finds its slot only while its lease has not ended: a
 * lease that ended may have been counted free already, so it is not brought back.
 *
 * <p><b>Figures.</b> {@code remaining} is the slots still free ({@code limit} less those held, less
 * this request's when it takes one). When a slot frees depends on requests that have not finished,
 * so there is no reset or retry to compute: a denial's {@code retryAfterMs}, {@code resetMs} and
 * {@code nextMs} are a hint of one second ({@link #HINT_MS}); the headers show no {@code w} or
 * {@code t} for such a rule.
 *
 * <p><b>Accuracy:</b> exact while every instance renews its slots in time: never more than
 * {@code limit} requests of a client in flight, fleet-wide. <b>Cost:</b> one slot per request
 * ({@code cost} is 1).
 *
 * <p><b>State:</b> the slots held, each its take's token and the moment its lease ends; in Redis a
 * sorted set under the rule's key with {@code :slots} appended ({@code <prefix>{<rule>:<client>}:slots}),
 * member the token's 8 bytes, score the lease's end in ms: about 20 bytes per slot beyond the key's
 * 104 up to 128 slots (a listpack), more in a skiplist beyond (docs/algorithms.md). <b>Expiry:</b> when
 * the latest lease ends, plus the margin.
 *
 * <p><b>Changed figures</b> (a plan switch, a reload): the slots held count against the limit in force;
 * a changed lease applies to the slots of requests admitted from then on (a request renews its slot
 * with the lease it was admitted under).
 */
public final class Concurrency extends RateAlgorithm {

    /** The retry-after, reset and next of a concurrency rule: a hint, not a promise (see the class comment). */
    public static final long HINT_MS = 1000;

    static final class State extends KeyState {
        /** Token of the take holding the slot: the moment its lease ends. */
        final Map<Long, Long> leases = new HashMap<>(4);

        int held(long now) {
            int held = 0;
            for (long end : leases.values()) {
                if (end > now) held++;
            }
            return held;
        }

        void forgetEnded(long now) {
            for (Iterator<Long> it = leases.values().iterator(); it.hasNext(); ) {
                if (it.next() <= now) it.remove();
            }
        }

        void expireWithLatest() {
            long latest = Long.MIN_VALUE;
            for (long end : leases.values()) latest = Math.max(latest, end);
            expiresAtMs = latest == Long.MIN_VALUE ? Long.MIN_VALUE : latest + EXPIRY_MARGIN_MS;
        }
    }

    private final long leaseMs;

    Concurrency(Rule rule) {
        super(rule);
        this.leaseMs = rule.windowMillis();
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public KeyState newState() {
        return new State();
    }

    @Override
    public Verdict decide(KeyState state, long now, long cost) {
        long held = ((State) state).held(now);
        if (held + cost > limit) {
            return Verdict.deny(limit - held, HINT_MS, HINT_MS);
        }
        return Verdict.admit(limit - held, HINT_MS, HINT_MS, limit - held - cost, HINT_MS, HINT_MS, 0, now + leaseMs, 0, 0);
    }

    /** A slot is held under its take's token: {@link #take(KeyState, long, long, long)}. */
    @Override
    public void take(KeyState state, long now, long cost) {
        throw new UnsupportedOperationException("a concurrency slot is taken under its take's token");
    }

    @Override
    public void take(KeyState state, long now, long cost, long token) {
        State s = (State) state;
        s.forgetEnded(now);
        s.leases.put(token, now + leaseMs);
        s.expireWithLatest();
    }


    /** The release: the slot of {@code take} is no longer held (at once, whatever its lease). */
    @Override
    public void giveBack(KeyState state, long now, long cost, RuleDecision.Take take) {
        ((State) state).leases.remove(take.token());
    }

    /**
     * Renews the slot of {@code take} for another lease from {@code now}, if its lease has not ended.
     *
     * @return whether the slot was still held (and is renewed)
     */
    @Override
    public boolean renew(KeyState state, long now, RuleDecision.Take take) {
        State s = (State) state;
        Long end = s.leases.get(take.token());
        if (end == null || end <= now) return false;
        s.leases.put(take.token(), Math.max(end, now + leaseMs));
        s.expireWithLatest();
        return true;
    }
}
