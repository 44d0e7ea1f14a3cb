package dev.sluice.internal.metrics;

import dev.sluice.metrics.RuleMXBean;
import dev.sluice.limiter.Rule;

import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/** The counters of one rule, and its MXBean. */
final class RuleCounters implements RuleMXBean {

    private final String instanceName;
    private volatile Rule rule;
    final LongAdder allowed = new LongAdder();
    final LongAdder denied = new LongAdder();
    final LongAdder dryRunDenied = new LongAdder();
    final LongAdder fallback = new LongAdder();
    final LongAdder refused = new LongAdder();

    RuleCounters(String instanceName, Rule rule) {
        this.instanceName = instanceName;
        this.rule = rule;
    }

    /** The rule's figures after a reload. */
    void rule(Rule newRule) {
        this.rule = newRule;
    }

    @Override public String getInstanceName() { return instanceName; }
    @Override public String getRule() { return rule.name(); }
    @Override public String getAlgorithm() { return rule.algorithm().id(); }
    @Override public long getLimit() { return rule.limit(); }
    @Override public long getWindowMillis() { return rule.windowMillis(); }
    @Override public long getBurst() { return rule.burst(); }
    @Override public String getFailurePolicy() { return rule.failurePolicy().name().toLowerCase(Locale.ROOT); }
    @Override public long getFallbackLimit() { return rule.fallbackLimit(); }
    @Override public long getAllowed() { return allowed.sum(); }
    @Override public long getDenied() { return denied.sum(); }
    @Override public long getDryRunDenied() { return dryRunDenied.sum(); }
    @Override public long getFallbackDecisions() { return fallback.sum(); }
    @Override public long getClosedRuleRefusals() { return refused.sum(); }
}
