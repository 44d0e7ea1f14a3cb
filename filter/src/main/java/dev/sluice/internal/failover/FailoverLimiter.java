package dev.sluice.internal.failover;

import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.internal.metrics.SluiceMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * The Redis engine with the failure policy around it: what Sluice does when Redis cannot answer.
 *
 * <p>Every decision goes to Redis while it answers. When a call fails ({@link LimiterUnavailableException}:
 * down, slower than {@code redis.timeout}, no pooled connection in {@code redis.pool.max-wait}), or
 * while the {@link CircuitBreaker} is open (then Redis is not called at all and nothing waits), the
 * request is decided by the failure policy of its rules:
 * <ul>
 *   <li>if every rule is {@code open}, the local engine decides all of them at their
 *       {@code fallback-limit} per instance ({@link dev.sluice.limiter.Rule#asFallback()}), source
 *       {@code LOCAL};</li>
 *   <li>if any rule is {@code closed}, the request is refused: each closed rule answers
 *       {@code allowed=false}, source {@code UNAVAILABLE}, {@code retryAfterMs} = the time until the
 *       breaker's next probe, at least one second. The request's open rules are not evaluated and
 *       take nothing: they answer {@code allowed=true}, source {@code UNAVAILABLE}, all figures 0.</li>
 * </ul>
 * The local engine counts only decisions made while Redis is away, and nothing it counted is ever
 * written to Redis: during an outage a client gets at most {@code fallback-limit} per window from each
 * instance. As soon as the breaker's probe succeeds (within {@code redis.breaker.open-max} of Redis
 * answering again), decisions are Redis's again.
 *
 * <p>Outages are logged once per state change by {@link OutageLog}, never per request.
 *
 * <p>Closing this limiter closes both engines.
 */
public final class FailoverLimiter implements RateLimiter {

    private static final Logger LOG = LoggerFactory.getLogger(FailoverLimiter.class);

    /** Retry-After of a closed rule's refusal is never shorter than this. */
    static final long MIN_RETRY_AFTER_MS = 1000;

    private final RateLimiter redis;
    private final RateLimiter local;
    private final String name;
    private final CircuitBreaker breaker;
    private final OutageLog outage;
    private final SluiceMetrics metrics;
    /** Each rule's backstop version, derived once rather than per request during an outage. */
    private final RuleCache<Rule> fallbackRules = new RuleCache<>(Rule::asFallback);

    /** A failover limiter whose figures are kept but not exported; see the other constructor. */
    public FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name) {
        this(redis, local, breaker, name, new SluiceMetrics());
    }

    /**
     * @param redis   the Redis engine; its failures are {@link LimiterUnavailableException}s
     * @param local   the local engine that backs up {@code open} rules
     * @param breaker the circuit breaker settings for this Redis target
     * @param name    names the Redis target in logs, e.g. {@code RedisSettings.describe()}; must hold no secret
     * @param metrics where Redis failures, fallbacks, refusals and the breaker's state are counted
     */
    public FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                           SluiceMetrics metrics) {
        this(redis, local, breaker, name, metrics, CircuitBreaker.MONOTONIC, LOG, OutageLog.DEFAULT_QUIET_MILLIS);
    }

    /** Told when Redis is lost and when it answers again (at most once per outage each). */
    public interface Listener {
        /** The first failure of an outage: Redis did not answer a call. */
        default void redisLost() {
        }

        /** Redis answers again after an outage; it may have come back without its data. */
        default void redisRecovered() {
        }
    }

    private final java.util.List<Listener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                    SluiceMetrics metrics, Clock monotonic, Logger log, long logQuietMillis) {
        this.redis = redis;
        this.local = local;
        this.name = name;
        this.metrics = metrics;
        this.outage = new OutageLog(log, name, monotonic, logQuietMillis);
        this.breaker = new CircuitBreaker(breaker, monotonic, this::breakerChanged);
        metrics.breakerState(CircuitBreaker.State.CLOSED.name());
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        if (acquisitions.isEmpty()) {
            return Decision.none();
        }
        CircuitBreaker.Permit permit = breaker.acquire();
        if (permit.kind() != CircuitBreaker.Permit.Kind.REJECTED) {
            Decision fromRedis = callRedis(acquisitions, permit);
            if (fromRedis != null) {
                return fromRedis;
            }
        }
        return failurePolicy(acquisitions);
    }

    /**
     * Decides by the failure policy alone, as while Redis is away, without calling Redis: for the
     * approximate mode's rules, which learn that Redis is away from their sync rather than from a call.
     */
    public Decision decideWithoutRedis(List<Acquisition> acquisitions) {
        return acquisitions.isEmpty() ? Decision.none() : failurePolicy(acquisitions);
    }

    /** Redis's decision, or null when Redis failed (the failure is reported to the breaker, the metrics and the log). */
    private Decision callRedis(List<Acquisition> acquisitions, CircuitBreaker.Permit permit) {
        RuntimeException failure;
        try {
            Decision d = redis.decide(acquisitions);
            breaker.onSuccess(permit);
            if (outage.down() && breaker.state() == CircuitBreaker.State.CLOSED && outage.recovered()) {
                for (Listener l : listeners) l.redisRecovered();
            }
            return d;
        } catch (LimiterUnavailableException e) {
            failure = e;
        } catch (IllegalArgumentException callerError) {
            // the caller's mistake (e.g. one rule asked twice), not Redis's: no outage, and the caller must hear of
            // it (were this the probe, the breaker replaces it after one interval)
            throw callerError;
        } catch (RuntimeException e) {
            // not the engine's documented failure, so a bug or an unexpected reply: still never fail the
            // application's request because of its rate limiter; logged with the cause like an outage
            failure = e;
        }
        metrics.recordRedisFailure(failure instanceof LimiterUnavailableException u && u.isTimeout());
        breaker.onFailure(permit);
        if (outage.failed(failure)) {
            for (Listener l : listeners) l.redisLost();
        }
        return null;
    }

    private Decision failurePolicy(List<Acquisition> acquisitions) {
        if (anyClosed(acquisitions)) {
            return refuse(acquisitions);
        }
        List<Acquisition> fallback = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) {
            fallback.add(new Acquisition(fallbackRules.get(a.rule()), a.clientKey(), a.cost()));
        }
        Decision d = asLocal(local.decide(fallback));
        metrics.recordFallback();
        outage.fellBack();
        return d;
    }

    private Decision refuse(List<Acquisition> acquisitions) {
        long retryAfter = Math.max(MIN_RETRY_AFTER_MS, breaker.millisUntilProbe());
        List<RuleDecision> out = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) {
            if (a.rule().failurePolicy() == FailurePolicy.CLOSED && !a.rule().dryRun()) {
                out.add(new RuleDecision(a.rule(), false, 0, retryAfter, retryAfter, 0, RuleDecision.Source.UNAVAILABLE));
            } else {
                out.add(new RuleDecision(a.rule(), true, 0, 0, 0, 0, RuleDecision.Source.UNAVAILABLE));
            }
        }
        Decision refusal = Decision.of(out);
        metrics.recordRefusal();
        outage.refused();
        return refusal;
    }

    /** Whether an enforcing rule fails closed (a shadow rule's refusal would refuse nothing). */
    private static boolean anyClosed(List<Acquisition> acquisitions) {
        for (Acquisition a : acquisitions) {
            if (a.rule().failurePolicy() == FailurePolicy.CLOSED && !a.rule().dryRun()) return true;
        }
        return false;
    }

    /** The local engine's decision marked as the backstop's. */
    private static Decision asLocal(Decision d) {
        for (RuleDecision r : d.rules()) {
            if (r.source() != RuleDecision.Source.BACKSTOP) {
                List<RuleDecision> out = new ArrayList<>(d.rules().size());
                for (RuleDecision x : d.rules()) out.add(x.withSource(RuleDecision.Source.BACKSTOP));
                return Decision.of(out);
            }
        }
        return d;
    }

    private void breakerChanged(CircuitBreaker.State from, CircuitBreaker.State to, long openForMillis) {
        metrics.recordBreakerState(from.name(), to.name());
        if (to == CircuitBreaker.State.OPEN) {
            LOG.debug("Sluice: circuit breaker for Redis {} {} -> OPEN: no calls for {} ms", name, from, openForMillis);
        } else {
            LOG.debug("Sluice: circuit breaker for Redis {} {} -> {}", name, from, to);
        }
    }

    /** The breaker's state, for metrics and tests. */
    public CircuitBreaker.State breakerState() {
        return breaker.state();
    }

    /**
     * Whether Redis is answering: no failure since its last success. False from the first failure
     * of an outage until a call succeeds again with the breaker closed.
     */
    public boolean redisAvailable() {
        return !outage.down() && breaker.state() == CircuitBreaker.State.CLOSED;
    }

    /** Adds a listener for outages; it is called on a request thread, so it must be quick. */
    public void addListener(Listener listener) {
        listeners.add(java.util.Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Gives back to whoever took: Redis for what Redis decided (not while the breaker is open, and a
     * failure is only counted, never retried: a lost give-back leaves the client as if the request had
     * counted), the backstop for what the backstop decided.
     */
    @Override
    public void giveBack(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        List<Acquisition> toRedis = null;
        List<RuleDecision> fromRedis = null;
        List<Acquisition> toLocal = null;
        List<RuleDecision> fromLocal = null;
        for (int i = 0, n = acquisitions.size(); i < n; i++) {
            RuleDecision r = taken.get(i);
            Acquisition a = acquisitions.get(i);
            if (r.source() == RuleDecision.Source.REDIS) {
                if (toRedis == null) { toRedis = new ArrayList<>(n); fromRedis = new ArrayList<>(n); }
                toRedis.add(a);
                fromRedis.add(r);
            } else if (r.source() == RuleDecision.Source.BACKSTOP) {
                if (toLocal == null) { toLocal = new ArrayList<>(n); fromLocal = new ArrayList<>(n); }
                toLocal.add(new Acquisition(fallbackRules.get(a.rule()), a.clientKey(), a.cost()));
                fromLocal.add(r);
            }
        }
        if (toLocal != null) local.giveBack(toLocal, fromLocal);
        if (toRedis != null && breaker.state() == CircuitBreaker.State.CLOSED) {
            try {
                redis.giveBack(toRedis, fromRedis);
            } catch (RuntimeException lost) {
                metrics.recordRedisFailure(lost instanceof LimiterUnavailableException u && u.isTimeout());
                LOG.debug("Sluice: a give-back to Redis {} was lost: {}", name, lost.getMessage());
            }
        }
    }

    /** Forgets one client's state of one rule in Redis (if it answers) and in the backstop. */
    @Override
    public void reset(Rule rule, dev.sluice.key.ClientKey clientKey) {
        try {
            local.reset(fallbackRules.get(rule), clientKey);
        } finally {
            redis.reset(rule, clientKey);
        }
    }

    @Override
    public void close() {
        try {
            redis.close();
        } finally {
            local.close();
        }
    }

    @Override
    public String toString() {
        return "FailoverLimiter{" + name + ", " + breaker + '}';
    }
}
