package dev.sluice.internal.redis;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.Settlement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Releases of concurrency slots that Redis did not answer when they were due, sent again from a
 * thread of their own ({@code sluice-releases-<instance>}, started with the first and gone when none
 * is left) so that a slot nobody holds any more is not counted until its lease ends (30 s by default):
 * <ul>
 *   <li>a <b>release whose call failed</b> (Redis away or slower than {@code redis.timeout} when the
 *       request completed, or the node's circuit breaker open): sent again every second until Redis
 *       answers it;</li>
 *   <li>the slots of a <b>decision whose call failed</b> (decided by the failure policy): the call may
 *       still have reached Redis and taken them (a reply after {@code redis.timeout} while Redis stalled,
 *       a connection dropped after the call was written), which this instance would never learn. Each is
 *       released until Redis has answered two releases a second apart: a take still in flight may land
 *       after the first. Such a release waits up to ten leases for Redis's first answer (a Redis that
 *       stalled for longer than a lease still runs the take when it resumes), then a lease.</li>
 * </ul>
 * A release removes the slot's member from its sorted set (concurrency.lua): removing it again, or
 * before its take lands, changes nothing, so sending one more than needed is harmless. A release whose
 * call failed is given up once the slot's lease, counted from when it was handed here, has ended (the
 * slot has ended by itself); every one on {@link #close()}. At most {@link #MAX_PENDING} wait; past that a release is dropped (its slot
 * frees when its lease ends), so an outage under load grows no memory without bound.
 */
