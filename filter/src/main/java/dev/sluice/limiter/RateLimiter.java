package dev.sluice.limiter;

import dev.sluice.key.ClientKey;

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

    /**
     * Forgets what this limiter holds for one client of one rule, so that its next request starts
     * afresh (an operator lifting a limit for one customer). Engines without state do nothing.
     */
    default void reset(Rule rule, ClientKey clientKey) {
    }

    @Override
    default void close() {
    }
}
