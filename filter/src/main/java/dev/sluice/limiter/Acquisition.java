package dev.sluice.limiter;

import dev.sluice.key.ClientKey;

import java.util.Objects;

/**
 * A request for {@code cost} tokens of {@code rule} on behalf of one client.
 *
 * @param rule      the limit
 * @param clientKey who is counted (bounded and tagged where it was made, see {@link ClientKey})
 * @param cost      tokens to take, at least 1 (1 for a concurrency rule: one slot; or, only to ask, more than
 *                  its limit); in a give-back or a charge
 *                  ({@link Settlement}), the amount settled
 */
public record Acquisition(Rule rule, ClientKey clientKey, long cost) {

    public Acquisition {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(clientKey, "clientKey");
        if (cost < 1) throw new IllegalArgumentException("cost must be at least 1: " + cost);
        if (cost != 1 && cost <= rule.limit() && rule.algorithm().isConcurrency()) {
            // a cost above the limit only asks (never admitted, nothing taken): a probe of the slots held
            throw new IllegalArgumentException("rule " + rule.name() + " is a concurrency rule: a request takes one slot,"
                    + " so its cost is 1, not " + cost);
        }
    }

    /** The rule's own cost. */
    public Acquisition(Rule rule, ClientKey clientKey) {
        this(rule, clientKey, rule.cost());
    }
}
