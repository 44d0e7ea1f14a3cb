package dev.sluice.limiter;

import java.util.List;

/**
 * Decides requests. Implementations: the Redis engine (global), the local engine (one instance)
 * and the failover limiter that puts the two together under the failure policy.
 */
public interface RateLimiter extends AutoCloseable {

    /**
     * Decides all acquisitions of one request atomically: either every rule admits the request
     * and each takes its cost, or the request is denied and no rule takes anything.
     *
     * @param acquisitions at most one per rule; empty means no rule applied
     * @return one {@link RuleDecision} per acquisition, in the same order
     * @throws LimiterUnavailableException when the store cannot answer (Redis engine only)
     */
    Decision decide(List<Acquisition> acquisitions);

    @Override
    default void close() {
    }
}
