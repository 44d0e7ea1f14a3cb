package dev.sluice.internal.lease;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RenewalIncomplete;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The concurrency slots ({@code algorithm=concurrency}) that requests of this instance hold while they
 * run, and their renewal.
 *
 * <p>A slot is a lease that ends {@code lease} after it was taken or last renewed, so that the slots
 * of an instance that dies free by themselves. This instance renews every slot it holds when a third
 * of its lease has passed since it was taken or last renewed: all the slots due at once in one
 * {@link RateLimiter#renew} (one script call on standalone Redis and Sentinel, one per slot on a
 * Cluster), from one daemon thread per limiter ({@code sluice-leases-<instance>}), started with the
 * first slot: never a timer per request. A slot whose lease ended before it was renewed (this instance
 * stalled, or Redis was away, for two thirds of a lease: a failed renewal is tried again every second) is not taken back, as it may have
 * been counted free already: it is counted in {@link #lost()}, logged (at most once a minute), and its
 * request runs on without it.
 *
 * <p>A request's slots are {@link Held held} from its admission until it completes, when
 * {@link Held#release()} hands over their releases (give-backs of the concurrency rules) for the
 * caller to settle with its other settlements in one call. {@link #close()} (undeploy) releases every
 * slot still held.
 */
public final class Leases implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Leases.class);
    /** The renewer checks for due slots at least this often, and at most this often. */
    private static final long MAX_TICK_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long MIN_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Slots renewed per call at most: a call's keys and reply stay small. */
    static final int MAX_PER_CALL = 500;
    private static final long LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);
    /** How soon a failed renewal is tried again (a sixth of the lease, if shorter). */
    private static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final RateLimiter limiter;
    private final Supplier<String> name;
    private final LongSupplier nanoTime;
    private final boolean background;
    private final Set<Held> held = ConcurrentHashMap.newKeySet();
    private final AtomicInteger slots = new AtomicInteger();
    private final LongAdder lost = new LongAdder();
    private final LongAdder renewed = new LongAdder();
    private final AtomicLong lastLostLog = new AtomicLong(Long.MIN_VALUE);
    /** Written under the lock; read without it on every hold. */
    private volatile Thread renewer;
    private boolean closed; // guarded by this

    /**
     * @param limiter  where slots are renewed and released (the limiter stack's top)
     * @param name     the instance's name, for the thread and the log
     * @param nanoTime a monotonic clock
     * @param background whether a thread of its own renews the slots; {@code false}: only {@link #renewDue()}
     *                 does (tests drive it)
     */
    public Leases(RateLimiter limiter, Supplier<String> name, LongSupplier nanoTime, boolean background) {
        this.limiter = limiter;
        this.name = name;
        this.nanoTime = nanoTime;
        this.background = background;
    }

    /**
     * Holds the concurrency slots that {@code decision} took for {@code acquisitions} (the same order),
     * renewing them until {@link Held#release()}.
     *
     * @return what the request holds, or {@code null} when it took no slot
     */
    public Held hold(List<Acquisition> acquisitions, Decision decision) {
        List<RuleDecision> rules = decision.rules();
        List<Acquisition> slotAcquisitions = null;
        List<RuleDecision> slotTakes = null;
        long shortestLeaseMs = Long.MAX_VALUE;
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (!r.taken() || !r.rule().algorithm().isConcurrency()) continue;
            if (slotAcquisitions == null) {
                slotAcquisitions = new ArrayList<>(2);
                slotTakes = new ArrayList<>(2);
            }
            slotAcquisitions.add(acquisitions.get(i));
            slotTakes.add(r);
            shortestLeaseMs = Math.min(shortestLeaseMs, acquisitions.get(i).rule().windowMillis());
        }
        if (slotAcquisitions == null) return null;
        long now = nanoTime.getAsLong();
        Held h = new Held(slotAcquisitions, slotTakes, TimeUnit.MILLISECONDS.toNanos(shortestLeaseMs) / 3, now);
        held.add(h);
        slots.addAndGet(slotAcquisitions.size());
        if (background) {
            if (renewer == null) startRenewer();
            // the renewer looks at least once a second: a lease under 3 s could be due before it looks again
            if (h.renewEveryNanos < MAX_TICK_NANOS) wakeRenewer();
        }
        return h;
    }

    /** The slots a request holds, from its admission until it completes. */
    public final class Held {
        private final List<Acquisition> acquisitions;
        private final List<RuleDecision> taken;
        private final long renewEveryNanos;
        private final boolean[] gone;
        private final AtomicBoolean released = new AtomicBoolean();
        private volatile long renewedAt;

        private Held(List<Acquisition> acquisitions, List<RuleDecision> taken, long renewEveryNanos, long now) {
            this.acquisitions = acquisitions;
            this.taken = taken;
            this.renewEveryNanos = renewEveryNanos;
            this.gone = new boolean[acquisitions.size()];
            this.renewedAt = now;
        }

        /**
         * Stops renewing this request's slots and hands over their releases, for the caller to settle
         * ({@link RateLimiter#settle}); the first call only, later ones get nothing.
         */
        public List<Settlement> release() {
            if (!released.compareAndSet(false, true)) return List.of();
            held.remove(this);
            slots.addAndGet(-acquisitions.size());
            List<Settlement> releases = new ArrayList<>(acquisitions.size());
            for (int i = 0; i < acquisitions.size(); i++) {
                releases.add(Settlement.giveBack(acquisitions.get(i), taken.get(i)));
            }
            return releases;
        }

        /** Releases the slots now (for a caller with nothing else to settle). */
        public void releaseNow() {
            List<Settlement> releases = release();
            if (!releases.isEmpty()) settle(releases);
        }

        boolean due(long now) {
            return !released.get() && now - renewedAt >= renewEveryNanos;
        }

        /**
         * A renewal that failed (Redis did not answer) is tried again in a second (a sixth of the lease if
         * shorter), not a third of a lease later: the slot is lost only if its renewals fail for two thirds
         * of its lease.
         */
        void retrySoon(long now) {
            renewedAt = now - renewEveryNanos + Math.min(RETRY_NANOS, renewEveryNanos / 2);
        }
    }

    /**
     * Renews every slot whose renewal is due (a third of its lease since it was taken or last renewed),
     * in as few calls as the limiter allows: what the renewer thread does at each turn.
     *
     * @return how many slots were renewed
     */
    public int renewDue() {
        long now = nanoTime.getAsLong();
        List<Held> due = new ArrayList<>();
        List<Integer> index = new ArrayList<>();
        List<Acquisition> acquisitions = new ArrayList<>();
        List<RuleDecision> taken = new ArrayList<>();
        for (Held h : held) {
            if (!h.due(now)) continue;
            h.renewedAt = now;
            for (int i = 0; i < h.acquisitions.size(); i++) {
                if (h.gone[i]) continue;
                due.add(h);
                index.add(i);
                acquisitions.add(h.acquisitions.get(i));
                taken.add(h.taken.get(i));
            }
        }
        int count = 0;
        for (int from = 0; from < acquisitions.size(); from += MAX_PER_CALL) {
            int to = Math.min(acquisitions.size(), from + MAX_PER_CALL);
            boolean[] kept;
            boolean[] reached = null; // null: all
            try {
                kept = limiter.renew(acquisitions.subList(from, to), taken.subList(from, to));
            } catch (RenewalIncomplete partly) {
                log.debug("Sluice [{}]: some of {} leases not renewed: {}", name.get(), to - from, partly.getMessage());
                kept = partly.held();
                reached = partly.reached();
            } catch (RuntimeException e) {
                log.debug("Sluice [{}]: renewing {} leases failed: {}", name.get(), to - from, e.getMessage());
                for (int j = from; j < to; j++) due.get(j).retrySoon(now);
                continue;
            }
            for (int j = 0; j < kept.length; j++) {
                Held h = due.get(from + j);
                if (reached != null && !reached[j]) {
                    h.retrySoon(now);
                } else if (kept[j]) {
                    count++;
                } else if (!h.released.get()) {
                    h.gone[index.get(from + j)] = true;
                    lost(h.acquisitions.get(index.get(from + j)));
                }
            }
        }
        renewed.add(count);
        return count;
    }

    private void lost(Acquisition a) {
        lost.increment();
        long t = nanoTime.getAsLong();
        long last = lastLostLog.get();
        if ((last == Long.MIN_VALUE || t - last >= LOG_INTERVAL_NANOS) && lastLostLog.compareAndSet(last, t)) {
            log.warn("Sluice [{}]: a concurrency slot of rule {} ended before this instance renewed it (it stalled, or"
                    + " Redis was away, for two thirds of the lease, {}): its request runs on without a slot, so the"
                    + " rule's clients may have more in flight than the limit until it completes; raise"
                    + " rule.{}.lease. Counted in LeasesLost; logged at most once a minute.", name.get(),
                    a.rule().name(), a.rule().lease(), a.rule().name());
        }
    }

    private void settle(List<Settlement> releases) {
        try {
            limiter.settle(releases);
        } catch (RuntimeException e) {
            log.debug("Sluice [{}]: releasing slots failed (they free when their leases end): {}", name.get(), e.getMessage());
        }
    }

    /** Slots held now by this instance's requests. */
    public int slotsHeld() {
        return slots.get();
    }

    /** Slots whose lease ended before they could be renewed, since start. */
    public long lost() {
        return lost.sum();
    }

    /** Renewals made since start. */
    public long renewed() {
        return renewed.sum();
    }

    private synchronized void wakeRenewer() {
        notifyAll();
    }

    private synchronized void startRenewer() {
        if (renewer != null || closed) return;
        renewer = new Thread(this::renewWhileOpen, "sluice-leases-" + name.get());
        renewer.setDaemon(true);
        renewer.start();
    }

    private void renewWhileOpen() {
        while (true) {
            synchronized (this) {
                if (closed) return;
            }
            try {
                renewDue();
            } catch (RuntimeException e) {
                log.debug("Sluice [{}]: renewing leases failed: {}", name.get(), e.toString());
            }
            long wait = MAX_TICK_NANOS;
            long now = nanoTime.getAsLong();
            for (Held h : held) wait = Math.min(wait, h.renewedAt + h.renewEveryNanos - now);
            wait = Math.max(MIN_TICK_NANOS, wait);
            try {
                synchronized (this) {
                    if (closed) return;
                    TimeUnit.NANOSECONDS.timedWait(this, wait);
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Stops the renewer and releases every slot still held (undeploy: their requests are over). */
    @Override
    public void close() {
        Thread stopping;
        synchronized (this) {
            closed = true;
            stopping = renewer;
            notifyAll();
        }
        if (stopping != null) {
            try {
                stopping.join(TimeUnit.SECONDS.toMillis(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        List<Settlement> releases = new ArrayList<>();
        for (Held h : held) releases.addAll(h.release());
        if (!releases.isEmpty()) settle(releases);
    }
}
