package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;

/**
 * {@code fixed-window}: at most {@code limit} tokens per window, the windows aligned to the
 * epoch (multiples of {@code window} since 1970-01-01T00:00Z) so every instance agrees on them
 * without talking to the others.
 *
 * <p>A request of cost {@code c} is admitted when the window's count plus {@code c} is at most
 * {@code limit}; the count then grows by {@code c}. A denied request may retry at the start of
 * the next window ({@code retryAfterMs} = the time to the window's end), which is also when the
 * quota is full again ({@code resetMs}) and, once something was taken, when more quota comes
 * ({@code nextMs}: nothing comes back before the window ends).
 *
 * <p><b>Accuracy:</b> exact per aligned window; over an arbitrary interval of one window's
 * length, up to {@code 2 * limit} (a full window's quota at the end of one window and another at
 * the start of the next). <b>Bursts:</b> the whole quota at any moment.
 *
 * <p><b>State:</b> the window's start and its count, one Redis string of 17 bytes
 * (struct {@code '<Bdd'}: tag 1, window start ms, count; 104 bytes per key measured, see
 * docs/algorithms.md). Keeping the
 * window in the value, not the key name, gives one key per client and lets a caller whose clock
 * lags recognise a window that already started (it counts against that window rather than
 * opening an older one). <b>Expiry:</b> at the window's end plus the margin.
 */
public final class FixedWindow extends RateAlgorithm {

    static final class State extends KeyState {
        long windowStart = Long.MIN_VALUE;
        long count;
    }

    FixedWindow(Rule rule) {
        super(rule);
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
        State s = (State) state;
        long start = windowStart(s, now);
        long count = start == s.windowStart ? s.count : 0;
        long end = start + windowMs;
        long resetNow = count > 0 ? end - now : 0;
        if (cost > limit) {
            return impossible(limit - count, resetNow);
        }
        if (count + cost > limit) {
            return Verdict.deny(limit - count, resetNow, end - now);
        }
        return Verdict.admit(limit - count, resetNow, resetNow, limit - count - cost, end - now, end - now, 0);
    }

    @Override
    public void take(KeyState state, long now, long cost) {
        State s = (State) state;
        long start = windowStart(s, now);
        s.count = (start == s.windowStart ? s.count : 0) + cost;
        s.windowStart = start;
        s.expiresAtMs = start + windowMs + EXPIRY_MARGIN_MS;
    }

    /** The current window's start, or the stored window's if it started later (a lagging clock). */
    private long windowStart(State s, long now) {
        long current = floorDiv(now, windowMs) * windowMs;
        return Math.max(current, s.windowStart);
    }
}
