package dev.sluice.limiter;

import java.util.Objects;

/**
 * A request for {@code cost} tokens of {@code rule} on behalf of one client.
 *
 * @param rule      the limit
 * @param clientKey who is counted: already bounded and free of key-layout characters
 *                  (see {@code dev.sluice.key.ClientKeys})
 * @param cost      tokens to take, at least 1
 */
public record Acquisition(Rule rule, String clientKey, long cost) {

    public Acquisition {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(clientKey, "clientKey");
        if (cost < 1) throw new IllegalArgumentException("cost must be at least 1: " + cost);
    }

    public Acquisition(Rule rule, String clientKey) {
        this(rule, clientKey, rule.cost());
    }
}
