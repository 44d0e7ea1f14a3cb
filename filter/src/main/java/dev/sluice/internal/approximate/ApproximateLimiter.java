package dev.sluice.internal.approximate;

import dev.sluice.internal.failover.FailoverLimiter;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;

import java.util.ArrayList;
import java.util.List;

/**
 * The approximate mode's place in the composition: in front of everything else, it decides the
 * acquisitions of approximate rules ({@link Rule#approximate()}) with the {@link ApproximateEngine},
 * on this instance, and passes the others on to the exact path (the denied-client cache, the failure
 * handling, Redis). A request without an approximate rule costs one pass over its acquisitions.
 *
 * <ul>
 *   <li><b>Only approximate rules</b>: decided here, no Redis call. A client this instance has no room
 *       to count ({@code local.max-keys}) is decided exactly instead.</li>
 *   <li><b>Both kinds</b>: still atomic. The approximate rules decide first and take; then the exact
 *       ones decide in Redis; if those deny, what the approximate rules took is given back here
 *       (exactly: it is this instance's own count). If an approximate rule denies, the exact rules must
 *       take nothing: they are asked for more than any rule can hold, which every algorithm denies
 *       without writing, and reported with their untouched figures ({@code remaining} as Redis has it;
 *       {@code t} and, if the request's own cost would not fit either, the retry-after are the time to
 *       a full quota, when more is available at the latest).</li>
 *   <li><b>While a sync fails</b> ({@link ApproximateEngine#available()} false, or the client's own part
 *       of the last sync failed: {@link ApproximateEngine#UNSYNCED}): a request of approximate
 *       rules only is decided by the failure policy at once, without calling Redis per request (the local
 *       backstop at {@code fallback-limit} for {@code open} rules, a refusal for {@code closed} ones),
 *       as exact rules are while Redis is away; a request that also has exact rules goes to Redis whole,
 *       in the one call it makes anyway, so it stays atomic.</li>
 * </ul>
 *
 * <p>An approximate rule gives back what a caller settles ({@link #settle}: a request refused past
 * {@code max-held-requests}, {@code Sluice.giveBack}) on this instance's counts; {@code rule.<name>.count} is
 * refused with {@code sync}.
 */
public final class ApproximateLimiter implements RateLimiter {

    /** A cost no rule can admit ({@link Rule#MAX_COUNT} is the largest capacity): asks a rule without taking. */
    static final long PROBE_COST = Rule.MAX_COUNT + 1;

    private final RateLimiter exact;
    private final FailoverLimiter failover;
    private final ApproximateEngine engine;

    /**
     * @param exact    the exact path: the denied-client cache (if on) over the failure handling over Redis
     * @param failover the failure handling on that path, whose failure policy decides while a sync fails
     * @param engine   the approximate rules' counts
     */
    public ApproximateLimiter(RateLimiter exact, FailoverLimiter failover, ApproximateEngine engine) {
        this.exact = exact;
        this.failover = failover;
        this.engine = engine;
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        int approximate = 0;
        for (int i = 0; i < n; i++) {
            if (acquisitions.get(i).rule().approximate()) approximate++;
        }
        if (approximate == 0) {
            return exact.decide(acquisitions);
        }
        if (!engine.available()) {
            return approximate == n ? failover.decideWithoutRedis(acquisitions) : exact.decide(acquisitions);
        }
        if (approximate == n) {
            Decision decided = engine.decide(acquisitions);
            if (decided == ApproximateEngine.UNSYNCED) return failover.decideWithoutRedis(acquisitions);
            return decided != null ? decided : exact.decide(acquisitions);
        }
        return decideMixed(acquisitions, approximate);
    }

