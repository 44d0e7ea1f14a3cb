package dev.sluice.internal.cache;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Remembers Redis's denials so that a client who keeps knocking while denied costs Redis nothing
 * (like Envoy's over-limit cache or rate-limiter-flexible's in-memory block): once Redis has
 * denied rule R for client K at cost c with {@code retryAfter} r, this instance answers every
 * request of that client for the same rules, at cost c or more, as denied until r has passed,
 * without a Redis call. A decorator around the Redis engine; it only ever denies.
 *
 * <h2>Why this is exact (neither more nor less than Redis alone would admit)</h2>
 * For a rule it caches, three facts hold:
 * <ol>
 *   <li><b>A denial changes nothing.</b> The engine's contract ({@code dev.sluice.internal.algorithm}:
 *       "a denied request never writes anything"): a denied request takes nothing from any rule.
 *       So a denial answered here instead of in Redis leaves every later decision as it would
 *       have been: the cache can never admit more than Redis alone.</li>
 *   <li><b>Capacity comes back only with time, and {@code retryAfter} is exact.</b> For all six
 *       algorithms a client's capacity grows only as time passes and shrinks only when a request
 *       is admitted (here or on another instance), and the scripts compute {@code retryAfter} as
 *       the earliest whole millisecond at which a request of the same cost fits if nothing else
 *       is admitted meanwhile (the token bucket's refill, GCRA's and the leaky bucket's drain,
 *       the fixed window's end, the log's oldest entry leaving, the sliding-window-counter's
 *       previous window weighing less). Anything admitted meanwhile only pushes that moment
 *       later. So the cache never denies a request that Redis would have admitted either. A
 *       request that can never fit (cost above the capacity) is denied for a window, which is
 *       right whenever it is asked.</li>
 *   <li><b>One timeline.</b> With {@code clock=redis} the script measures {@code retryAfter}
 *       on Redis's clock from a moment after this instance sent the request. The cache starts
 *       the wait at the send (its own {@link System#nanoTime() monotonic} clock, never its wall
 *       clock) and subtracts {@link #MARGIN_NANOS} for millisecond rounding, so its deadline is
 *       never later than Redis's. Wall-clock skew between the instance and Redis plays no part.</li>
 * </ol>
 * It is <em>not</em> exact, so nothing is cached, with {@code clock=local}: each instance then
 * computes windows and refills on its own wall clock, and a faster clock elsewhere in the fleet
 * can advance a bucket's refill time or roll a window earlier than this instance's
 * {@code retryAfter} says; the cache would deny for up to the fleet's clock skew longer than
 * Redis would (still never admitting more).
 *
 * <p>Requests that go to Redis even while their client is cached: a request of smaller cost (it
 * may fit where the denied one did not), and a request with another set of rules or client keys
 * than the denied one (the other rules' figures for the headers are not known). A multi-rule
 * request with the same rules and keys is answered from the cache, with every rule's figures as
 * Redis gave them, the waits shortened by the time elapsed.
 *
 * <p>What can still make it deny longer than Redis would: someone deleting the key in Redis by
 * hand, or a failover to a Redis whose clock is ahead; both are bounded by one {@code retryAfter}.
 *
 * <p><b>Memory</b>: at most {@code maxEntries} entries (a few hundred bytes each: the key and the
 * denied {@link Decision}); when full, expired entries are swept and, if it is still full, new
 * denials are simply not cached (they go to Redis as before). Expired entries are dropped when
 * next looked up. <b>Cost per request</b> when nothing is cached: one hash lookup per rule, no
 * allocation, no lock.
 */
public final class DeniedClientCache implements RateLimiter {

    /** Taken off every deadline: Redis's clock is read in whole milliseconds and waits are rounded up. */
    static final long MARGIN_NANOS = 2_000_000L;

    /** Don't sweep a full cache more often than this, so a flood of distinct keys cannot make each insert O(n). */
    private static final long SWEEP_INTERVAL_NANOS = 100_000_000L;

    private final RateLimiter redis;
    private final boolean redisClock;
    private final int maxEntries;
    private final LongSupplier nanoTime;

    /** Rule name -> client key -> the denial. */
    private final ConcurrentHashMap<String, ConcurrentHashMap<String, Denial>> byRule = new ConcurrentHashMap<>();
    private final AtomicInteger size = new AtomicInteger();
    private final AtomicLong lastSweep = new AtomicLong(Long.MIN_VALUE / 2);
    private final AtomicLong hits = new AtomicLong();

    /**
     * @param redis      the Redis engine (its denials are what is cached)
     * @param redisClock whether the engine's scripts read Redis's clock ({@code clock=redis}); with
     *                   {@code false} nothing is cached (see the class comment)
     * @param maxEntries at most this many (rule, client) denials are held
     */
    public DeniedClientCache(RateLimiter redis, boolean redisClock, int maxEntries) {
        this(redis, redisClock, maxEntries, System::nanoTime);
    }

    /** @param nanoTime a monotonic clock in nanoseconds; tests pass a fake one */
    DeniedClientCache(RateLimiter redis, boolean redisClock, int maxEntries, LongSupplier nanoTime) {
        if (maxEntries < 1) throw new IllegalArgumentException("maxEntries must be at least 1: " + maxEntries);
        this.redis = redis;
        this.redisClock = redisClock;
        this.maxEntries = maxEntries;
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
        };
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        if (!acquisitions.isEmpty() && !byRule.isEmpty()) {
            long now = nanoTime.getAsLong();
            for (int i = 0, n = acquisitions.size(); i < n; i++) {
                Decision cached = lookup(acquisitions.get(i), acquisitions, now);
                if (cached != null) {
                    hits.incrementAndGet();
                    return cached;
                }
            }
        }
        long sent = nanoTime.getAsLong();
        Decision decision = redis.decide(acquisitions);
        if (!decision.allowed()) {
            remember(acquisitions, decision, sent);
        }
        return decision;
    }

    /** Requests answered from the cache, without Redis, since start. */
    public long hits() {
        return hits.get();
    }

    /** Denials held now (expired ones included until swept). */
    public int size() {
        return size.get();
    }

    /** The cached denial that covers this request through acquisition {@code a}, replayed; else null. */
    private Decision lookup(Acquisition a, List<Acquisition> request, long now) {
        ConcurrentHashMap<String, Denial> clients = byRule.get(a.rule().name());
        if (clients == null) return null;
        Denial d = clients.get(a.clientKey());
        if (d == null) return null;
        if (now - d.until >= 0) {
            if (clients.remove(a.clientKey(), d)) size.decrementAndGet();
            return null;
        }
        if (a.cost() < d.cost || !sameRequest(d.request, request)) return null;
        return d.replay(now);
    }

    private void remember(List<Acquisition> request, Decision decision, long sent) {
        if (!redisClock) return;
        List<RuleDecision> rules = decision.rules();
        if (rules.size() != request.size()) return;
        for (int i = 0; i < rules.size(); i++) {
            RuleDecision r = rules.get(i);
            if (r.allowed() || r.source() != RuleDecision.Source.REDIS || !exactFor(r.rule().algorithm())) continue;
            long until = sent + r.retryAfterMs() * 1_000_000L - MARGIN_NANOS;
            if (until - sent <= 0) continue;
            if (!reserveSlot(sent)) return;
            Acquisition a = request.get(i);
            Denial fresh = new Denial(until, a.cost(), List.copyOf(request), rules, sent);
            Denial previous = byRule.computeIfAbsent(a.rule().name(), k -> new ConcurrentHashMap<>())
                    .put(a.clientKey(), fresh);
            if (previous != null) size.decrementAndGet();
        }
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
        for (Map<String, Denial> clients : byRule.values()) {
            for (Iterator<Map.Entry<String, Denial>> it = clients.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, Denial> e = it.next();
                if (now - e.getValue().until >= 0 && clients.remove(e.getKey(), e.getValue())) {
                    size.decrementAndGet();
                }
            }
        }
    }

    /**
     * Same rules (by name and parameters) and client keys in the same order, so the denied
     * decision's figures describe this request too. Costs may differ: the denying rule's was
     * checked by the caller, and the others' do not matter to a request that is denied.
     */
    private static boolean sameRequest(List<Acquisition> denied, List<Acquisition> request) {
        int n = denied.size();
        if (n != request.size()) return false;
        for (int i = 0; i < n; i++) {
            Acquisition d = denied.get(i);
            Acquisition r = request.get(i);
            if (!d.clientKey().equals(r.clientKey()) || (d.rule() != r.rule() && !d.rule().equals(r.rule()))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public void close() {
        redis.close();
    }

    /** One denial of one (rule, client), with the whole decision it came in, to replay with its waits shortened. */
    private static final class Denial {
        final long until;
        final long cost;
        final List<Acquisition> request;
        final List<RuleDecision> rules;
        final long decidedAt;

        Denial(long until, long cost, List<Acquisition> request, List<RuleDecision> rules, long decidedAt) {
            this.until = until;
            this.cost = cost;
            this.request = request;
            this.rules = rules;
            this.decidedAt = decidedAt;
        }

        Decision replay(long now) {
            long elapsedMs = (now - decidedAt) / 1_000_000L;
            List<RuleDecision> out = new ArrayList<>(rules.size());
            for (RuleDecision r : rules) {
                long retry = r.allowed() ? 0 : Math.max(1, r.retryAfterMs() - elapsedMs);
                long reset = Math.max(retry, r.resetMs() - elapsedMs);
                // an allowed rule's time until more quota: shortened too, but a full quota stays full (0)
                long next = r.allowed() ? Math.max(Math.min(1, r.nextMs()), r.nextMs() - elapsedMs) : retry;
                out.add(new RuleDecision(r.rule(), r.allowed(), r.remaining(), retry, reset, next, r.delayMs(), r.source()));
            }
            return Decision.of(out);
        }
    }
}
