package dev.sluice.internal.algorithm.model;

import java.util.ArrayList;
import java.util.List;

/** One logged time per admitted token, never trimmed; logged at max(now, newest). */
final class SlidingWindowLogModel implements Model {

    private final long limit;
    private final long window;
    private final List<Long> log = new ArrayList<>();

    SlidingWindowLogModel(long limit, long window) {
        this.limit = limit;
        this.window = window;
    }

    private long at(long now) {
        return log.isEmpty() ? now : Math.max(now, log.get(log.size() - 1));
    }

    private long inWindow(long now) {
        long at = at(now);
        return log.stream().filter(t -> t > at - window).count();
    }

    @Override
    public boolean admits(long now, long cost) {
        return inWindow(now) + cost <= limit;
    }

    @Override
    public void take(long now, long cost) {
        long at = at(now);
        for (long i = 0; i < cost; i++) log.add(at);
    }

    @Override
    public boolean fresh(long now) {
        return inWindow(now) == 0;
    }

    @Override
    public long capacity() {
        return limit;
    }

    @Override
    public Model copy() {
        SlidingWindowLogModel m = new SlidingWindowLogModel(limit, window);
        m.log.addAll(log);
        return m;
    }
}