final class LateReleases implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LateReleases.class);
    /** Releases waiting at most; more are dropped. */
    static final int MAX_PENDING = 10_000;
    /** Releases per call at most (as {@code Leases} renews). */
    static final int MAX_PER_CALL = 500;
    /** How soon a release Redis did not answer is sent again, and a take's second release after its first. */
    static final long AGAIN_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How many leases a release of a take that may land late waits for Redis's first answer. */
    static final int UNCERTAIN_LEASES = 10;
    private static final long LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** Sends releases now, without handing any back here. */
    interface Sender {
        /**
         * @return which of {@code releases} Redis answered (the same order)
         * @throws RuntimeException when Redis answered none
         */
        boolean[] send(List<Settlement> releases);
    }

    private final Sender sender;
    private final Supplier<String> name;
    private final LongSupplier nanoTime;
    private final boolean background;
    private final Object lock = new Object();
    /** In the order they came; identity equality. Guarded by lock. */
    private final Set<Pending> pending = new LinkedHashSet<>();
    private final AtomicLong lastDropLog = new AtomicLong(Long.MIN_VALUE);
    /** Releases Redis answered here (each counted once, when done). */
    private final LongAdder released = new LongAdder();
    private Thread worker; // guarded by lock
    private boolean closed; // guarded by lock

    /**
     * @param sender     sends releases (the engine's settlement, without handing failures back here)
     * @param name       the instance's name, for the thread and the log
     * @param nanoTime   a monotonic clock
     * @param background whether a thread of its own sends them; {@code false}: only {@link #releaseDue()} does (tests)
     */
    LateReleases(Sender sender, Supplier<String> name, LongSupplier nanoTime, boolean background) {
        this.sender = sender;
        this.name = name;
        this.nanoTime = nanoTime;
        this.background = background;
    }

    /** A release waiting; its fields are written under the lock. */
    private static final class Pending {
        final Settlement release;
        final long leaseNanos;
        /**
         * When its slot's lease has ended by itself: given up then. For a take that may land late, ten leases
         * until Redis answers its first release, then a lease from the second: Redis stalled for longer than a
         * lease still runs the take when it resumes, and the slot's lease runs from then.
         */
        long endsAt;
        /** Answers still needed: 2 for a take that may land late, else 1. */
        int answersNeeded;
        long dueAt;

        Pending(Settlement release, long leaseNanos, long now, boolean takeUncertain) {
            this.release = release;
            this.leaseNanos = leaseNanos;
            this.endsAt = now + (takeUncertain ? UNCERTAIN_LEASES : 1) * leaseNanos;
            this.answersNeeded = takeUncertain ? 2 : 1;
            this.dueAt = now;
        }

        boolean ended(long now) {
            return now - endsAt >= 0;
        }
    }

    /**
     * Sends {@code releases} (give-backs of concurrency rules; others are ignored) from now on until Redis
     * answers them.
     *
     * @param takeUncertain the slots of a decision whose call failed (two answers a second apart), rather
     *                      than releases whose call failed (one answer)
     */
    void add(List<Settlement> releases, boolean takeUncertain) {
        long now = nanoTime.getAsLong();
        int dropped = 0;
        synchronized (lock) {
            if (closed) return;
            for (Settlement s : releases) {
                // the rule as taken: the one the release is sent as (RedisEngine), its lease the slot's
                Rule rule = s.taken().rule();
                if (s.charge() || !rule.algorithm().isConcurrency()) continue;
                if (pending.size() >= MAX_PENDING) {
                    dropped++;
                    continue;
                }
                pending.add(new Pending(s, TimeUnit.MILLISECONDS.toNanos(rule.windowMillis()), now, takeUncertain));
            }
            if (!pending.isEmpty()) {
                if (background && worker == null) startWorker(); else lock.notifyAll();
            }
        }
        if (dropped > 0) dropped(dropped);
    }

    /** Under the lock. A thread that cannot start leaves the releases for the next {@link #add}. */
    private void startWorker() {
        Thread t = new Thread(this::sendWhileAny, "sluice-releases-" + name.get());
        t.setDaemon(true);
        try {
            t.start();
        } catch (OutOfMemoryError e) { // "unable to create native thread": the request that settled must not fail
            log.warn("Sluice [{}]: no thread to send {} concurrency slot releases again: {}", name.get(), pending.size(),
                    e.toString());
            return;
        }
        worker = t;
    }

    /**
     * Sends every release due, in calls of at most {@link #MAX_PER_CALL}, and gives up those whose
     * lease has ended: what the thread does at each turn (one thread at a time: a new one starts only once
     * the last has left), or a test on an instance without one. After a call Redis did not answer, the rest
     * wait for the next turn.
     *
     * @return how many releases Redis answered
     */
    int releaseDue() {
        long now = nanoTime.getAsLong();
        List<Pending> due = new ArrayList<>();
        synchronized (lock) {
            for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
                Pending p = it.next();
                if (p.ended(now)) {
                    it.remove(); // its slot has ended by itself
                } else if (now - p.dueAt >= 0) {
                    p.dueAt = now + AGAIN_NANOS; // sent now: not again before a second, whatever this round meets
                    due.add(p);
                }
            }
        }
        int answered = 0;
        for (int from = 0; from < due.size(); from += MAX_PER_CALL) {
            List<Pending> part = due.subList(from, Math.min(due.size(), from + MAX_PER_CALL));
            List<Settlement> releases = new ArrayList<>(part.size());
            for (Pending p : part) releases.add(p.release);
            boolean[] reached;
            try {
                reached = sender.send(releases);
            } catch (RuntimeException e) {
                log.debug("Sluice [{}]: releasing {} concurrency slots failed again (tried each second until their"
                        + " leases end): {}", name.get(), due.size() - from, e.getMessage());
                again(due.subList(from, due.size())); // Redis is away: the rest wait a second
                break;
            }
            long at = nanoTime.getAsLong();
            synchronized (lock) {
                for (int j = 0; j < part.size(); j++) {
                    Pending p = part.get(j);
                    p.dueAt = at + AGAIN_NANOS;
                    if (!reached[j]) continue;
                    answered++;
                    if (--p.answersNeeded == 0) {
                        pending.remove(p);
                        released.increment();
                    } else {
                        p.endsAt = p.dueAt + p.leaseNanos; // its take landed by the next answer, its lease from then
                    }
                }
                if (closed) break;
            }
        }
        return answered;
    }

    /** Not before a second from now (a failed call may have taken long). */
    private void again(List<Pending> notSent) {
        long at = nanoTime.getAsLong();
        synchronized (lock) {
            for (Pending p : notSent) p.dueAt = at + AGAIN_NANOS;
        }
    }

    /** Slot releases sent again here until Redis answered them, since start. */
    long released() {
        return released.sum();
    }

    /** Releases waiting now. */
    int pending() {
        synchronized (lock) {
            return pending.size();
        }
    }

    private void sendWhileAny() {
        try {
            while (true) {
                try {
                    releaseDue();
                } catch (RuntimeException e) {
                    log.debug("Sluice [{}]: releasing concurrency slots failed: {}", name.get(), e.toString());
                }
                synchronized (lock) {
                    if (closed || pending.isEmpty()) return;
                    long now = nanoTime.getAsLong();
                    long wait = AGAIN_NANOS;
                    for (Pending p : pending) wait = Math.min(wait, p.dueAt - now);
                    if (wait > 0) TimeUnit.NANOSECONDS.timedWait(lock, wait);
                    if (closed) return;
                }
            }
        } catch (InterruptedException e) {
            // stopped: what waits goes with the next add's thread
        } finally {
            synchronized (lock) {
                if (worker == Thread.currentThread()) worker = null; // whatever ended it, the next add starts another
            }
        }
    }

    private void dropped(int count) {
        long t = nanoTime.getAsLong();
        long last = lastDropLog.get();
        if ((last == Long.MIN_VALUE || t - last >= LOG_INTERVAL_NANOS) && lastDropLog.compareAndSet(last, t)) {
            log.warn("Sluice [{}]: {} concurrency slot releases Redis did not answer are already waiting to be sent"
                    + " again; {} more dropped: those slots free when their leases end. Logged at most once a minute.",
                    name.get(), MAX_PENDING, count);
        }
    }

    /**
     * Gives up every release still waiting (their slots free when their leases end) and stops the thread,
     * waiting up to 2 s for a call it is making.
     */
    @Override
    public void close() {
        Thread stopping;
        synchronized (lock) {
            closed = true;
            pending.clear();
            stopping = worker;
            lock.notifyAll();
        }
        if (stopping != null && stopping != Thread.currentThread()) {
            try {
                stopping.join(TimeUnit.SECONDS.toMillis(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
