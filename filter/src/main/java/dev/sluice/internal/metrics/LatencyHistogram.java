package dev.sluice.internal.metrics;

import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;

/**
 * Decision latencies of a recent window, cheap to record from many threads: a fixed log-linear
 * histogram of {@link LongAdder}s over microseconds (exact below 32 µs, then 8 buckets per power of
 * two, so a reported percentile is at most 12.5% above the true value), plus count, sum and max.
 * Recording is a few arithmetic operations and three adder updates: no lock, no allocation.
 *
 * <p>The window moves with time, whether or not anybody reads: the figures cover the current
 * window and the one before it (between one and two {@code windowNanos}); windows older than that
 * are forgotten, so a quiet period shows no stale outage.
 */
final class LatencyHistogram {

    private static final int LINEAR = 32;              // 0..31 µs: one bucket per µs
    private static final int SUB_BITS = 3;             // 8 buckets per power of two above that
    private static final int MAX_EXPONENT = 40;        // ~12.7 days in µs; anything above goes to the last bucket
    static final int BUCKETS = LINEAR + (MAX_EXPONENT - 5 + 1) * (1 << SUB_BITS);

    /** One window's data. */
    private static final class Window {
        final LongAdder[] buckets = new LongAdder[BUCKETS];
        final LongAdder count = new LongAdder();
        final LongAdder sumNanos = new LongAdder();
        final LongAccumulator maxNanos = new LongAccumulator(Math::max, 0);

        Window() {
            for (int i = 0; i < BUCKETS; i++) buckets[i] = new LongAdder();
        }

        void reset() {
            for (LongAdder b : buckets) b.reset();
            count.reset();
            sumNanos.reset();
            maxNanos.reset();
        }
    }

    private final long windowNanos;
    private volatile Window current = new Window();
    private Window previous = new Window();   // guarded by this
    private volatile long rotateDueNanos;

    LatencyHistogram(long windowNanos) {
        this.windowNanos = windowNanos;
        this.rotateDueNanos = System.nanoTime() + windowNanos;
    }

    void record(long nanos) {
        if (nanos < 0) nanos = 0;
        long now = System.nanoTime();
        if (now - rotateDueNanos >= 0) rotate(now);
        Window w = current;
        w.buckets[bucket(nanos / 1000)].increment();
        w.count.increment();
        w.sumNanos.add(nanos);
        w.maxNanos.accumulate(nanos);
    }

    /** Starts a new window if one is due; forgets both if two or more have passed. */
    private synchronized void rotate(long now) {
        long late = now - rotateDueNanos;
        if (late < 0) return; // another thread rotated first
        Window old = previous;
        old.reset();
        previous = current;
        if (late >= windowNanos) previous.reset(); // the window before was idle: nothing recent in it
        current = old;
        rotateDueNanos = now + windowNanos;
    }

    /** A consistent-enough view of the current and the previous window. */
    synchronized Snapshot snapshot() {
        long now = System.nanoTime();
        if (now - rotateDueNanos >= 0) rotate(now);
        Window cur = current;
        long[] merged = new long[BUCKETS];
        long count = cur.count.sum() + previous.count.sum();
        long sum = cur.sumNanos.sum() + previous.sumNanos.sum();
        long max = Math.max(cur.maxNanos.get(), previous.maxNanos.get());
        for (int i = 0; i < BUCKETS; i++) {
            merged[i] = cur.buckets[i].sum() + previous.buckets[i].sum();
        }
        return new Snapshot(count, sum, max, merged);
    }

    static int bucket(long micros) {
        if (micros < LINEAR) return (int) micros;
        int exponent = 63 - Long.numberOfLeadingZeros(micros); // >= 5
        if (exponent > MAX_EXPONENT) return BUCKETS - 1;
        int sub = (int) (micros >>> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        return LINEAR + (exponent - 5) * (1 << SUB_BITS) + sub;
    }

    /** The largest value (µs) that falls into {@code bucket}: what a percentile in it reports. */
    static long upperBoundMicros(int bucket) {
        if (bucket < LINEAR) return bucket;
        int exponent = 5 + (bucket - LINEAR) / (1 << SUB_BITS);
        int sub = (bucket - LINEAR) % (1 << SUB_BITS);
        long width = 1L << (exponent - SUB_BITS);
        return (1L << exponent) + (sub + 1) * width - 1;
    }

    /** Count, mean, max and percentiles of one read. */
    record Snapshot(long count, long sumNanos, long maxNanos, long[] buckets) {

        double meanMillis() {
            return count == 0 ? 0 : sumNanos / (double) count / 1e6;
        }

        double maxMillis() {
            return maxNanos / 1e6;
        }

        /** The {@code q} quantile (0..1) in milliseconds, rounded up to its bucket's bound and capped at the max. */
        double percentileMillis(double q) {
            long total = 0;
            for (long b : buckets) total += b;
            if (total == 0) return 0;
            long rank = (long) Math.ceil(q * total);
            long seen = 0;
            for (int i = 0; i < buckets.length; i++) {
                seen += buckets[i];
                if (seen >= rank) {
                    return Math.min((upperBoundMicros(i) + 1) / 1e3, maxMillis());
                }
            }
            return maxMillis();
        }
    }
}
