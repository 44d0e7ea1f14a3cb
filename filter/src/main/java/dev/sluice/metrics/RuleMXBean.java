package dev.sluice.metrics;



/**
 * One rule of one Sluice instance, registered as
 * {@code dev.sluice:type=Rule,name=<instance>,rule=<rule>}. Counters count since start.
 */
public interface RuleMXBean {

    String getInstanceName();

    String getRule();

    /** e.g. {@code token-bucket}. */
    String getAlgorithm();

    long getLimit();

    long getWindowMillis();

    long getBurst();

    /** {@code open} or {@code closed}. */
    String getFailurePolicy();

    long getFallbackLimit();

    /**
     * Requests admitted (and charged) while this rule applied. A request another rule denied took
     * nothing and is not counted here (Micrometer's {@code outcome=allowed} does count it: the rule's verdict).
     */
    long getAllowed();

    /** Requests this rule denied in enforce mode. */
    long getDenied();

    /** Requests this rule would have denied in dry-run mode. */
    long getDryRunDenied();

    /** Times this rule was decided by the local backstop while Redis was away. */
    long getFallbackDecisions();

    /** Times this rule refused a request because Redis was away and it fails closed. */
    long getClosedRuleRefusals();

    /** Requests from an {@code exempt-ips} client that this rule would have applied to: not limited, not charged. */
    long getExempt();

    /**
     * Admitted requests that left this rule at most 20 % of its quota ({@code burst}; the backstop's
     * while Redis is away), as Envoy's {@code near_limit}: a client about to be limited.
     */
    long getNearLimit();
}
