package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

import java.util.ArrayList;
import java.util.List;

/**
 * Every admitted token logged with its time (as runs of tokens at one time), logged at
 * max(now, newest); an admission forgets the entries that have left the rule's current window.
 */
final class SlidingWindowLogModel extends Model {

    /** {time, tokens} in the order logged. */
    private final List<long[]> log = new ArrayList<>();

    private long at(long now) {
        return log.isEmpty() ? now : Math.max(now, log.get(log.size() - 1)[0]);
    }

    private long inWindow(Rule r, long now) {
        long at = at(now);
        return log.stream().filter(run -> run[0] > at - r.windowMillis()).mapToLong(run -> run[1]).sum();
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        return inWindow(r, now) + cost <= r.limit();
    }

    @Override
    Object take(Rule r, long now, long cost) {
        long at = at(now);
        log.removeIf(run -> run[0] <= at - r.windowMillis());
        log.add(new long[]{at, cost});
        return at;
    }

    /** Removes {@code cost} of the tokens logged at the request's time, as many as are left. */
    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        long at = (long) taken;
        long left = cost;
        for (int i = log.size() - 1; i >= 0 && left > 0; i--) {
            long[] run = log.get(i);
            if (run[0] != at) continue;
            long removed = Math.min(left, run[1]);
            run[1] -= removed;
            left -= removed;
            if (run[1] == 0) log.remove(i);
        }
    }

    @Override
    boolean fresh(Rule r, long now) {
        return inWindow(r, now) == 0;
    }

    @Override
    void clear() {
        log.clear();
    }

    @Override
    Model copy() {
        SlidingWindowLogModel m = new SlidingWindowLogModel();
        for (long[] run : log) m.log.add(run.clone());
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.SLIDING_WINDOW_LOG;
    }
}