    private Decision decideMixed(List<Acquisition> acquisitions, int approximate) {
        int n = acquisitions.size();
        List<Acquisition> approx = new ArrayList<>(approximate);
        List<Acquisition> others = new ArrayList<>(n - approximate);
        for (Acquisition a : acquisitions) {
            (a.rule().approximate() ? approx : others).add(a);
        }
        ApproximateEngine.Result result = engine.reserve(approx);
        if (result == null || result.decision() == ApproximateEngine.UNSYNCED) {
            // no room to count a client here, or its last sync failed: all exactly, in one call
            return exact.decide(acquisitions);
        }
        Decision approxDecision = result.decision();
        Decision othersDecision;
        if (approxDecision.allowed()) {
            try {
                othersDecision = exact.decide(others);
            } catch (RuntimeException e) {
                engine.release(result);
                throw e;
            }
            if (!othersDecision.allowed()) {
                engine.release(result);
                approxDecision = result.untaken();
            }
        } else {
            othersDecision = untouched(others);
        }
        List<RuleDecision> merged = new ArrayList<>(n);
        int ia = 0;
        int io = 0;
        for (Acquisition a : acquisitions) {
            merged.add(a.rule().approximate() ? approxDecision.rules().get(ia++) : othersDecision.rules().get(io++));
        }
        return Decision.of(merged);
    }

    /**
     * The exact rules' figures without taking anything, for a request an approximate rule denied. The
     * probes go past the denied-client cache: their denial (no rule admits their cost) says nothing of
     * the client, and must not replace a denial the cache remembers for it.
     */
    private Decision untouched(List<Acquisition> others) {
        List<Acquisition> probes = new ArrayList<>(others.size());
        for (Acquisition a : others) probes.add(new Acquisition(a.rule(), a.clientKey(), PROBE_COST));
        Decision probed = failover.decide(probes);
        List<RuleDecision> out = new ArrayList<>(others.size());
        for (int i = 0; i < others.size(); i++) {
            Acquisition a = others.get(i);
            RuleDecision p = probed.rules().get(i);
            if (p.source() == RuleDecision.Source.UNAVAILABLE) {
                // Redis away and a closed rule: not evaluated, as the failure handling reports open rules then
                out.add(new RuleDecision(a.rule(), true, 0, 0, 0, 0, RuleDecision.Source.UNAVAILABLE));
            } else if (p.remaining() >= a.cost()) {
                // the window the probe was decided in: a calendar rule's own length (w), not the rule's longest
                out.add(new RuleDecision(a.rule(), true, p.remaining(), 0, p.resetMs(), p.resetMs(), 0, null, p.source(),
                        p.windowMs()));
            } else {
                long wait = Math.max(1, p.resetMs());
                out.add(new RuleDecision(a.rule(), false, p.remaining(), wait, p.resetMs(), wait, 0, null, p.source(),
                        p.windowMs()));
            }
        }
        return Decision.of(out);
    }

    /**
     * An approximate rule's give-back is made on this instance's counts ({@link ApproximateEngine#giveBack});
     * approximate rules take no actual costs (see the class comment), so a charge of one is ignored. The others
     * settle on the exact path.
     */
    @Override
    public void settle(List<Settlement> settlements) {
        List<Settlement> exactly = null;
        for (int i = 0, n = settlements.size(); i < n; i++) {
            Settlement s = settlements.get(i);
            if (s.taken().source() == RuleDecision.Source.APPROXIMATE) {
                if (!s.charge()) engine.giveBack(s.acquisition(), s.taken());
                continue;
            }
            if (exactly == null) exactly = new ArrayList<>(n);
            exactly.add(s);
        }
        if (exactly != null) exact.settle(exactly);
    }

    /** Concurrency rules are never approximate: every renewal goes to the exact path. */
    @Override
    public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        return exact.renew(acquisitions, taken);
    }

    /** Forgets the client's counts here, then its state on the exact path (Redis, the backstop, the cache). */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        engine.reset(rule, clientKey);
        exact.reset(rule, clientKey);
    }

    /** The approximate rules' counts. */
    public ApproximateEngine engine() {
        return engine;
    }

    /** Sends this instance's unsent counts once, then closes the exact path. */
    @Override
    public void close() {
        try {
            engine.close();
        } finally {
            exact.close();
        }
    }
}
