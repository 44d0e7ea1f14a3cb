package dev.sluice.internal.cache;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Remembers Redis's denials so that a client who keeps knocking while denied costs Redis almost
 * nothing (like Envoy's over-limit cache or rate-limiter-flexible's in-memory block). It sits in
 * front of the failure handling ({@code FailoverLimiter}), so an answer from memory is neither a
 * success nor a failure of Redis: a denied client's flood can never keep the circuit breaker from
 * opening, nor make other requests pay the timeout of a Redis that is away.
 *
 * <p>Once Redis has denied rule R for client K with {@code retryAfter} r, this instance answers
 * the identical request (same rules and client keys, same costs) as denied, without calling
 * anything, until r has passed, under two conditions that keep it following Redis:
 * <ol>
 *   <li><b>Confirmed recently.</b> A remembered denial is answered without asking Redis for at
 *       most {@code revalidateAfter} (1 s by default) after Redis gave it. The next identical request
 *       after that goes to Redis: if Redis denies again, the denial is remembered afresh; if it
 *       admits (Redis restarted empty, failed over to a replica without the writes, or an operator
 *       flushed it to lift every limit), the denial is forgotten. So decisions follow Redis's state
 *       within about {@code revalidateAfter}, and a flood from one denied client costs Redis about
 *       one call per {@code revalidateAfter} (above 99.9 % saved at 1,000 requests a second).</li>
 *   <li><b>Forgotten after an outage.</b> While Redis is away ({@code redisAvailable} false) a
 *       remembered denial stays in force until its retry-after, confirmed or not: the client was
 *       denied and nothing can have given it more. When Redis answers again after an outage,
 *       every remembered denial is forgotten ({@link #clear()}), since Redis may be back without its
 *       data.</li>
 * </ol>
 *
 * <h2>Why this is exact while Redis keeps its data</h2>
 * <ol>
 *   <li><b>A denial changes nothing.</b> A denied request takes nothing from any rule (the engine's
 *       contract, on Redis Cluster too, where a request's rules are separate calls and what the
 *       earlier ones took is given back when a later one denies), so a denial answered here leaves
 *       every later decision as it would have been.</li>
 *   <li><b>Capacity comes back only with time, and {@code retryAfter} is exact</b> for all six
 *       algorithms (see {@link #exactFor}); anything admitted meanwhile only pushes that moment later.
 *       So the cache never denies a request that Redis would admit either. A request of a different
 *       cost goes to Redis: a smaller one may fit, and a larger one's retry-after is longer. The one
 *       other way capacity comes back is a give-back ({@code rule.<r>.count}): one made through this
 *       instance forgets the client's denial of that rule; one made by another instance is seen
 *       within {@code revalidateAfter}, when the denial is next confirmed with Redis.</li>
 *   <li><b>One timeline.</b> With {@code clock=redis} the script measures {@code retryAfter} on
 *       Redis's clock from a moment after this instance sent the request; the cache starts the wait
 *       at the send, on its own monotonic clock, minus {@link #MARGIN_NANOS} for millisecond
 *       rounding, so its deadline is never later than Redis's. With {@code clock=local} nothing is
 *       cached: a faster clock elsewhere in the fleet could make the wait shorter than this
 *       instance's figure.</li>
 * </ol>
 *
 * <p><b>Memory</b>: at most {@code maxEntries} entries (a few hundred bytes each); when full, expired
 * entries are swept and, if it is still full, new denials are simply not remembered. <b>Cost per
 * request</b> when nothing is remembered: one volatile read; otherwise one hash lookup per rule.
 */
public final class DeniedClientCache implements RateLimiter {

    /** Taken off every deadline: Redis's clock is read in whole milliseconds and waits are rounded up. */
    static final long MARGIN_NANOS = 2_000_000L;

    /** Don't sweep a full cache more often than this, so a flood of distinct keys cannot make each insert O(n). */
    private static final long SWEEP_INTERVAL_NANOS = 100_000_000L;

    private final RateLimiter next;
    private final boolean redisClock;
    private final int maxEntries;
    private final long revalidateNanos;
    private final BooleanSupplier redisAvailable;
    private final LongSupplier nanoTime;

    /** Rule name -> client key -> the denial. */
    private final ConcurrentHashMap<String, ConcurrentHashMap<ClientKey, Denial>> byRule = new ConcurrentHashMap<>();
    private final AtomicInteger size = new AtomicInteger();
    private final AtomicLong lastSweep = new AtomicLong(Long.MIN_VALUE / 2);
    private final LongAdder hits = new LongAdder();

    /**
     * @param next            the failure handling in front of the Redis engine
     * @param redisClock      whether the scripts read Redis's clock ({@code clock=redis}); with
     *                        {@code false} nothing is cached (see the class comment)
     * @param maxEntries      at most this many (rule, client) denials are held
     * @param revalidateAfter nanoseconds a denial is answered without asking Redis again while it answers
     * @param redisAvailable  whether Redis is answering now (no failure since its last success)
     * @param nanoTime        a monotonic clock in nanoseconds; tests pass a fake one
     */
    public DeniedClientCache(RateLimiter next, boolean redisClock, int maxEntries, long revalidateAfter,
                             BooleanSupplier redisAvailable, LongSupplier nanoTime) {
        if (maxEntries < 1) throw new IllegalArgumentException("maxEntries must be at least 1: " + maxEntries);
        if (revalidateAfter < 1) throw new IllegalArgumentException("revalidateAfter must be positive: " + revalidateAfter);
        this.next = next;
        this.redisClock = redisClock;
        this.maxEntries = maxEntries;
        this.revalidateNanos = revalidateAfter;
        this.redisAvailable = redisAvailable;
        this.nanoTime = nanoTime;
    }

    /**
     * Whether a denial of this algorithm may be answered locally until its {@code retryAfter}
     * (with {@code clock=redis}): its capacity comes back only with time and its retry-after is
     * exact (see the class comment). An algorithm added later must make this case explicitly.
     */
    public static boolean exactFor(Algorithm algorithm) {
        return switch (algorithm) {
            case FIXED_WINDOW, SLIDING_WINDOW_COUNTER, SLIDING_WINDOW_LOG, TOKEN_BUCKET, LEAKY_BUCKET, GCRA -> true;
            // a slot frees when a request completes, on any instance, at any moment: never answered from memory
            case CONCURRENCY -> false;
        };
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        Denial unconfirmed = null;
        if (size.get() > 0 && !acquisitions.isEmpty()) {
            long now = nanoTime.getAsLong();
            for (int i = 0, n = acquisitions.size(); i < n; i++) {
                Denial d = lookup(acquisitions.get(i), acquisitions, now);
                if (d == null) continue;
                if (now - d.confirmedAt < revalidateNanos || !redisAvailable.getAsBoolean()) {
                    hits.increment();
                    return d.replay(now);
                }
                unconfirmed = d;
                break;
            }
        }
        long sent = nanoTime.getAsLong();
        Decision decision = next.decide(acquisitions);
        if (byRedis(decision)) {
            if (!decision.allowed()) {
                remember(acquisitions, decision, sent);
            } else if (unconfirmed != null) {
                forget(acquisitions); // Redis admits it now: whatever was remembered is over
            }
            return decision;
        }
        // Redis failed just now: a client it denied stays denied until its retry-after
        long now = nanoTime.getAsLong();
        if (unconfirmed != null && now - unconfirmed.until < 0) {
            hits.increment();
            return unconfirmed.replay(now);
        }
        return decision;
    }

    /** Requests answered from the cache, without a call, since start. */
    public long hits() {
        return hits.sum();
    }

    /** Denials held now (expired ones included until swept). */
    public int size() {
        return size.get();
    }

    /** Forgets every remembered denial (after an outage; or an operator's request through JMX). */
    public void clear() {
        for (Map<ClientKey, Denial> clients : byRule.values()) {
            for (Iterator<Map.Entry<ClientKey, Denial>> it = clients.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<ClientKey, Denial> e = it.next();
                if (clients.remove(e.getKey(), e.getValue())) size.decrementAndGet();
            }
        }
    }

    /**
     * Settles below (only admitted requests take, and those were decided there), and forgets the
     * denials of the rules and clients given back to: a give-back is the one way, besides time, that
     * capacity comes back, so a remembered denial may no longer hold (a charge only takes more).
     */
    @Override
    public void settle(List<Settlement> settlements) {
        try {
            next.settle(settlements);
        } finally {
            if (size.get() > 0) {
                for (int i = 0, n = settlements.size(); i < n; i++) {
                    Acquisition a = settlements.get(i).acquisition();
                    if (!settlements.get(i).charge()) forget(a.rule().name(), a.clientKey());
                }
            }
        }
    }

    @Override
    public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        return next.renew(acquisitions, taken);
    }

    /** Forgets the client's denial of this rule here, then its state below (Redis, the backstop). */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        forget(rule.name(), clientKey);
        next.reset(rule, clientKey);
    }

    private static boolean byRedis(Decision decision) {
        List<RuleDecision> rules = decision.rules();
        for (int i = 0, n = rules.size(); i < n; i++) {
            if (rules.get(i).source() != RuleDecision.Source.REDIS) return false;
        }
        return true;
    }

    /** The remembered denial that covers this request through acquisition {@code a}, else null. */
    private Denial lookup(Acquisition a, List<Acquisition> request, long now) {
        ConcurrentHashMap<ClientKey, Denial> clients = byRule.get(a.rule().name());
        if (clients == null) return null;
        Denial d = clients.get(a.clientKey());
        if (d == null) return null;
        if (now - d.until >= 0) {
            if (clients.remove(a.clientKey(), d)) size.decrementAndGet();
            return null;
        }
        return sameRequest(d.request, request) ? d : null;
    }

    private void remember(List<Acquisition> request, Decision decision, long sent) {
        if (!redisClock) return;
        List<RuleDecision> rules = decision.rules();
        int n = rules.size();
        if (n != request.size()) return;
        List<Acquisition> copy = null;
        for (int i = 0; i < n; i++) {
            RuleDecision r = rules.get(i);
            if (r.allowed() || r.rule().dryRun() || !exactFor(r.rule().algorithm())) continue; // a shadow rule's denial refused nothing
            long until = sent + r.retryAfterMs() * 1_000_000L - MARGIN_NANOS;
            if (until - sent <= 0) continue;
            Acquisition a = request.get(i);
            ConcurrentHashMap<ClientKey, Denial> clients = byRule.computeIfAbsent(a.rule().name(),
                    k -> new ConcurrentHashMap<>());
            Denial previous = clients.get(a.clientKey());
            if (previous == null && !reserveSlot(sent)) return;
            if (copy == null) copy = List.copyOf(request);
            Denial fresh = new Denial(until, sent, copy, rules);
            if (previous != null ? !clients.replace(a.clientKey(), previous, fresh)
                    : clients.putIfAbsent(a.clientKey(), fresh) != null) {
                if (previous == null) size.decrementAndGet(); // lost a race with another remember: keep theirs
            }
        }
    }

    private void forget(List<Acquisition> request) {
        for (int i = 0, n = request.size(); i < n; i++) {
            Acquisition a = request.get(i);
            forget(a.rule().name(), a.clientKey());
        }
    }

    private void forget(String rule, ClientKey clientKey) {
        ConcurrentHashMap<ClientKey, Denial> clients = byRule.get(rule);
        if (clients != null && clients.remove(clientKey) != null) size.decrementAndGet();
    }

    /** Claims room for one entry, sweeping expired ones when full; false if there is none. */
    private boolean reserveSlot(long now) {
        while (true) {
            int s = size.get();
            if (s >= maxEntries) {
                long last = lastSweep.get();
                if (now - last < SWEEP_INTERVAL_NANOS || !lastSweep.compareAndSet(last, now)) return false;
                sweep(now);
                if (size.get() >= maxEntries) return false;
                continue;
            }
            if (size.compareAndSet(s, s + 1)) return true;
        }
    }

    private void sweep(long now) {
        for (Map<ClientKey, Denial> clients : byRule.values()) {
            for (Iterator<Map.Entry<ClientKey, Denial>> it = clients.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<ClientKey, Denial> e = it.next();
                if (now - e.getValue().until >= 0 && clients.remove(e.getKey(), e.getValue())) {
                    size.decrementAndGet();
                }
            }
        }
    }

    /**
     * Same rules (by name and parameters), client keys and costs, in the same order, so the denied
     * decision's figures describe this request exactly.
     */
    private static boolean sameRequest(List<Acquisition> denied, List<Acquisition> request) {
        int n = denied.size();
        if (n != request.size()) return false;
        for (int i = 0; i < n; i++) {
            Acquisition d = denied.get(i);
            Acquisition r = request.get(i);
            if (d.cost() != r.cost() || !d.clientKey().equals(r.clientKey())
                    || (d.rule() != r.rule() && !d.rule().equals(r.rule()))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void close() {
        clear();
        next.close();
    }

    /** One denial of one (rule, client), with the whole decision it came in, to replay with its waits shortened. */
    private static final class Denial {
        final long until;
        final long confirmedAt;
        final List<Acquisition> request;
        final List<RuleDecision> rules;

        Denial(long until, long confirmedAt, List<Acquisition> request, List<RuleDecision> rules) {
            this.until = until;
            this.confirmedAt = confirmedAt;
            this.request = request;
            this.rules = rules;
        }

        Decision replay(long now) {
            long elapsedMs = (now - confirmedAt) / 1_000_000L;
            List<RuleDecision> out = new ArrayList<>(rules.size());
            for (RuleDecision r : rules) {
                long retry = r.allowed() ? 0 : Math.max(1, r.retryAfterMs() - elapsedMs);
                long reset = Math.max(retry, r.resetMs() - elapsedMs);
                // an allowed rule's time until more quota: shortened too, but a full quota stays full (0)
                long next = r.allowed() ? Math.max(Math.min(1, r.nextMs()), r.nextMs() - elapsedMs) : retry;
                out.add(new RuleDecision(r.rule(), r.allowed(), r.remaining(), retry, reset, next, r.delayMs(), null,
                        RuleDecision.Source.CACHE, r.windowMs()));
            }
            return Decision.of(out);
        }
    }
}
