package dev.sluice.internal.approximate;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What {@code sync.lua} does, in plain Java: the reference the script is held against
 * ({@code SyncScriptTest}) and the fleet's store in the engine's unit tests, where several engines
 * share one of these as several instances share one Redis. Keys expire as the script's would.
 */
public final class FleetCounts implements CountExchange {

    private static final long MARGIN = 1000;

    /** A key's state as the script stores it (and the window it was last written with): the end of its count's window (the counter's current window). */
    private record Stored(Algorithm algorithm, long window, long end, long current, long previous, long expiresAt) {
    }

    private final Clock clock;
    private final boolean expires;
    private final Map<String, Stored> keys = new HashMap<>();
    private final Map<String, Long> writtenLast = new HashMap<>();
    private int calls;
    /** Runs inside each exchange before it applies anything (a test's way to act while a sync is in flight). */
    private Consumer<List<Delta>> during = d -> { };
    private RuntimeException failure;

    /** @param clock the store's clock (Redis's TIME) */
    public FleetCounts(Clock clock) {
        this(clock, true);
    }

    /**
     * @param expires whether keys expire on {@code clock}; not when held against a real Redis on a fake clock,
     *                whose keys expire in real time (the test then checks each key's TTL instead)
     */
    public FleetCounts(Clock clock, boolean expires) {
        this.clock = clock;
        this.expires = expires;
    }

    @Override
    public Reply exchange(List<Delta> deltas, long now) {
        during.accept(deltas);
        synchronized (this) {
            calls++;
            if (failure != null) throw failure;
            long at = now < 0 ? clock.millis() : now;
            writtenLast.clear();
            List<Counts> out = new ArrayList<>(deltas.size());
            for (Delta d : deltas) out.add(apply(d, at));
            return new Reply(out, at);
        }
    }

    private Counts apply(Delta d, long now) {
        String key = new String(d.key(), StandardCharsets.UTF_8);
        Stored stored = keys.get(key);
        if (stored != null && ((expires && stored.expiresAt <= now) || stored.algorithm != d.algorithm())) stored = null;
        long w = d.windowMs();
        long ds = d.windowStart();
        long dc = Math.max(0, d.current()); // a take is never negative
        long dp = Math.max(0, d.previous());
        long gc = d.givenCurrent();
        long gp = d.givenPrevious();
        long c = stored == null ? 0 : stored.current;
        if (d.algorithm() == Algorithm.FIXED_WINDOW) {
            long e = stored == null || stored.end <= now ? -1 : stored.end; // an ended count is not revived
            if (e < 0) c = 0;
            if (ds > now + MARGIN && e <= ds) dc = 0; // not begun, no count running then
            boolean write = false;
            if (gc > 0 && e > ds && ds >= e - w) { // given back off its own window's count only
                c = Math.max(0, c - gc);
                write = true;
            }
            if (dc > 0) {
                if (e > ds && (ds >= e - w || ds + w > now)) { // the count running in the instance's window
                    c += dc;
                    if (ds <= now) e = Math.max(e, ds + w); // not to the end of a window not begun
                    write = true;
                } else if (e <= ds) { // over: replaced
                    e = ds + w;
                    c = dc;
                    write = true;
                }
            }
            if (write && e - now + MARGIN >= 1) put(key, new Stored(d.algorithm(), w, e, c, 0, e + MARGIN));
            return e < 0 ? Counts.EMPTY : new Counts(e - w, c, 0);
        }
        long s = stored == null ? -1 : stored.end + Math.floorMod(-stored.end, w) - w; // the end rounded up
        long p = stored == null ? 0 : stored.previous;
        if (ds > now + MARGIN && ds != s) {
            dc = 0;
            dp = 0;
        }
        boolean write = false;
        if (s >= 0 && (gc > 0 || gp > 0)) { // given back off the counts of their own windows, where the key holds them
            if (s == ds) {
                c -= gc;
                p -= gp;
            } else if (s == ds + w) {
                p -= gc;
            } else if (s == ds - w) {
                c -= gp;
            }
            c = Math.max(0, c);
            p = Math.max(0, p);
            write = true;
        }
        if (dc > 0 || dp > 0) {
            write = true;
            if (s >= 0 && ds < s && ds + w > now) { // a lagging instance, or a window made shorter
                c += dc;
                if (ds == s - w) {
                    p += dp;
                } else {
                    c += dp;
                }
            } else {
                if (s < 0) {
                    s = ds;
                    c = 0;
                    p = 0;
                } else if (ds > s) {
                    p = ds == s + w ? c : 0;
                    c = 0;
                    s = ds;
                }
                if (ds == s) {
                    c += dc;
                    p += dp;
                } else if (ds == s - w) {
                    p += dc;
                }
            }
        }
        if (write && s + 2 * w - now + MARGIN >= 1) put(key, new Stored(d.algorithm(), w, s + w, c, p, s + 2 * w + MARGIN));
        return s < 0 ? Counts.EMPTY : new Counts(s, c, p);
    }

    private void put(String key, Stored stored) {
        keys.put(key, stored);
        writtenLast.put(key, stored.expiresAt);
    }

    /** When a key written by the last exchange expires (ms since the epoch), or null if that exchange did not write it. */
    public synchronized Long writtenByLastExchange(String key) {
        return writtenLast.get(key);
    }

    public synchronized int calls() {
        return calls;
    }

    /** The fleet's count of a key's window {@code start}, of the length it was last written with; 0 if it holds another or none. */
    public synchronized long count(String key, long start) {
        Stored s = keys.get(key);
        return s == null ? 0 : count(key, start, s.window);
    }

    /** The fleet's count of a key's window {@code start} of {@code windowMs}, 0 if it holds another or none. */
    public synchronized long count(String key, long start, long windowMs) {
        Stored s = keys.get(key);
        if (s == null) return 0;
        long end = s.algorithm == Algorithm.FIXED_WINDOW ? s.end : s.end + Math.floorMod(-s.end, windowMs);
        if (end - windowMs == start) return s.current;
        return s.algorithm == Algorithm.SLIDING_WINDOW_COUNTER && end - 2 * windowMs == start ? s.previous : 0;
    }

    /** Deletes a key, as an operator's reset does in Redis. */
    public synchronized void delete(String key) {
        keys.remove(key);
    }

    public void during(Consumer<List<Delta>> action) {
        this.during = action;
    }

    public synchronized void failWith(RuntimeException e) {
        this.failure = e;
    }
}
