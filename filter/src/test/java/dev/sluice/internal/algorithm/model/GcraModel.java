package dev.sluice.internal.algorithm.model;

/** The theoretical arrival time as an exact fraction; admitted if pushing it stays within burst intervals of now. */
final class GcraModel implements Model {

    private final long limit;
    private final long window;
    private final long burst;
    private final Ratio interval;
    private Ratio tat; // null: never seen

    GcraModel(long limit, long window, long burst) {
        this.limit = limit;
        this.window = window;
        this.burst = burst;
        this.interval = Ratio.of(window, limit);
    }

    private Ratio base(long now) {
        return tat == null ? Ratio.of(now) : tat.max(Ratio.of(now));
    }

    @Override
    public boolean admits(long now, long cost) {
        Ratio pushed = base(now).plus(interval.times(cost));
        return pushed.minus(Ratio.of(now)).compareTo(interval.times(burst)) <= 0;
    }

    @Override
    public void take(long now, long cost) {
        tat = base(now).plus(interval.times(cost));
    }

    @Override
    public boolean fresh(long now) {
        return tat == null || tat.compareTo(Ratio.of(now)) <= 0;
    }

    @Override
    public long capacity() {
        return burst;
    }

    @Override
    public Model copy() {
        GcraModel m = new GcraModel(limit, window, burst);
        m.tat = tat;
        return m;
    }
}
