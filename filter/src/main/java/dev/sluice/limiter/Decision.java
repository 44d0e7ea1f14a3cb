package dev.sluice.limiter;

import java.time.Duration;

import java.util.ArrayList;
import java.util.List;

/**
 * The outcome of all rules that applied to one request. A request is admitted only if every
 * enforcing rule admits it; a request denied by one rule takes nothing from the others. A shadow
 * rule ({@link Rule#dryRun()}) is decided and counted like the others, but its denial refuses
 * nothing: it shows in {@link #shadowDenied()}, not in {@link #violated()}.
 */
public final class Decision {

    private static final Decision NONE = new Decision(List.of());

    private final List<RuleDecision> rules;
    private final boolean allowed;

    private Decision(List<RuleDecision> rules) {
        this.rules = rules;
        boolean all = true;
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            all &= r.allowed() || r.rule().dryRun();
        }
        this.allowed = all;
    }

    public static Decision of(List<RuleDecision> rules) {
        return rules.isEmpty() ? NONE : new Decision(List.copyOf(rules));
    }

    /** No rule applied. */
    public static Decision none() {
        return NONE;
    }

    public boolean allowed() {
        return allowed;
    }

    /** One entry per rule that applied, in the order the rules were asked. */
    public List<RuleDecision> rules() {
        return rules;
    }

    /** The enforcing rules that denied the request (empty when allowed). */
    public List<RuleDecision> violated() {
        List<RuleDecision> out = new ArrayList<>();
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (!r.allowed() && !r.rule().dryRun()) out.add(r);
        }
        return out;
    }

    /** The shadow rules that would have denied the request had they enforced. */
    public List<RuleDecision> shadowDenied() {
        List<RuleDecision> out = new ArrayList<>();
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (!r.allowed() && r.rule().dryRun()) out.add(r);
        }
        return out;
    }

    /** True when an enforcing rule could not be decided because Redis was away and the rule fails closed. */
    public boolean unavailable() {
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (r.source() == RuleDecision.Source.UNAVAILABLE && !r.allowed() && !r.rule().dryRun()) return true;
        }
        return false;
    }

    /** The rule closest to its limit (a denying rule first): the one whose figures the legacy headers show. */
    public RuleDecision closest() {
        RuleDecision best = null;
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (best == null || r.headroom() < best.headroom()) best = r;
        }
        return best;
    }

    /** When denied: milliseconds until every violated rule would admit the request; else 0. */
    public long retryAfterMs() {
        long max = 0;
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (!r.allowed() && !r.rule().dryRun()) max = Math.max(max, r.retryAfterMs());
        }
        return max;
    }

    /** When denied: how long until every violated rule would admit the request; else zero. */
    public Duration retryAfter() {
        return Duration.ofMillis(retryAfterMs());
    }

    /** When allowed: how long the request must be held for its leaky-bucket slot; else zero. */
    public Duration delay() {
        return Duration.ofMillis(delayMs());
    }

    /**
     * The fewest tokens left over the rules that applied (for one rule: what it has left); 0 when
     * denied. What Bucket4j calls {@code getRemainingTokens()}.
     */
    public long remaining() {
        long min = Long.MAX_VALUE;
        for (int i = 0, n = rules.size(); i < n; i++) {
            min = Math.min(min, rules.get(i).remaining());
        }
        return rules.isEmpty() || !allowed ? 0 : min;
    }

    /** When allowed: how long the request must be held for its leaky-bucket slot; else 0. */
    public long delayMs() {
        long max = 0;
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (r.allowed() && !r.rule().dryRun()) max = Math.max(max, r.delayMs()); // a shadow rule holds nothing
        }
        return allowed ? max : 0;
    }

    @Override
    public String toString() {
        return "Decision{allowed=" + allowed + ", rules=" + rules + '}';
    }
}
