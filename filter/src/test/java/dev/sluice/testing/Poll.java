package dev.sluice.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Waits for a condition of something the test does not control (a process, a replication link, a
 * circuit breaker driven by real time) by polling with a deadline, instead of sleeping a fixed time
 * and hoping. Fails with what was awaited.
 */
public final class Poll {

    private static final long INTERVAL_MILLIS = 10;

    private Poll() {
    }

    /** Polls every 10 ms until {@code condition} holds; AssertionError after {@code timeout}. */
    public static void until(Duration timeout, String what, BooleanSupplier condition) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what);
            }
            try {
                Thread.sleep(INTERVAL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what, e);
            }
        }
    }

    /** Like {@link #until} but returns how long the condition took to hold, in milliseconds. */
    public static long millisUntil(Duration timeout, String what, BooleanSupplier condition) {
        long start = System.nanoTime();
        until(timeout, what, condition);
        return (System.nanoTime() - start) / 1_000_000;
    }
}
