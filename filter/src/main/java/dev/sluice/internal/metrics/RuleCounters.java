package dev.sluice.internal.metrics;

import dev.sluice.metrics.RuleMXBean;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters of one rule, and its MXBean. Each decision of the rule lands in exactly one of the
 * outcome adders ({@link #record}); the MXBean's and Micrometer's figures are sums of them, so the
 * two views never count apart. They are finer than either view, which group them differently: the
 * MXBean's {@code Allowed} counts only requests that passed (the rule charged them), while the
 * Micrometer outcome {@code allowed} is the rule's own verdict, also when another rule denied the
 * request.
 */
final class RuleCounters implements RuleMXBean {

    /** An admitted request with at most this share of the limit left is near the limit (as Envoy counts it). */
    static final int NEAR_LIMIT_PERCENT = 20;

    private final SluiceMetrics owner;
    private volatile Rule rule;
    /** Admitted by this rule and passed (charged); decided by Redis, or the local engine of backend=local. */
    final LongAdder allowed = new LongAdder();
    /** Admitted by this rule, but another rule denied the request: nothing was taken. */
    final LongAdder allowedOtherDenied = new LongAdder();
    final LongAdder denied = new LongAdder();
    final LongAdder dryRunDenied = new LongAdder();
    /** The same four, decided by the local backstop while Redis was away. */
    final LongAdder fallbackAllowed = new LongAdder();
    final LongAdder fallbackAllowedOtherDenied = new LongAdder();
    final LongAdder fallbackDenied = new LongAdder();
    final LongAdder fallbackDryRunDenied = new LongAdder();
    /** A closed rule that refused the request (503) because Redis was away. */
    final LongAdder refused = new LongAdder();
    /** An open rule of a request refused for want of Redis: not evaluated, nothing taken. */
    final LongAdder notDecided = new LongAdder();
    /** The request came from an {@code exempt-ips} client: not limited. */
    final LongAdder exempt = new LongAdder();
    /** Of the passed requests, those that left at most {@link #NEAR_LIMIT_PERCENT} % of the rule's quota. */
    final LongAdder nearLimit = new LongAdder();

    RuleCounters(SluiceMetrics owner, Rule rule) {
        this.owner = owner;
        this.rule = rule;
    }

    /** The rule's current settings (a reload may change them; the counts go on). */
    void rule(Rule current) {
        this.rule = current;
    }

    /**
     * Counts this rule's part in one decision.
     *
     * @param r        this rule's decision; a denial of a shadow rule ({@link Rule#dryRun()}) was let through
     * @param admitted whether the whole request was admitted (every enforcing rule allowed it)
     */
    void record(RuleDecision r, boolean admitted) {
        boolean ok = r.allowed();
        boolean dryRun = r.rule().dryRun();
        switch (r.source()) {
            case UNAVAILABLE -> (ok ? notDecided : refused).increment();
            case BACKSTOP -> (ok ? admitted ? fallbackAllowed : fallbackAllowedOtherDenied
                    : dryRun ? fallbackDryRunDenied : fallbackDenied).increment();
            default -> (ok ? admitted ? allowed : allowedOtherDenied : dryRun ? dryRunDenied : denied).increment();
        }
        // the quota of the decision's rule: the backstop's (fallback-limit) while Redis is away
        if (ok && admitted && r.remaining() * 100 <= r.rule().burst() * NEAR_LIMIT_PERCENT) nearLimit.increment();
    }

    @Override public String getInstanceName() { return owner.instanceName(); }
    @Override public String getRule() { return rule.name(); }
    @Override public String getAlgorithm() { return rule.algorithm().id(); }
    @Override public long getLimit() { return rule.limit(); }
    @Override public long getWindowMillis() { return rule.windowMillis(); }
    @Override public long getBurst() { return rule.burst(); }
    @Override public String getFailurePolicy() { return rule.failurePolicy().name().toLowerCase(Locale.ROOT); }
    @Override public long getFallbackLimit() { return rule.fallbackLimit(); }
    @Override public long getAllowed() { return allowed.sum() + fallbackAllowed.sum(); }
    @Override public long getDenied() { return denied.sum() + fallbackDenied.sum(); }
    @Override public long getDryRunDenied() { return dryRunDenied.sum() + fallbackDryRunDenied.sum(); }
    @Override public long getFallbackDecisions() {
        return fallbackAllowed.sum() + fallbackAllowedOtherDenied.sum() + fallbackDenied.sum() + fallbackDryRunDenied.sum();
    }
    @Override public long getClosedRuleRefusals() { return refused.sum(); }
    @Override public long getExempt() { return exempt.sum(); }
    @Override public long getNearLimit() { return nearLimit.sum(); }
}
