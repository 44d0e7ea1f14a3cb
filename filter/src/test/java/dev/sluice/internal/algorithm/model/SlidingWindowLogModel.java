package dev.sluice.internal.algorithm.model;

import java.util.ArrayList;
import java.util.List;

/** Every admitted token logged with its time (as runs of tokens at one time), never trimmed; logged at max(now, newest). */
final class SlidingWindowLogModel implements Model {

    private final long limit;
    private final long window;
    /** {time, tokens} in the order logged. */
    private final List<long[]> log = new ArrayList<>();

    SlidingWindowLogModel(long limit, long window) {
        this.limit = limit;
        this.window = window;
    }

    private long at(long now) {
        return log.isEmpty() ? now : Math.max(now, log.get(log.size() - 1)[0]);
    }

    private long inWindow(long now) {
        long at = at(now);
        return log.stream().filter(run -> run[0] > at - window).mapToLong(run -> run[1]).sum();
    }

    @Override
    public boolean admits(long now, long cost) {
        return inWindow(now) + cost <= limit;
    }

    @Override
    public void take(long now, long cost) {
        log.add(new long[]{at(now), cost});
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
