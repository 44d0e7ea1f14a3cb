package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The slots a client holds, each an object of its own (the take that holds it) with the moment its
 * lease ends. A slot is held while its lease has not ended; a request is admitted while fewer than
 * the limit are held; a release frees its slot at once; a renewal moves the end of a slot still held
 * to a lease from now (never earlier), and finds nothing once the lease has ended. Figures: remaining
 * is the free slots; retry-after, reset and next are a hint of a second ({@link Figures}).
 */
final class ConcurrencyModel extends Model {

    /** Slot (its take) -> the moment its lease ends. */
    private final Map<Object, Long> leases = new IdentityHashMap<>();

    private long held(long now) {
        return leases.values().stream().filter(end -> end > now).count();
    }

    @Override
    boolean admits(Rule r, long now, long cost) {
        return held(now) + cost <= r.limit();
    }

    @Override
    Object take(Rule r, long now, long cost) {
        leases.values().removeIf(end -> end <= now);
        Object slot = null;
        for (long i = 0; i < cost; i++) {
            slot = new Object();
            leases.put(slot, now + r.windowMillis());
        }
        return slot;
    }

    /** The release. */
    @Override
    void giveBack(Rule r, long now, long cost, Object taken) {
        leases.remove(taken);
    }

    /** Whether the slot of {@code taken} was held at {@code now}; if so it now ends a lease from now (never earlier). */
    boolean renew(Rule r, long now, Object taken) {
        Long end = leases.get(taken);
        if (end == null || end <= now) return false;
        leases.put(taken, Math.max(end, now + r.windowMillis()));
        return true;
    }

    @Override
    boolean fresh(Rule r, long now) {
        return held(now) == 0;
    }

    @Override
    void clear() {
        leases.clear();
    }

    @Override
    Model copy() {
        ConcurrencyModel m = new ConcurrencyModel();
        m.leases.putAll(leases);
        m.expiresAt = expiresAt;
        return m;
    }

    @Override
    Algorithm algorithm() {
        return Algorithm.CONCURRENCY;
    }
}
