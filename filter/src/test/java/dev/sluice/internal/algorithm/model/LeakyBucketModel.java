package dev.sluice.internal.algorithm.model;

/**
 * The next free drain slot as an exact fraction. A request waits for max(slot, now); admitted
 * if that wait, rounded up to a whole ms, is at most maxDelay and the queue including it holds
 * at most burst slots.
 */
final class LeakyBucketModel implements Model {

    private final long limit;
    private final long window;
    private final long burst;
    private final long maxDelay;
    private final Ratio slot;
    private Ratio next; // null: never seen

    LeakyBucketModel(long limit, long window, long burst, long maxDelay) {
        this.limit = limit;
        this.window = window;
        this.burst = burst;
        this.maxDelay = maxDelay;
        this.slot = Ratio.of(window, limit);
    }

    private Ratio queued(long now) {
        return next == null ? Ratio.ZERO : next.minus(Ratio.of(now)).max(Ratio.ZERO);
    }

    @Override
    public boolean admits(long now, long cost) {
        Ratio q = queued(now);
        return q.ceil() <= maxDelay && q.plus(slot.times(cost)).compareTo(slot.times(burst)) <= 0;
    }

    @Override
    public void take(long now, long cost) {
        next = Ratio.of(now).plus(queued(now)).plus(slot.times(cost));
    }

    @Override
    public long delayMs(long now) {
        return queued(now).ceil();
    }

    @Override
    public boolean fresh(long now) {
        return queued(now).compareTo(Ratio.ZERO) == 0;
    }

    @Override
    public long capacity() {
        return burst;
    }

    @Override
    public Model copy() {
        LeakyBucketModel m = new LeakyBucketModel(limit, window, burst, maxDelay);
        m.next = next;
        return m;
    }
}
