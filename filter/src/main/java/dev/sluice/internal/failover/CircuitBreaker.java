package dev.sluice.internal.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Clock;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stops calling a Redis target that keeps failing, so that a dead or stuck Redis costs requests
 * nothing instead of one timeout each.
 *
 * <ul>
 *   <li><b>CLOSED</b> (normal): every call goes to Redis. {@code failureThreshold} consecutive
 *       failures open the breaker; any success resets the count.</li>
 *   <li><b>OPEN</b>: no call goes to Redis; callers apply the failure policy at once. After
 *       {@code openBase} the next caller becomes the probe.</li>
 *   <li><b>HALF_OPEN</b>: exactly one probe is calling Redis; everyone else keeps applying the
 *       failure policy (nobody waits for the probe). The probe's success closes the breaker; its
 *       failure opens it again for twice the previous interval, up to {@code openMax}. A probe that
 *       has not reported after one interval (a slow call) is replaced by the next caller; from
 *       then on only the replacement's failure counts, while any probe's success closes the
 *       breaker.</li>
 * </ul>
 *
 * <p>The closed-state path is one volatile read to ask and, after a success, one plain atomic read
 * ({@code failures} is only written when it is not already 0): no lock and no allocation. State
 * changes, which are rare, take this object's monitor and tell the {@link Listener}.
 *
 * <p>The clock only needs to be monotonic; its epoch does not matter.
 */
public final class CircuitBreaker {

    /** The breaker's states, as shown by the metrics. */
    public enum State { CLOSED, OPEN, HALF_OPEN }

    /** What a caller may do, and for a probe, which probe it is. */
    public static final class Permit {
        /** The kinds of permit. */
        public enum Kind {
            /** Call Redis (breaker closed). */
            CALL,
            /** Call Redis as the half-open probe, and report the outcome with this permit. */
            PROBE,
            /** Do not call Redis: apply the failure policy. */
            REJECTED
        }

        /** Call Redis (breaker closed); one shared instance, so the closed path allocates nothing. */
        public static final Permit CALL = new Permit(Kind.CALL, 0);
        /** Do not call Redis. */
        public static final Permit REJECTED = new Permit(Kind.REJECTED, 0);

        private final Kind kind;
        /** A probe's number: only the current probe's failure counts (a stale one's says nothing new). */
        private final long probe;

        private Permit(Kind kind, long probe) {
            this.kind = kind;
            this.probe = probe;
        }

        public Kind kind() {
            return kind;
        }

        @Override
        public String toString() {
            return kind == Kind.PROBE ? "PROBE#" + probe : kind.name();
        }
    }

    /** Told about every state change, in order, under the breaker's lock: keep it short (a log line, a counter). */
    @FunctionalInterface
    public interface Listener {
        void stateChanged(State from, State to, long openForMillis);

        Listener NONE = (from, to, openFor) -> { };
    }

    /** A monotonic millisecond clock for production use. */
    public static final Clock MONOTONIC = () -> System.nanoTime() / 1_000_000L;

    private final int failureThreshold;
    private final long openBaseMillis;
    private final long openMaxMillis;
    private final Clock clock;
    private final Listener listener;

    private volatile State state = State.CLOSED;
    private final AtomicInteger failures = new AtomicInteger();
    /** OPEN: when the next probe may start; HALF_OPEN: when a silent probe is given up. */
    private final AtomicLong probeAt = new AtomicLong();
    /** The current open interval; guarded by {@code this}. */
    private long intervalMillis;
    /** The number of the last probe handed out; guarded by {@code this}. */
    private long probes;

    public CircuitBreaker(SluiceConfig.BreakerSettings settings, Clock clock, Listener listener) {
        if (settings.failureThreshold() < 1) {
            throw new IllegalArgumentException("failureThreshold must be at least 1: " + settings.failureThreshold());
        }
        this.failureThreshold = settings.failureThreshold();
        this.openBaseMillis = Math.max(1, settings.openBase().toMillis());
        this.openMaxMillis = Math.max(openBaseMillis, settings.openMax().toMillis());
        this.clock = clock;
        this.listener = listener;
        this.intervalMillis = openBaseMillis;
    }

