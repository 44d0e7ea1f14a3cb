package dev.sluice.bench;

import dev.sluice.internal.LimiterStack;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.Settlement;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * A request that settles something at its completion, on Sluice's limiter API on Redis (the limiter
 * stack with {@code clock=redis}, as {@link SluiceContender}): its decision, then at once its
 * settlement, each a script call of its own, as the filter makes them. One {@link #tryAcquire} is
 * one request:
 * <ul>
 *   <li>{@link Kind#TAKE_RELEASE}: one {@code concurrency} rule, its slot taken by the decision and
 *       released by the settlement;</li>
 *   <li>{@link Kind#CHARGE}: one token-bucket rule with an actual cost, the estimate taken by the
 *       decision ({@link #ESTIMATE}), {@link #EXTRA} more charged by the settlement;</li>
 *   <li>{@link Kind#GIVE_BACK_PART}: the same, {@link #BACK} of the estimate given back.</li>
 * </ul>
 * The acquisitions are built once per key: this measures the limiter, not the filter.
 */
final class SettlingContender implements Contender {

    /** What each request of the actual-cost kinds takes at admission. */
    static final long ESTIMATE = 10;
    /** What a request of {@link Kind#CHARGE} cost more than its estimate. */
    static final long EXTRA = 5;
    /** What a request of {@link Kind#GIVE_BACK_PART} cost less than its estimate. */
    static final long BACK = 6;

    enum Kind {
        TAKE_RELEASE, CHARGE, GIVE_BACK_PART
    }

    private final UnifiedJedis jedis;
    private final LimiterStack stack;
    private final RateLimiter limiter;
    private final Kind kind;
    private final List<Acquisition>[] requests;
    private final String label;

    /** On {@code jedis} (closed with this): shared round trips if it is a {@code JedisPooled}. */
    @SuppressWarnings("unchecked")
    SettlingContender(UnifiedJedis jedis, Workload workload, Kind kind) {
        this.jedis = jedis;
        this.kind = kind;
        Rule rule = rule(kind, workload);
        stack = BenchRedis.stack(jedis, BenchRedis.prefix("settle"), rule, false);
        limiter = stack.limiter();
        String[] keys = workload.clientKeys();
        requests = new List[keys.length];
        for (int i = 0; i < keys.length; i++) {
            requests[i] = List.of(new Acquisition(rule, ClientKey.parse(keys[i])));
        }
        label = "sluice " + kind.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * The workload's rule of the kind: a concurrency rule of the workload's limit (more slots than
     * its threads can hold) and its window as the lease; a token bucket of the workload's figures
     * whose requests take {@link #ESTIMATE}.
     */
    static Rule rule(Kind kind, Workload workload) {
        if (kind == Kind.TAKE_RELEASE) return Workload.rule(Algorithm.CONCURRENCY.id(), workload);
        return new Rule("api", Algorithm.TOKEN_BUCKET, workload.limit, workload.window, workload.limit, ESTIMATE,
                FailurePolicy.OPEN, workload.limit, Duration.ZERO);
    }

    @Override
    public boolean tryAcquire(int key) {
        List<Acquisition> request = requests[key];
        Decision decision = limiter.decide(request);
        if (!decision.allowed()) return false;
        Acquisition a = request.get(0);
        Settlement settlement = switch (kind) {
            case TAKE_RELEASE -> Settlement.giveBack(a, decision.rules().get(0));
            case CHARGE -> Settlement.ofActualCost(a, decision.rules().get(0), ESTIMATE + EXTRA);
            case GIVE_BACK_PART -> Settlement.ofActualCost(a, decision.rules().get(0), ESTIMATE - BACK);
        };
        limiter.settle(List.of(settlement));
        return true;
    }

    @Override
    public void close() {
        stack.close();
        jedis.close();
    }

    @Override
    public String toString() {
        return label;
    }
}
