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
     * Gives back what an admitted request took from some of its rules (their responses do not count,
     * {@code rule.<name>.count}), leaving each client's state never better than if the request had
     * not happened. Best effort: if the store cannot be reached, nothing is given back.
     *
     * @param acquisitions the rules and clients to give back to, each as it was decided
     * @param taken        for each acquisition, in the same order, the {@link RuleDecision} the decision
     *                     that admitted it returned (its figures and {@link RuleDecision#source()} say
     *                     what was taken, when and where)
     */
    default void giveBack(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        settle(Settlement.givingBack(acquisitions, taken));
    }

    /**
     * Settles what admitted requests took, once each (a settlement sent again changes nothing): gives
     * back what {@link #giveBack} gives back (a concurrency slot: released), or charges more, past the
     * limit if need be ({@code rule.<name>.actual-cost}). All of them in as few calls as the store allows
     * (one on standalone Redis). Best effort: if the store cannot be reached, nothing is settled.
     */
    default void settle(List<Settlement> settlements) {
    }

    /**
     * Renews the leases of the concurrency slots ({@code algorithm=concurrency}) that admitted requests
     * hold while they run, for another lease from now. A slot whose lease has ended is not brought back
     * (it may have been counted free already). A limiter without leases ends none: each is held.
     *
     * @param acquisitions the concurrency rules and clients, each as it was decided
     * @param taken        for each, the {@link RuleDecision} that admitted it (its take names the slot)
     * @return for each, whether its slot was still held
     * @throws LimiterUnavailableException when the store could not renew them all (some may be renewed): the
     *         caller tries again soon
     */
    default boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        boolean[] held = new boolean[acquisitions.size()];
        java.util.Arrays.fill(held, true); // a limiter without leases lets nothing end: none is lost
        return held;
    }

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
