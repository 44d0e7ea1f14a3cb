package dev.sluice.internal.algorithm.model;

import java.util.TreeMap;

/** Counts of every aligned window ever; estimate = previous x uncovered share + current, exactly. */
final class SlidingWindowCounterModel implements Model {

    private final long limit;
    private final long window;
    private final TreeMap<Long, Long> counts = new TreeMap<>();

    SlidingWindowCounterModel(long limit, long window) {
        this.limit = limit;
        this.window = window;
    }

    private long windowAt(long now) {
        long aligned = Math.floorDiv(now, window) * window;
        return counts.isEmpty() ? aligned : Math.max(aligned, counts.lastKey());
    }

    private Ratio estimate(long now) {
        long start = windowAt(now);
        long elapsed = Math.max(now, start) - start;
        Ratio previous = Ratio.of(counts.getOrDefault(start - window, 0L) * (window - elapsed), window);
        return previous.plus(Ratio.of(counts.getOrDefault(start, 0L)));
    }

    @Override
    public boolean admits(long now, long cost) {
        return estimate(now).plus(Ratio.of(cost)).compareTo(Ratio.of(limit)) <= 0;
    }

    @Override
    public void take(long now, long cost) {
        counts.merge(windowAt(now), cost, Long::sum);
    }

    @Override
    public boolean fresh(long now) {
        return estimate(now).compareTo(Ratio.ZERO) == 0;
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public Model copy() {
        SlidingWindowCounterModel m = new SlidingWindowCounterModel(limit, window);
        m.counts.putAll(counts);
        return m;
    }
}
