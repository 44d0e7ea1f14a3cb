package dev.sluice.limiter;

import dev.sluice.key.ClientKey;

import java.util.Objects;

/**
 * A request for {@code cost} tokens of {@code rule} on behalf of one client.
 *
 * @param rule      the limit
 * @param clientKey who is counted (bounded and tagged where it was made, see {@link ClientKey})
 * @param cost      tokens to take, at least 1
 */
public record Acquisition(Rule rule, ClientKey clientKey, long cost) {

    public Acquisition {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(clientKey, "clientKey");
        if (cost < 1) throw new IllegalArgumentException("cost must be at least 1: " + cost);
    }

    /** The rule's own cost. */
    public Acquisition(Rule rule, ClientKey clientKey) {
        this(rule, clientKey, rule.cost());
    }
}
