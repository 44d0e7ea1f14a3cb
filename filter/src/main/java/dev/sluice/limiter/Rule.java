package dev.sluice.limiter;

import java.time.Duration;
import java.util.Objects;

/**
 * One limit: an algorithm and its parameters, independent of HTTP. Immutable; built once from
 * configuration.
 *
 * @param name          the rule's name, as listed in {@code rules}; also part of its Redis keys
 * @param algorithm     how requests are counted
 * @param limit         requests allowed per {@code window}; for bucket algorithms the sustained rate
 * @param window        the window, or the time in which a bucket refills {@code limit} tokens
 * @param burst         bucket capacity (defaults to {@code limit}); for leaky-bucket the queue length
 * @param cost          tokens one request takes by default
 * @param failurePolicy what happens when Redis cannot answer
 * @param fallbackLimit the per-instance limit of the local backstop while Redis is away
 * @param maxDelay      leaky-bucket only: how long an admitted request may be held until its slot
 */
public record Rule(String name, Algorithm algorithm, long limit, Duration window, long burst, long cost,
                   FailurePolicy failurePolicy, long fallbackLimit, Duration maxDelay) {

    public Rule {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(window, "window");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        Objects.requireNonNull(maxDelay, "maxDelay");
        if (limit < 1) throw new IllegalArgumentException("limit must be at least 1: " + limit);
        if (burst < 1) throw new IllegalArgumentException("burst must be at least 1: " + burst);
        if (cost < 1) throw new IllegalArgumentException("cost must be at least 1: " + cost);
        if (fallbackLimit < 1) throw new IllegalArgumentException("fallbackLimit must be at least 1: " + fallbackLimit);
        if (window.toMillis() < 1) throw new IllegalArgumentException("window must be at least 1ms: " + window);
        if (maxDelay.isNegative()) throw new IllegalArgumentException("maxDelay must not be negative: " + maxDelay);
    }

    /** A rule with the defaults of the contract: burst = limit, cost 1, fail open, fallback = limit, no delay. */
    public static Rule of(String name, Algorithm algorithm, long limit, Duration window) {
        return new Rule(name, algorithm, limit, window, limit, 1, FailurePolicy.OPEN, limit, Duration.ZERO);
    }

    public long windowMillis() {
        return window.toMillis();
    }

    /** This rule with another limit and burst, as the local backstop enforces it while Redis is away. */
    public Rule asFallback() {
        if (fallbackLimit == limit) {
            return this;
        }
        long fallbackBurst = Math.max(1, Math.round((double) burst * fallbackLimit / limit));
        return new Rule(name, algorithm, fallbackLimit, window, fallbackBurst, cost, failurePolicy, fallbackLimit, maxDelay);
    }

    public Rule withCost(long newCost) {
        return new Rule(name, algorithm, limit, window, burst, newCost, failurePolicy, fallbackLimit, maxDelay);
    }
}
