package dev.sluice.testing;

import dev.sluice.limiter.Clock;

import java.util.concurrent.atomic.AtomicLong;

/** A clock that moves only when the test says so. */
public final class ManualClock implements Clock {

    /** 2023-11-14T22:14:00Z: a round minute, hour-unaligned, far from 0 like a real clock. */
    public static final long MINUTE_BOUNDARY = 1_700_000_040_000L;

    private final AtomicLong now;

    public ManualClock(long startMillis) {
        this.now = new AtomicLong(startMillis);
    }

    @Override
    public long millis() {
        return now.get();
    }

    public void advance(long ms) {
        now.addAndGet(ms);
    }

    public void set(long millis) {
        now.set(millis);
    }
}