    /** Whether the caller may call Redis now. A caller given CALL or a PROBE must report the outcome. */
    public Permit acquire() {
        if (state == State.CLOSED) {
            return Permit.CALL;
        }
        long at = probeAt.get();
        long now = clock.millis();
        if (now < at) {
            return Permit.REJECTED;
        }
        Permit probe;
        synchronized (this) {
            if (state == State.CLOSED) return Permit.CALL;
            if (probeAt.get() != at) return Permit.REJECTED; // another caller became the probe
            State from = state;
            probeAt.set(now + intervalMillis);
            state = State.HALF_OPEN;
            probe = new Permit(Permit.Kind.PROBE, ++probes);
            if (from != State.HALF_OPEN) listener.stateChanged(from, State.HALF_OPEN, intervalMillis);
        }
        return probe;
    }

    /**
     * Redis answered the call made under {@code permit}. Any probe's answer closes the breaker, even a
     * probe that was replaced for being slow (Redis answered it within the timeout all the same).
     */
    public void onSuccess(Permit permit) {
        if (permit.kind == Permit.Kind.PROBE) {
            synchronized (this) {
                if (state == State.CLOSED) return; // another probe already closed it
                State from = state;
                failures.set(0);
                intervalMillis = openBaseMillis;
                state = State.CLOSED;
                listener.stateChanged(from, State.CLOSED, 0);
            }
        } else if (failures.get() != 0) {
            failures.set(0);
        }
        // A CALL that started before the breaker opened and answered afterwards does not close it:
        // the next probe will, within one interval.
    }

    /**
     * Redis failed the call made under {@code permit} (error, timeout, no pooled connection). Only the
     * current probe's failure reopens the breaker: a probe that was replaced after one interval and
     * fails late must not reopen it over its replacement, whose answer is still to come.
     */
    public void onFailure(Permit permit) {
        if (permit.kind == Permit.Kind.PROBE) {
            synchronized (this) {
                if (state != State.HALF_OPEN || permit.probe != probes) return;
                intervalMillis = Math.min(openMaxMillis, intervalMillis * 2);
                probeAt.set(clock.millis() + intervalMillis);
                state = State.OPEN;
                listener.stateChanged(State.HALF_OPEN, State.OPEN, intervalMillis);
            }
            return;
        }
        if (permit.kind != Permit.Kind.CALL || state != State.CLOSED) {
            return; // in flight when the breaker opened: already counted
        }
        if (failures.incrementAndGet() >= failureThreshold) {
            synchronized (this) {
                if (state != State.CLOSED || failures.get() < failureThreshold) return;
                intervalMillis = openBaseMillis;
                probeAt.set(clock.millis() + openBaseMillis);
                state = State.OPEN;
                listener.stateChanged(State.CLOSED, State.OPEN, openBaseMillis);
            }
        }
    }

    /**
     * A permit handed out and not used: the caller did not call Redis after all (a request refused for
     * another node's closed rule). A probe's turn passes to the next caller at once, rather than after
     * the interval a silent probe is given up after.
     */
    public void release(Permit permit) {
        if (permit.kind != Permit.Kind.PROBE) return;
        synchronized (this) {
            if (state == State.HALF_OPEN && permit.probe == probes) probeAt.set(clock.millis());
        }
    }

    public State state() {
        return state;
    }

    /** Milliseconds until a probe may call Redis again: 0 when closed or when a probe is due. */
    public long millisUntilProbe() {
        if (state == State.CLOSED) return 0;
        return Math.max(0, probeAt.get() - clock.millis());
    }

    @Override
    public String toString() {
        return "CircuitBreaker{" + state + ", failures=" + failures.get() + ", untilProbe=" + millisUntilProbe() + "ms}";
    }
}
