package dev.sluice.internal.algorithm.model;

/** Counts per epoch-aligned window; a later window already started is never replaced by an earlier one. */
final class FixedWindowModel implements Model {

    private final long limit;
    private final long window;
    private long latestWindow = Long.MIN_VALUE;
    private long count;

    FixedWindowModel(long limit, long window) {
        this.limit = limit;
        this.window = window;
    }

    private long windowAt(long now) {
        return Math.max(Math.floorDiv(now, window) * window, latestWindow);
    }

    private long countAt(long now) {
        return windowAt(now) == latestWindow ? count : 0;
    }

    @Override
    public boolean admits(long now, long cost) {
        return countAt(now) + cost <= limit;
    }

    @Override
    public void take(long now, long cost) {
        count = countAt(now) + cost;
        latestWindow = windowAt(now);
    }

    @Override
    public boolean fresh(long now) {
        return countAt(now) == 0;
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public Model copy() {
        FixedWindowModel m = new FixedWindowModel(limit, window);
        m.latestWindow = latestWindow;
        m.count = count;
        return m;
    }
}
