package dev.sluice.internal.approximate;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.internal.algorithm.Verdict;
import dev.sluice.internal.algorithm.WindowCounts;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * The approximate mode ({@code rule.<name>.sync}): {@code fixed-window} and {@code sliding-window-counter}
 * rules decided on this instance from counts, exchanged with the fleet once per sync interval.
 *
 * <h2>The model</h2>
 * For each client of a rule, this instance knows the fleet's counts of the current and the previous
 * window <em>as of its last sync</em> (they include everything this instance had sent by then), and
 * its own admissions since, not yet acknowledged by a sync. A request is decided by the rule's own
 * algorithm ({@link RateAlgorithm}) on the sum of the two: so it is admitted while the last-known
 * fleet count plus this instance's unsynced count leaves room for its cost, and its remaining,
 * retry-after, reset and next are the exact algorithm's for that sum. Windows are aligned to the
 * epoch on Redis's clock ({@code clock=redis}: its offset from this instance's clock is learned at
 * every sync, to within half a round trip) or on this instance's clock ({@code clock=local}).
 *
 * <h2>A sync</h2>
 * Once per {@code sync} interval (per rule, on one background thread), one {@link CountExchange} call
 * for every client used since the last sync or holding unsent counts: each key's unsent counts are
 * added to the fleet's count of their window in Redis, in the same key and format as the exact
 * script's (so exact and approximate decisions count together: a rule can change mode while running,
 * and instances of both modes share one count), and the fleet's counts come back. Requests never wait
 * for a sync; counts admitted while one is in flight are sent with the next.
 *
 * <h2>The bound</h2>
 * Each instance admits a request only if its view (fleet count at its last sync + its own count since)
 * leaves room, and its own admissions are all in its view. So over one aligned window, for one client,
 * the fleet admits at most {@code limit + the sum over the other instances of u_i}, where {@code u_i}
 * is instance i's largest unsynced count in that window: what it admitted between the snapshot of one
 * sync and the reply of the next (one interval plus a round trip), never more than {@code limit}.
 * (Take the instance k whose last-used sync reached Redis last: the count it saw holds everyone's
 * admissions up to their own last sync before it, and each other instance's admissions after that are
 * within its own unsynced count, since its own last-used sync came no later.) {@link #largestUnsynced}
 * reports u_i; the three-instance fleet test measures the bound.
 *
 * <h2>Before the first sync, and new windows</h2>
 * A client new to this instance, and every client at the start of a window, is counted from what the
 * last sync said about that window: nothing, until a sync in the window has told. So the first interval
 * of every window is where the overshoot comes from; it is within the bound above.
 *
 * <h2>When a sync fails</h2>
 * The counts sent are kept as unsent (the reply may have been lost after Redis added them: they may
 * then be counted twice, which only ever makes the fleet admit less; a give-back sent is not kept, since
 * given back twice it would make the fleet admit more) and {@link #available()} turns
 * false until a sync succeeds; meanwhile the caller ({@link ApproximateLimiter}) decides by the failure
 * policy. The counts this engine holds were admitted while Redis answered, so they are sent when it
 * answers again; what the local backstop counts meanwhile is never sent.
 *
 * <p>A sync can also fail in part (on Redis Cluster, one master away): the keys Redis acknowledged are
 * acknowledged and never sent again; only the others are kept as unsent, and until a sync of theirs
 * succeeds their clients are decided by the failure policy ({@link #UNSYNCED}), the clients of the
 * other masters staying approximate. So during an outage of one master, a client whose key lives on
 * it gets what the bound allowed up to its last sync, then at most {@code fallback-limit} per window
 * from each instance (the backstop); the clients of the other masters keep the bound.
 *
 * <h2>Memory</h2>
 * One small state per (rule, client) in use, kept while its windows matter (one window after its last
 * count for {@code fixed-window}, two for {@code sliding-window-counter}) and swept at syncs; at most
 * {@code maxKeys} at once: a client beyond that gets no state ({@link #decide} returns null, and the
 * caller decides it exactly, in Redis).
 */
public final class ApproximateEngine implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ApproximateEngine.class);
    private static final long NONE = CountExchange.Counts.NONE;
    /** {@link Result#takenAt} of a rule that took nothing (a state's sequence is never negative). */
    private static final long NOT_TAKEN = -1;
    private static final Result RETRY = new Result(null, null, null, null, null, null);
    /**
     * What {@link #decide} returns for a client whose last sync failed (its master away, on a Cluster):
     * decide it by the failure policy; nothing was taken.
     */
    public static final Decision UNSYNCED = Decision.of(List.of(new RuleDecision(
            Rule.of("unsynced", Algorithm.FIXED_WINDOW, 1, java.time.Duration.ofSeconds(1)), true, 0, 0, 0, 0,
            RuleDecision.Source.UNAVAILABLE)));
    private static final Result UNSYNCED_RESULT = new Result(UNSYNCED, null, null, null, null, null);
    /** How long the background thread sleeps when no rule is approximate (it is woken by the first). */
    private static final long IDLE_PARK_NANOS = 1_000_000_000L;
    /**
     * The longest sync interval the scheduler keeps, in ns (about 73 years): a longer one (a window of
     * centuries allows it) is that long, so that no product or sum of {@code System.nanoTime()} values
     * overflows (an interval of 300 years in ns is past {@code Long.MAX_VALUE}: negative, due at once).
     */
    private static final long MAX_INTERVAL_NANOS = Long.MAX_VALUE / 4;

    private final Clock clock;
    private final boolean redisClock;
    private final CountExchange exchange;
    private final String keyPrefix;
    private final int maxKeys;
    private final boolean background;
    private final Supplier<String> instance;
    private final RuleCache<RateAlgorithm> algorithms = new RuleCache<>(RateAlgorithm::of);
    private final RuleCache<Series> seriesOfRule = new RuleCache<>(this::seriesOf);
    private final ConcurrentHashMap<SeriesId, Series> series = new ConcurrentHashMap<>();
    private final AtomicInteger keys = new AtomicInteger();
    private final AtomicLong ids = new AtomicLong();
    /** Redis's clock minus this instance's, as learned at the sync with the shortest round trip lately ({@code clock=redis}). */
    private volatile long offsetMs;
    /** The round trip of the sync {@link #offsetMs} comes from, and when it was (System.nanoTime); under the sync lock. */
    private long offsetRttNanos = Long.MAX_VALUE;
    private long offsetTakenNanos;
    /** The offset of the last sync that differed from {@link #offsetMs} by more than its slack, else MIN_VALUE; under the sync lock. */
    private long jumpSeen = Long.MIN_VALUE;
    private volatile boolean available = true;
    private final LongAdder syncs = new LongAdder();
    private final LongAdder syncFailures = new LongAdder();
    private final AtomicLong longestSyncNanos = new AtomicLong();
    private final AtomicLong longestUnsyncedNanos = new AtomicLong();
    private final Object syncLock = new Object();
    private volatile Thread thread;
    private volatile boolean closed;

    /**
     * @param clock      the instance's clock (a fake one in tests)
     * @param redisClock whether windows follow Redis's clock ({@code clock=redis}), learned at each sync
     * @param exchange   where counts are exchanged (Redis)
     * @param keyPrefix  the namespace of the Redis keys, as the exact engine's
     * @param maxKeys    the most client states kept at once
     * @param background whether a daemon thread syncs each rule every {@code sync} (tests call {@link #sync()})
     * @param instance   the Sluice instance's name ({@code shop/sluice}) for the log and the thread's name
     */
    public ApproximateEngine(Clock clock, boolean redisClock, CountExchange exchange, String keyPrefix, int maxKeys,
                             boolean background, Supplier<String> instance) {
        if (maxKeys < 1) throw new IllegalArgumentException("maxKeys must be at least 1: " + maxKeys);
        this.clock = clock;
        this.redisClock = redisClock;
        this.exchange = exchange;
        this.keyPrefix = keyPrefix;
        this.maxKeys = maxKeys;
        this.background = background;
        this.instance = instance;
    }

    /** The outcome of {@link #reserve}: the decision, and what it took where, to {@link #release} it. */
    public static final class Result {
        final Decision decision;
        final List<Acquisition> acquisitions;
        final KeyCounts[] states;
        final long[] windows;
        final Verdict[] verdicts;
        /**
         * Each take's {@link KeyCounts#sequence} (whether it still sits among its state's pending counts), or
         * {@link #NOT_TAKEN} where the rule took nothing.
         */
        final long[] takenAt;

        Result(Decision decision, List<Acquisition> acquisitions, KeyCounts[] states, long[] windows,
               Verdict[] verdicts, long[] takenAt) {
            this.decision = decision;
            this.acquisitions = acquisitions;
            this.states = states;
            this.windows = windows;
            this.verdicts = verdicts;
            this.takenAt = takenAt;
        }

        /** Whether rule {@code i} took its cost. */
        boolean taken(int i) {
            return takenAt[i] != NOT_TAKEN;
        }

        /** The decision, with what was taken taken. */
        public Decision decision() {
            return decision;
        }

        /** The decision as if nothing had been taken: what {@link #release} leaves. */
        Decision untaken() {
            List<RuleDecision> out = new ArrayList<>(verdicts.length);
            for (int i = 0; i < verdicts.length; i++) {
                out.add(verdicts[i].decision(acquisitions.get(i).rule(), false, RuleDecision.Source.APPROXIMATE));
            }
            return Decision.of(out);
        }
    }

    /** Whether the last sync succeeded (true before the first): decisions here follow the fleet. */
    public boolean available() {
        return available;
    }

    /**
     * Decides the acquisitions (all of approximate rules) atomically on this instance's counts: every
     * enforcing rule admits and each rule that admits takes its cost, or nothing is taken.
     *
     * @return the decision, or {@code null} when a client has no state and there is no room for one
     *         ({@code maxKeys}): then nothing was taken
     */
    public Decision decide(List<Acquisition> acquisitions) {
        if (acquisitions.size() != 1) {
            Result r = reserve(acquisitions);
            return r == null ? null : r.decision;
        }
        Acquisition a = acquisitions.get(0);
        Rule rule = a.rule();
        Series series = seriesFor(rule);
        RateAlgorithm algorithm = algorithms.get(rule);
        long now = now();
        while (true) {
            KeyCounts c = state(series, a.clientKey());
            if (c == null) return null;
            c.lock();
            try {
                if (c.removed) continue; // swept between lookup and lock: look up afresh
                if (c.unsynced) return UNSYNCED;
                long w = c.window(now);
                Verdict v = algorithm.decide(WindowCounts.of(algorithm, w, c.count(w), c.count(w - series.windowMs)), now,
                        a.cost());
                c.used = true;
                boolean take = v.allowed(); // alone, a shadow rule that admits takes too
                if (take) c.take(w, a.cost());
                return Decision.of(List.of(v.decision(rule, take, RuleDecision.Source.APPROXIMATE, take ? tokenOf(c) : 0)));
            } finally {
                c.unlock();
            }
        }
    }

    /**
     * {@link #decide}, keeping what was taken where, so that {@link #release} can give it back (the
     * request's exact rules may still deny it).
     *
     * @return the result, or {@code null} when a client has no state and there is no room for one
     */
    public Result reserve(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        long now = now();
        KeyCounts[] states = new KeyCounts[n];
        for (int i = 0; i < n; i++) {
            Acquisition a = acquisitions.get(i);
            for (int j = 0; j < i; j++) {
                Acquisition b = acquisitions.get(j);
                if (a.rule().name().equals(b.rule().name()) && a.clientKey().equals(b.clientKey())) {
                    throw new IllegalArgumentException("rule " + a.rule().name() + " is asked twice for client "
                            + a.clientKey());
                }
            }
        }
        while (true) {
            for (int i = 0; i < n; i++) {
                Acquisition a = acquisitions.get(i);
                states[i] = state(seriesFor(a.rule()), a.clientKey());
                if (states[i] == null) return null;
            }
            Result r = lockedInOrder(n == 1 ? states : sortedById(states), 0, acquisitions, states, now);
            if (r != RETRY) return r;
        }
    }

    /** Holds the states' locks from {@code i} on, in the given order, then decides; {@link #RETRY} if one was swept. */
    private Result lockedInOrder(KeyCounts[] order, int i, List<Acquisition> acquisitions, KeyCounts[] states, long now) {
        if (i == order.length) return decideLocked(acquisitions, states, now);
        order[i].lock();
        try {
            if (order[i].removed) return RETRY; // swept between lookup and lock: look up afresh
            return lockedInOrder(order, i + 1, acquisitions, states, now);
        } finally {
            order[i].unlock();
        }
    }

    private Result decideLocked(List<Acquisition> acquisitions, KeyCounts[] states, long now) {
        int n = states.length;
        for (KeyCounts s : states) {
            if (s.unsynced) return UNSYNCED_RESULT;
        }
        long[] windows = new long[n];
        Verdict[] verdicts = new Verdict[n];
        boolean admitted = true;
        for (int i = 0; i < n; i++) {
            Acquisition a = acquisitions.get(i);
            KeyCounts s = states[i];
            long w = s.window(now);
            windows[i] = w;
            RateAlgorithm algorithm = algorithms.get(a.rule());
            verdicts[i] = algorithm.decide(WindowCounts.of(algorithm, w, s.count(w), s.count(w - s.series.windowMs)), now,
                    a.cost());
            admitted &= verdicts[i].allowed() || a.rule().dryRun(); // a shadow rule refuses nothing
            s.used = true;
        }
        long[] takenAt = new long[n];
        List<RuleDecision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Acquisition a = acquisitions.get(i);
            boolean take = admitted && verdicts[i].allowed(); // a shadow rule that denies takes nothing
            if (take) states[i].take(windows[i], a.cost());
            takenAt[i] = take ? states[i].sequence : NOT_TAKEN;
            decisions.add(verdicts[i].decision(a.rule(), take, RuleDecision.Source.APPROXIMATE, take ? tokenOf(states[i]) : 0));
        }
        return new Result(Decision.of(decisions), acquisitions, states, windows, verdicts, takenAt);
    }

    /** Gives back what {@code result} took (another rule of its request denied it): as if it had not been asked. */
    public void release(Result result) {
        for (int i = 0; i < result.states.length; i++) {
            if (!result.taken(i)) continue;
            KeyCounts s = result.states[i];
            s.lock();
            try {
                s.untake(result.windows[i], result.acquisitions.get(i).cost(), result.takenAt[i]);
            } finally {
                s.unlock();
            }
        }
    }

    /**
     * Gives back what an approximate decision of this engine took ({@code taken}, for {@code a}'s client and
     * cost), after the decision: a request refused past {@code max-held-requests}, or
     * {@code RateLimiter.settle}'s give-back. As {@link #release} gives back a request's own denial: off this
     * instance's counts not yet sent, else as a give-back of the take's window sent with the next sync;
     * nothing when that window is over, or when the client's counts here are gone since (their counts went
     * to Redis; the fleet keeps counting the take, erring strict). Each call gives back: settle a take once.
     */
    public void giveBack(Acquisition a, RuleDecision taken) {
        RuleDecision.Take take = taken.take();
        if (take == null || take.token() == 0) return; // not this engine's take
        // looked up as reset does: a give-back never makes a series, nor changes its sync interval
        Series series = this.series.get(SeriesId.of(taken.rule()));
        KeyCounts c = series == null ? null : series.clients.get(a.clientKey());
        if (c == null) return;
        // a take is named by the end of the window it counted in (Verdict): an aligned window's is w + windowMs, even
        // where w is off the grid (the fleet's count of a window of another length, that the client counts on in)
        long w = series.calendar == null ? take.ms() - series.windowMs : series.start(take.ms() - 1);
        c.lock();
        try {
            if (c.removed || (c.id & 0xFFFFFFFFL) != take.token() >>> 32) return; // another state of the same client
            long takenAt = c.sequence - ((c.sequence - take.token()) & 0xFFFFFFFFL);
            c.untake(w, a.cost(), takenAt);
        } finally {
            c.unlock();
        }
    }

    /**
     * A take's token ({@link RuleDecision.Take#token}): the low 32 bits of its state's id, then of the state's
     * sequence when it took: what {@link #giveBack} finds the take again by. 0 (read as no take of this engine's,
     * its give-back ignored, erring strict) only for a state whose id is a multiple of 2^32.
     */
    private static long tokenOf(KeyCounts c) {
        return c.id << 32 | (c.sequence & 0xFFFFFFFFL);
    }

    /**
     * Forgets this instance's counts of one client of one rule (an operator's reset; Redis's key is deleted
     * apart, after this returns). Waits for a sync in flight: its counts of the client, sent before the reset,
     * then reach Redis before the key is deleted, not after (which would undo the reset).
     */
    public void reset(Rule rule, ClientKey clientKey) {
        if (!rule.algorithm().isWindow() || rule.algorithm() == Algorithm.SLIDING_WINDOW_LOG) return;
        Series s = series.get(SeriesId.of(rule));
        if (s == null) return;
        synchronized (syncLock) {
            KeyCounts c = s.clients.get(clientKey);
            if (c == null) return;
            c.lock();
            try {
                if (!c.removed) remove(c);
            } finally {
                c.unlock();
            }
        }
    }

    /**
     * The largest count this instance admitted, for one client of a rule, beyond the fleet's count it
     * knew (its u in the bound of the class comment), over the rule's clients, since this was last asked;
     * 0 if none.
     */
    public long largestUnsynced(Rule rule) {
        Series s = series.get(SeriesId.of(rule));
        if (s == null) return 0;
        long u = s.takeFolded();
        for (KeyCounts c : s.clients.values()) {
            c.lock();
            try {
                u = Math.max(u, c.largestUnsynced);
                c.largestUnsynced = 0;
            } finally {
                c.unlock();
            }
        }
        return u;
    }

    /** Exchanges counts for every rule now, whether due or not (tests, and the last sync at close). */
    public boolean sync() {
        synchronized (syncLock) {
            return syncSeries(series.values());
        }
    }

    /** Syncs that succeeded since start (each one call to Redis, or one pipeline of calls). */
    public long syncs() {
        return syncs.sum();
    }

    /** Syncs that failed since start. */
    public long syncFailures() {
        return syncFailures.sum();
    }

    /** The longest sync, from its snapshot to its reply, in ms (the "round trip" of the bound). */
    public long longestSyncMillis() {
        return longestSyncNanos.get() / 1_000_000;
    }

    /**
     * The longest time, in ms, from the snapshot of one sync of a rule to the reply of the next one:
     * how long a count admitted here can stay unknown to the fleet (the interval plus the round trip,
     * longer when a sync was late or failed).
     */
    public long longestUnsyncedMillis() {
        return longestUnsyncedNanos.get() / 1_000_000;
    }

    /** Whether every count admitted here has been acknowledged by a sync (nothing waits to be sent or is in flight). */
    public boolean allSynced() {
        for (Series s : series.values()) {
            for (KeyCounts c : s.clients.values()) {
                c.lock();
                try {
                    if (!c.removed && !c.idle()) return false;
                } finally {
                    c.unlock();
                }
            }
        }
        return true;
    }

    /** The state of one client of a rule, or null (tests). */
    KeyCounts stateOf(Rule rule, ClientKey clientKey) {
        Series s = series.get(SeriesId.of(rule));
        return s == null ? null : s.clients.get(clientKey);
    }

    /** Client states held now. */
    public int keyCount() {
        return keys.get();
    }

    /** The time on the windows' clock: Redis's, as learned at the last sync, or this instance's. */
    long now() {
        return clock.millis() + offsetMs;
    }

    /** A sync interval in ns, at most {@link #MAX_INTERVAL_NANOS}. */
    static long intervalNanos(long syncMs) {
        return Math.min(syncMs, MAX_INTERVAL_NANOS / 1_000_000L) * 1_000_000L;
    }

    /**
     * Syncs the rules whose interval is due at {@code nanoNow} (System.nanoTime) and returns when the
     * next one is due. Called by the background thread only.
     */
    long syncDue(long nanoNow) {
        List<Series> due = new ArrayList<>();
        long next = nanoNow + IDLE_PARK_NANOS;
        for (Series s : series.values()) {
            long interval = intervalNanos(s.syncMs);
            if (s.nextDueNanos - nanoNow > interval) s.nextDueNanos = nanoNow + interval; // the interval shortened
            if (s.nextDueNanos - nanoNow <= 0) {
                due.add(s);
                s.nextDueNanos += interval;
                if (s.nextDueNanos - nanoNow <= 0) s.nextDueNanos = nanoNow + interval; // late: no catching up
            }
            if (s.nextDueNanos - next < 0) next = s.nextDueNanos;
        }
        if (!due.isEmpty()) {
            synchronized (syncLock) {
                syncSeries(due);
            }
        }
        return next;
    }

    private boolean syncSeries(Collection<Series> due) {
        long snapshotNanos = System.nanoTime();
        long snapshotMillis = clock.millis();
        long now = now();
        List<KeyCounts> sent = new ArrayList<>();
        List<CountExchange.Delta> deltas = new ArrayList<>();
        for (Series s : due) {
            for (KeyCounts c : s.clients.values()) {
                c.lock();
                try {
                    if (c.removed) continue;
                    if (c.idle()) {
                        if (c.expired(now)) remove(c);
                        continue;
                    }
                    deltas.add(c.snapshot(now));
                    sent.add(c);
                } finally {
                    c.unlock();
                }
            }
        }
        if (deltas.isEmpty()) {
            for (Series s : due) s.lastSnapshotNanos = snapshotNanos; // nothing unsent
            if (!available) ping(); // else nothing would ever be sent to find Redis back
            return true;
        }
        long startedNanos = System.nanoTime();
        long sentAt = clock.millis();
        CountExchange.Reply reply;
        try {
            reply = exchange.exchange(deltas, redisClock ? -1 : now);
        } catch (RuntimeException e) {
            for (KeyCounts c : sent) {
                c.lock();
                try {
                    c.restore();
                } finally {
                    c.unlock();
                }
            }
            syncFailures.increment();
            if (available) {
                available = false;
                LOG.warn("Sluice [{}]: the approximate mode's sync with Redis failed ({}); its rules are decided by"
                        + " their failure policy until a sync succeeds (tried every sync interval)", instance.get(),
                        e.getMessage());
            }
            return false;
        }
        long repliedNanos = System.nanoTime();
        long tookNanos = repliedNanos - startedNanos;
        long before = offsetMs;
        if (redisClock) learnOffset(reply.atMillis() - (sentAt + clock.millis()) / 2, tookNanos, repliedNanos);
        boolean wentBack = offsetMs < before - RateAlgorithm.EXPIRY_MARGIN_MS;
        // the new offset is right to within half the round trip (on either clock): a pending window that may have
        // begun on Redis's clock within that is not moved back
        long halfRoundTrip = (elapsedMs(sentAt, tookNanos) + 1) / 2;
        boolean wentForward = offsetMs > before + RateAlgorithm.EXPIRY_MARGIN_MS;
        // Redis's time at the snapshot was at least this (whatever the offset's estimate): a window over by then was
        // over when its takes were sent; one that ended during the sync (a slow one, on a correct clock) was not
        long snapshotAtLeast = reply.atMillis() - elapsedMs(snapshotMillis, repliedNanos - snapshotNanos);
        List<CountExchange.Counts> counts = reply.counts();
        int notExchanged = 0;
        for (int i = 0, n = sent.size(); i < n; i++) {
            KeyCounts c = sent.get(i);
            CountExchange.Counts got = counts.get(i);
            c.lock();
            try {
                if (got != null) {
                    if (c.acknowledge(got, reply.atMillis(), wentForward, snapshotAtLeast)) {
                        c.clockWentBack(now(), halfRoundTrip); // a window the fleet named, not this clock (the key lost)
                    }
                } else {
                    c.restore(); // this key's part failed: sent again next time, what the others acknowledged not
                    c.unsynced = true;
                    notExchanged++;
                }
            } finally {
                c.unlock();
            }
        }
        if (wentBack || wentForward) {
            // this instance's clock was far ahead: pending windows it began are not begun on Redis's clock, within the
            // margin too; counted in, they would make Redis start a window not begun (and end the running one). Or it
            // lagged: pending windows it still counted in are over on Redis's clock, which would drop them
            long now2 = now();
            for (Series s : series.values()) {
                for (KeyCounts c : s.clients.values()) {
                    c.lock();
                    try {
                        if (c.removed) continue;
                        if (wentBack) {
                            c.clockWentBack(now2, halfRoundTrip);
                        } else {
                            c.clockWentForward(now2);
                        }
                    } finally {
                        c.unlock();
                    }
                }
            }
        }
        if (notExchanged > 0) {
            syncFailures.increment();
            LOG.debug("Sluice [{}]: the approximate mode's sync reached only part of Redis; {} keys go again with the next",
                    instance.get(), notExchanged);
        }
        longestSyncNanos.accumulateAndGet(tookNanos, Math::max);
        for (Series s : due) {
            longestUnsyncedNanos.accumulateAndGet(repliedNanos - s.lastSnapshotNanos, Math::max);
            s.lastSnapshotNanos = snapshotNanos;
        }
        syncs.increment();
        answered();
        return true;
    }

    /**
     * The time since {@code sinceMillis} on this instance's clock, or {@code nanos} if longer (the clock may be
     * a fake one, or set meanwhile), in whole ms rounded up.
     */
    private long elapsedMs(long sinceMillis, long nanos) {
        return Math.max(Math.max(0, clock.millis() - sinceMillis), (nanos + 999_999) / 1_000_000);
    }

    /** While syncs fail and nothing is left to send (the clients' unsent counts reset or expired): asks whether Redis answers. */
    private void ping() {
        try {
            exchange.ping();
        } catch (RuntimeException e) {
            syncFailures.increment();
            return;
        }
        answered();
    }

    private void answered() {
        if (!available) {
            available = true;
            LOG.info("Sluice [{}]: the approximate mode's sync with Redis succeeds again; its rules are decided from"
                    + " the fleet's counts again", instance.get());
        }
    }

    /**
     * Takes a sync's estimate of Redis's clock, right to within half its round trip, if it is at least
     * as good as the one in use; a slow sync (a busy machine, a pause) would otherwise shift this
     * instance's windows. A somewhat worse one is taken once the one in use is 5 s old (clocks drift),
     * any once it is a minute old, and one that differs by more than a second and the round trip once two
     * syncs in a row say so (a clock was set).
     */
    private void learnOffset(long offset, long rttNanos, long atNanos) {
        long age = atNanos - offsetTakenNanos;
        boolean better = rttNanos <= offsetRttNanos;
        boolean fresher = age > 5_000_000_000L && rttNanos <= 2 * offsetRttNanos + 1_000_000;
        // a clock set (this instance's or Redis's): the windows would be far off until the offset is taken; taken
        // when two syncs in a row agree on it (not one master's clock among several that differ)
        long slack = RateAlgorithm.EXPIRY_MARGIN_MS + rttNanos / 1_000_000;
        boolean jumped = false;
        if (Math.abs(offset - offsetMs) > slack) {
            jumped = jumpSeen != Long.MIN_VALUE && Math.abs(offset - jumpSeen) <= slack;
            jumpSeen = offset;
        } else {
            jumpSeen = Long.MIN_VALUE;
        }
        if (better || fresher || jumped || age > 60_000_000_000L) {
            offsetMs = offset;
            offsetRttNanos = rttNanos;
            offsetTakenNanos = atNanos;
        }
    }

    /** Under the state's lock. */
    private void remove(KeyCounts c) {
        c.removed = true;
        c.series.foldLargest(c.largestUnsynced);
        if (c.series.clients.remove(c.clientKey, c)) keys.decrementAndGet();
    }

    private KeyCounts state(Series s, ClientKey clientKey) {
        KeyCounts c = s.clients.get(clientKey);
        if (c != null) return c;
        if (keys.incrementAndGet() > maxKeys) { // room reserved first: threads racing for the last one take it once
            keys.decrementAndGet();
            return null;
        }
        KeyCounts fresh = new KeyCounts(s, clientKey, ids.incrementAndGet());
        KeyCounts raced = s.clients.putIfAbsent(clientKey, fresh);
        if (raced != null) {
            keys.decrementAndGet();
            return raced;
        }
        return fresh;
    }

    /**
     * The rule's series, its sync interval the rule's: after a reload to another interval (or back to an
     * earlier one, whose series the cache holds) the next sync comes within the new interval.
     */
    private Series seriesFor(Rule rule) {
        Series s = seriesOfRule.get(rule);
        long syncMs = rule.syncMillis();
        if (s.syncMs != syncMs) {
            boolean sooner = syncMs < s.syncMs;
            s.syncMs = syncMs;
            Thread t = thread;
            if (sooner && t != null) LockSupport.unpark(t); // parked until the longer interval's sync
        }
        return s;
    }

    private Series seriesOf(Rule rule) {
        if (!rule.approximate()) throw new IllegalArgumentException("rule " + rule.name() + " has no sync interval");
        boolean[] created = {false};
        SeriesId seriesId = SeriesId.of(rule);
        Series s = series.computeIfAbsent(seriesId, id -> {
            created[0] = true;
            return new Series(id, rule, keyPrefix, redisClock, System.nanoTime() + intervalNanos(rule.syncMillis()));
        });
        s.syncMs = rule.syncMillis(); // the newest rule's: after a reload, the new interval
        startThread();
        Thread t = thread;
        if (created[0] && t != null) LockSupport.unpark(t); // its first sync may be due before the thread's next
        return s;
    }

    private void startThread() {
        if (!background || thread != null || closed) return;
        synchronized (this) {
            if (thread != null || closed) return;
            Thread t = new Thread(this::runSyncs, "sluice-sync-" + instance.get());
            t.setDaemon(true);
            thread = t;
            t.start();
        }
    }

    private void runSyncs() {
        while (!closed) {
            long now = System.nanoTime();
            long next;
            try {
                next = syncDue(now);
            } catch (RuntimeException bug) {
                LOG.error("Sluice [{}]: the approximate mode's sync failed unexpectedly", instance.get(), bug);
                next = now + IDLE_PARK_NANOS;
            }
            long wait = next - System.nanoTime();
            if (wait > 0) LockSupport.parkNanos(this, wait);
        }
    }

    private static KeyCounts[] sortedById(KeyCounts[] states) {
        KeyCounts[] order = states.clone();
        Arrays.sort(order, (a, b) -> Long.compare(a.id, b.id)); // one lock order for everybody: no deadlock
        return order;
    }

    /** Stops the sync thread, then sends what is still unsent, once (best effort). */
    @Override
    public void close() {
        closed = true;
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
            try {
                t.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (keys.get() > 0) sync();
    }

    /** The counts of one rule's clients: one per (rule name, algorithm, window), shared by its plans of that window. */
    private record SeriesId(String name, Algorithm algorithm, long windowMs, CalendarWindows calendar) {
        /** The series {@code rule} counts in. */
        static SeriesId of(Rule rule) {
            return new SeriesId(rule.name(), rule.algorithm(), rule.windowMillis(), rule.calendar());
        }
    }

    static final class Series {
        final Rule rule;
        final long windowMs;
        final Algorithm algorithm;
        /** A calendar rule's windows ({@code fixed-window} only), else null: windows aligned to the epoch. */
        final CalendarWindows calendar;
        private volatile CalendarWindows.Window current;
        final byte[] keyHead;
        /** Windows on Redis's clock ({@code clock=redis}): a window this instance began early moves back when a sync corrects the offset. */
        final boolean redisClock;
        final ConcurrentHashMap<ClientKey, KeyCounts> clients = new ConcurrentHashMap<>();
        volatile long syncMs;
        /** System.nanoTime of the next sync; the sync thread's alone. */
        long nextDueNanos;
        /** System.nanoTime of the snapshot of the last sync that succeeded (at first: the series' creation); under the sync lock. */
        long lastSnapshotNanos;
        /** The largest unsynced count of clients removed since {@link ApproximateEngine#largestUnsynced} was asked. */
        private final AtomicLong folded = new AtomicLong();

        void foldLargest(long u) {
            folded.accumulateAndGet(u, Math::max);
        }

        long takeFolded() {
            return folded.getAndSet(0);
        }

        Series(SeriesId id, Rule rule, String keyPrefix, boolean redisClock, long firstDueNanos) {
            this.redisClock = redisClock;
            this.rule = rule;
            this.windowMs = id.windowMs();
            this.algorithm = id.algorithm();
            this.calendar = id.calendar();
            this.keyHead = (keyPrefix + "{" + id.name() + ":").getBytes(StandardCharsets.UTF_8);
            this.syncMs = rule.syncMillis();
            this.nextDueNanos = firstDueNanos;
            this.lastSnapshotNanos = System.nanoTime(); // its first counts are unsynced from now
        }

        /** The start of the window holding {@code now}: aligned to the epoch, or the calendar's. */
        long start(long now) {
            return calendar == null ? Math.floorDiv(now, windowMs) * windowMs : window(now).startMs();
        }

        /** The length of the window starting at {@code start}: the rule's, or that calendar window's. */
        long length(long start) {
            return calendar == null ? windowMs : window(start).lengthMs();
        }

        private CalendarWindows.Window window(long t) {
            CalendarWindows.Window w = current;
            if (w == null || !w.contains(t)) {
                w = calendar.windowAt(t);
                if (current == null || w.startMs() > current.startMs()) current = w; // keep the latest for decisions
            }
            return w;
        }

        /** {@code <keyPrefix>{<rule>:<client key>}}: the exact engine's key of this client. */
        byte[] key(ClientKey clientKey) {
            byte[] client = clientKey.value().getBytes(StandardCharsets.UTF_8);
            byte[] key = Arrays.copyOf(keyHead, keyHead.length + client.length + 1);
            System.arraycopy(client, 0, key, keyHead.length, client.length);
            key[key.length - 1] = '}';
            return key;
        }
    }

    /**
     * One client of one rule: three sets of counts, each a window start with the counts of that window
     * and the one before: the fleet's at the last sync ({@code synced}), what this instance sent in the
     * sync in flight ({@code sending}), what it admitted since ({@code pending}); and apart from the takes,
     * the give-backs of takes already sent ({@code given}, then {@code sendingGiven}), each of its take's
     * own window: sent with the takes, they come off that window's count only, so that a give-back never
     * cancels a take that the fleet counts in another window. All fields are guarded
     * by its lock: a plain mutex on the state's own synchronizer (one object per client; a request never
     * holds one client's lock twice), which keeps its throughput on a hot key under contention.
     */
    static final class KeyCounts extends AbstractQueuedSynchronizer {
        private static final long serialVersionUID = 1L;
        final Series series;
        final ClientKey clientKey;
        final long id;
        byte[] key;

        long syncedStart = NONE;
        long syncedCurrent;
        long syncedPrevious;
        long sendingStart = NONE;
        long sendingCurrent;
        long sendingPrevious;
        /** The length of the window sent ({@link Series#length}): a calendar window's own. */
        long sendingLength;
        long pendingStart = NONE;
        long pendingCurrent;
        long pendingPrevious;
        /** Of the sync in flight: give-backs of takes sent into the window {@code sendingStart}, and the one before. */
        long sendingGivenCurrent;
        long sendingGivenPrevious;
        /** Give-backs since, of takes sent before (or moved into another window): window {@code givenStart}, and the one before. */
        long givenStart = NONE;
        long givenCurrent;
        long givenPrevious;
        /**
         * Bumped by each snapshot and whenever the pending counts move to another window other than by the
         * clock's advance. A take made at sequence {@code pendingSince} or later still sits among the pending
         * counts, in its own window's (or, once that window is the previous one, in the previous).
         */
        long sequence;
        long pendingSince;
        /** The sync in flight: the {@code pendingSince} of its takes, and the sequence its snapshot began. */
        long sendingSince;
        long sendingSequence;
        /**
         * Takes made from sequence {@code droppedSince} to before {@code droppedBefore}, in windows from
         * {@code droppedFrom} to {@code droppedTo}, never reached their window's count ({@link #forgetGiveBacks});
         * their give-backs are dropped. NONE when there are none.
         */
        long droppedFrom = NONE;
        long droppedTo;
        long droppedSince;
        long droppedBefore;
        /** Decided since the last snapshot: to be synced. */
        boolean used;
        boolean removed;
        /** The last sync of this key failed (only this part of a sync, or all of it): the failure policy decides it. */
        boolean unsynced;
        long largestUnsynced;

        KeyCounts(Series series, ClientKey clientKey, long id) {
            this.series = series;
            this.clientKey = clientKey;
            this.id = id;
        }

        void lock() {
            if (!compareAndSetState(0, 1)) acquire(1);
        }

        void unlock() {
            release(1);
        }

        @Override
        protected boolean tryAcquire(int ignored) {
            return compareAndSetState(0, 1);
        }

        @Override
        protected boolean tryRelease(int ignored) {
            setState(0);
            return true;
        }

        /**
         * The window a decision at {@code now} counts in: the current aligned one, or a later one the
         * fleet or this instance already counts in (a clock that lags counts against the window already
         * begun, as the exact algorithms do). Moves the pending counts to it.
         */
        long window(long now) {
            long w = laterOf(now);
            if (!series.redisClock && pendingStart > w && pendingStart > series.start(now + RateAlgorithm.EXPIRY_MARGIN_MS)) {
                // counted in windows not begun (the window before them too, at most the current one): this clock was
                // set back; sync.lua would drop them (clock=local: this clock is the script's), so they are the current
                // window's. With clock=redis a clock set back counts on in the window begun, which may be Redis's,
                // and one that ran ahead moves back once a sync has corrected the offset (clockWentBack)
                moveBack(w);
                return w;
            }
            w = Math.max(w, pendingStart);
            if (pendingStart == w) return w;
            if (pendingStart != NONE && pendingStart + series.length(pendingStart) > now) {
                // the pending counts' window still runs on this clock and the fleet counts in a later one (a window
                // made shorter, whose stored count is named by its end; a clock that lags Redis's): they join it,
                // as sync.lua joins them and as the exact engine counts a lagging caller's; the counter's window
                // before them stays the one before when the fleet's is the next, else joins too
                join(w);
                return w;
            }
            pendingPrevious = pendingStart != NONE && pendingStart == w - series.windowMs ? pendingCurrent : 0;
            pendingCurrent = 0;
            pendingStart = w;
            return w;
        }

        /** The window holding {@code now}, or a later one the fleet counts in or this instance sent. */
        private long laterOf(long now) {
            return Math.max(series.start(now), Math.max(syncedStart, sendingStart));
        }

        /** The pending counts, of windows not begun (and the one before them), move back into window {@code w}. */
        private void moveBack(long w) {
            long to = pendingStart;
            pendingStart = w;
            pendingCurrent += pendingPrevious;
            pendingPrevious = 0;
            moved(w + 1, to);
        }

        /**
         * The pending counts, of a window over or still running on this clock, join the later window {@code w}:
         * the counter's window before them stays the one before when {@code w} is the next, else joins too. Their
         * takes then sit under other windows than their own: a give-back of one is dropped (erring strict).
         */
        private void join(long w) {
            long from = pendingStart - series.windowMs;
            long to = pendingStart;
            long previous = series.algorithm == Algorithm.FIXED_WINDOW ? 0 : pendingPrevious;
            boolean next = pendingStart == w - series.windowMs;
            pendingCurrent = next ? pendingCurrent : pendingCurrent + previous;
            pendingPrevious = next ? previous : 0;
            pendingStart = w;
            moved(from, to);
        }

        /** The offset was corrected back: a pending window not begun on the corrected clock moves back, as in {@link #window}. */
        void clockWentBack(long now, long errorMs) {
            long w = laterOf(now);
            if (pendingStart != NONE && pendingStart > w && pendingStart > series.start(now + errorMs)) moveBack(w);
        }

        /**
         * The offset was corrected forward (this instance's clock lagged Redis's): a pending window over on the
         * corrected clock joins the current one, as a lagging caller's requests count in the window begun (the
         * exact engine decides them at Redis's time), and as in {@link #window}'s join.
         */
        void clockWentForward(long now) {
            long w = laterOf(now);
            if (pendingStart != NONE && pendingStart < w) join(w);
        }

        /** Tokens counted in window {@code x}: the fleet's at the last sync, plus this instance's since. */
        long count(long x) {
            return at(syncedStart, syncedCurrent, syncedPrevious, x) + unsynced(x);
        }

        /** This instance's tokens in window {@code x} that no sync has acknowledged yet. */
        long unsynced(long x) {
            return at(sendingStart, sendingCurrent - sendingGivenCurrent, sendingPrevious - sendingGivenPrevious, x)
                    + at(pendingStart, pendingCurrent, pendingPrevious, x) - at(givenStart, givenCurrent, givenPrevious, x);
        }

        private long at(long start, long current, long previous, long x) {
            if (start == NONE) return 0;
            if (x == start) return current;
            return x == start - series.windowMs ? previous : 0;
        }

        void take(long w, long cost) {
            pendingCurrent += cost; // window(now) made pendingStart == w
            largestUnsynced = Math.max(largestUnsynced, unsynced(w));
        }

        /**
         * Gives back a take made in window {@code w} at sequence {@code takenAt}: off the pending counts while it
         * sits there; else (sent, or moved into the fleet's later window) as a give-back of window {@code w}, which
         * Redis takes off that window's count only: if the count that holds it is another (a lagging instance's
         * take joined the fleet's later window) or gone (Redis lost the key), the fleet keeps counting it, erring
         * strict, and never takes it off a count that did not hold it.
         */
        void untake(long w, long cost, long takenAt) {
            if (takenAt >= pendingSince) {
                if (pendingStart == w) {
                    pendingCurrent -= cost;
                } else if (pendingStart == w + series.windowMs) {
                    pendingPrevious -= cost;
                } // else: its window is over for every algorithm, its counts dropped with it
                return;
            }
            if (droppedFrom != NONE && takenAt >= droppedSince && takenAt < droppedBefore && w >= droppedFrom
                    && w <= droppedTo) {
                return; // its take never counted there
            }
            if (givenStart == NONE || w > givenStart) {
                givenPrevious = givenStart != NONE && w == givenStart + series.windowMs ? givenCurrent : 0;
                givenCurrent = 0;
                givenStart = w;
            }
            if (w == givenStart) {
                givenCurrent += cost;
            } else if (w == givenStart - series.windowMs) {
                givenPrevious += cost;
            } // else: a window over for every algorithm
        }

        /** The pending counts moved to other windows than their takes' own, windows {@code from} to {@code to}. */
        private void moved(long from, long to) {
            long since = pendingSince;
            sequence++;
            pendingSince = sequence;
            forgetGiveBacks(from, to, since);
        }

        /**
         * The takes made from sequence {@code since} on, in windows {@code from} to {@code to}, never reach those
         * windows' counts (Redis dropped them as of windows not begun on its clock, or this instance moved them
         * into other windows): their give-backs are dropped, else they would come off counts that never held them
         * (erring strict where one did). Several such events are kept as one, covering them all, until their
         * windows are over ({@link #snapshot}).
         */
        void forgetGiveBacks(long from, long to, long since) {
            boolean first = droppedFrom == NONE;
            droppedSince = first ? since : Math.min(droppedSince, since);
            droppedFrom = first ? from : Math.min(droppedFrom, from);
            droppedTo = first ? to : Math.max(droppedTo, to);
            droppedBefore = sequence;
            if (givenStart != NONE && givenStart >= from) {
                givenStart = NONE;
                givenCurrent = 0;
                givenPrevious = 0;
            }
        }

        boolean idle() {
            return !used && pendingCurrent == 0 && pendingPrevious == 0 && sendingStart == NONE && givenStart == NONE;
        }

        /** Whether no window this state knows of matters any more (one window after the last, two for the counter). */
        boolean expired(long now) {
            long last = Math.max(syncedStart, pendingStart);
            if (last == NONE) return true;
            return series.algorithm == Algorithm.FIXED_WINDOW ? now >= last + series.length(last)
                    : now >= last + 2 * series.windowMs;
        }

        /** Moves the pending counts to the sync about to be sent and says what it sends. */
        CountExchange.Delta snapshot(long now) {
            window(now);
            used = false;
            sendingStart = pendingStart;
            sendingCurrent = pendingCurrent;
            sendingPrevious = series.algorithm == Algorithm.FIXED_WINDOW ? 0 : pendingPrevious; // an ended fixed window matters to nobody
            pendingCurrent = 0;
            pendingPrevious = 0;
            // the give-backs, of the window sent and the one before; any other's is of a window over (or of one
            // not begun, its takes since moved back into the current one): dropped
            sendingGivenCurrent = givenStart == sendingStart ? givenCurrent : 0;
            sendingGivenPrevious = series.algorithm == Algorithm.FIXED_WINDOW ? 0
                    : givenStart == sendingStart ? givenPrevious
                    : givenStart == sendingStart - series.windowMs ? givenCurrent : 0;
            givenStart = NONE;
            givenCurrent = 0;
            givenPrevious = 0;
            sendingSince = pendingSince;
            sequence++; // every take so far is sent (or given back)
            pendingSince = sequence;
            sendingSequence = sequence;
            if (key == null) key = series.key(clientKey);
            // a calendar window's own length: sync.lua names the stored window by its end less this
            sendingLength = series.length(sendingStart);
            return new CountExchange.Delta(key, series.algorithm, sendingLength, sendingStart, sendingCurrent,
                    sendingPrevious, sendingGivenCurrent, sendingGivenPrevious);
        }

        /**
         * The sync's reply, at {@code atMillis} on the script's clock: the fleet's counts now include what was sent.
         * {@code lagged}: this sync found this instance's clock behind Redis's by more than the margin.
         *
         * @return whether Redis refused the takes as of a window not begun on its clock (they are pending again)
         */
        boolean acknowledge(CountExchange.Counts counts, long atMillis, boolean lagged, long snapshotAtLeast) {
            unsynced = false;
            boolean refused = false;
            if (droppedFrom != NONE && droppedTo < series.start(atMillis) - series.windowMs) {
                // their windows are over on the script's clock (not this instance's, which may run ahead until its
                // offset is learned again): a give-back of one comes off no count
                droppedFrom = NONE;
            }
            long start = counts.windowStart();
            if ((sendingCurrent > 0 || sendingPrevious > 0) && sendingStart > atMillis + RateAlgorithm.EXPIRY_MARGIN_MS
                    && (series.algorithm == Algorithm.FIXED_WINDOW
                            ? start == NONE || start + sendingLength <= sendingStart
                            : start != sendingStart)) {
                // sync.lua dropped the takes, of a window not begun on its clock (this instance's clock ahead): they
                // are pending again, to be counted in the current window once this instance knows Redis's time (the
                // offset corrected, they move back: clockWentBack, window), and their give-backs are dropped
                forgetGiveBacks(series.algorithm == Algorithm.FIXED_WINDOW ? sendingStart : sendingStart - series.windowMs,
                        sendingStart, sendingSince);
                if (pendingStart < sendingStart) {
                    pendingCurrent += sendingCurrent + sendingPrevious;
                } else {
                    putBackSent();
                }
                used = true;
                refused = true;
            } else if (lagged && series.algorithm == Algorithm.FIXED_WINDOW && sendingCurrent > 0
                    && sendingStart + sendingLength <= snapshotAtLeast
                    && !(start != NONE && start <= sendingStart && start + sendingLength > atMillis)) {
                // sync.lua dropped the takes, of a window over on its clock, which this instance's lagging clock still
                // ran: they are pending again, to join the window Redis is in (clockWentForward), and their give-backs
                // are dropped. (A counter's count a window old is kept, as the key's previous.)
                forgetGiveBacks(sendingStart, sendingStart, sendingSince);
                if (pendingStart != NONE && pendingStart >= sendingStart) pendingCurrent += sendingCurrent;
                used = true;
            }
            if (series.calendar != null && start != NONE) {
                // sync.lua names the key's window by its end less the length sent, which is another window's
                // when the key's is longer or shorter (the 25-hour day after a 24-hour one, March after
                // February): named by the calendar instead, from its end
                start = series.start(start + sendingLength - 1);
            }
            syncedStart = start;
            syncedCurrent = counts.current();
            syncedPrevious = counts.previous();
            sendingStart = NONE;
            sendingCurrent = 0;
            sendingPrevious = 0;
            sendingGivenCurrent = 0;
            sendingGivenPrevious = 0;
            return refused;
        }

        /** The takes sent go back among the pending counts, where the clock's advance since has left their window. */
        private void putBackSent() {
            if (pendingStart == sendingStart) {
                pendingCurrent += sendingCurrent;
                pendingPrevious += sendingPrevious;
            } else if (pendingStart == sendingStart + series.windowMs) {
                pendingPrevious += sendingCurrent;
            } // else: their windows are over
        }

        /**
         * The sync failed: the takes sent count as unsent again. They may have been added (the reply lost after
         * Redis applied them): a take sent twice makes the fleet admit less, but a give-back sent twice would
         * make it admit more, so the give-backs sent are not kept: if Redis missed them, the fleet counts
         * requests given back, erring low.
         */
        void restore() {
            if (sendingStart == NONE) return;
            putBackSent();
            if (sequence == sendingSequence) pendingSince = sendingSince; // nothing moved since: its takes are pending again
            sendingStart = NONE;
            sendingCurrent = 0;
            sendingPrevious = 0;
            sendingGivenCurrent = 0;
            sendingGivenPrevious = 0;
            used = true; // to be sent with the next sync
        }
    }
}
