package dev.sluice.config;

import dev.sluice.http.ActualCost;
import dev.sluice.http.RequestMatcher;
import dev.sluice.http.ResponseStatuses;
import dev.sluice.key.KeyCase;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Rule;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A rule as the filter applies it: the plain-Java {@link Rule} (its own figures: the default plan)
 * plus its HTTP side, which requests it applies to ({@code rule.<name>.match}), who the client is
 * ({@code rule.<name>.key}), which plan a request is on ({@code rule.<name>.plan}, {@code plans})
 * and which responses count ({@code rule.<name>.count}).
 *
 * @param rule      the limit, with the rule's own figures; {@link Rule#dryRun()} is {@code rule.<name>.mode}
 * @param key       {@code rule.<name>.key}, e.g. {@code header:X-Api-Key|ip}
 * @param match     {@code rule.<name>.match}, e.g. {@code POST /login, /api/**}
 * @param planKey   {@code rule.<name>.plan}: where a request's plan name comes from, or {@code null}
 * @param plans     {@code rule.<name>.plans} with their figures, in the order listed
 * @param count     {@code rule.<name>.count}: the statuses that count, or {@code null} for every response
 * @param planSourceTrusted {@code rule.<name>.plan.source-trusted}: a trusted hop sets the plan source and
 *                  strips the client's own, so a {@code header:} or {@code query:} plan source is allowed
 * @param keyCase   {@code rule.<name>.key-case}: whether the key's values keep their case; {@code null} is
 *                  {@link KeyCase#SENSITIVE}
 * @param actualCost {@code rule.<name>.actual-cost}: where the application states what a request really cost,
 *                  settled after its response; {@code null}: the rule's {@code cost} stands
 */
public record RuleConfig(Rule rule, KeyExpression key, RequestMatcher match, KeyExpression planKey, List<Plan> plans,
                         ResponseStatuses count, boolean planSourceTrusted, KeyCase keyCase, ActualCost actualCost) {

    /** {@code key=ip}. */
    public static final KeyExpression DEFAULT_KEY = KeyExpression.parse("ip");

    /** {@code match=/**}. */
    public static final RequestMatcher DEFAULT_MATCH = RequestMatcher.parse(List.of("/**"));

    /**
     * One plan of a rule: its figures as a {@link Rule} of the same name (with {@link Rule#plan()} set),
     * or none for an {@code unlimited} plan, whose clients the rule does not apply to.
     *
     * @param name the plan's name
     * @param rule the rule with the plan's figures, or {@code null} when unlimited
     */
    public record Plan(String name, Rule rule) {

        public Plan {
            Objects.requireNonNull(name, "name");
            if (rule != null && !name.equals(rule.plan())) {
                throw new IllegalArgumentException("plan " + name + ": its rule must name the plan, not " + rule.plan());
            }
        }

        /** An {@code unlimited} plan. */
        public static Plan unlimited(String name) {
            return new Plan(name, null);
        }

        public boolean isUnlimited() {
            return rule == null;
        }
    }

    public RuleConfig {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(match, "match");
        if (keyCase == null) keyCase = KeyCase.SENSITIVE;
        plans = plans == null ? List.of() : List.copyOf(plans);
        List<String> names = new ArrayList<>();
        for (Plan p : plans) {
            if (names.contains(p.name())) throw new IllegalArgumentException("plan " + p.name() + " is listed twice");
            names.add(p.name());
            if (p.rule() != null && (!p.rule().name().equals(rule.name()) || p.rule().algorithm() != rule.algorithm())) {
                throw new IllegalArgumentException("plan " + p.name() + " must be of rule " + rule.name()
                        + " with its algorithm " + rule.algorithm().id());
            }
        }
    }

    /** A rule whose cost is what it takes at admission ({@code actual-cost} unset). */
    public RuleConfig(Rule rule, KeyExpression key, RequestMatcher match, KeyExpression planKey, List<Plan> plans,
                      ResponseStatuses count, boolean planSourceTrusted, KeyCase keyCase) {
        this(rule, key, match, planKey, plans, count, planSourceTrusted, keyCase, null);
    }

    /** A rule whose plan source, if any, is one the client cannot set. */
    public RuleConfig(Rule rule, KeyExpression key, RequestMatcher match, KeyExpression planKey, List<Plan> plans,
                      ResponseStatuses count) {
        this(rule, key, match, planKey, plans, count, false, KeyCase.SENSITIVE);
    }

    /** A rule without plans, counting every response. */
    public RuleConfig(Rule rule, KeyExpression key, RequestMatcher match) {
        this(rule, key, match, null, List.of(), null);
    }

    /** The rule on every path ({@code /**}), per client IP. */
    public static RuleConfig of(Rule rule) {
        return new RuleConfig(rule, DEFAULT_KEY, DEFAULT_MATCH);
    }

    public String name() {
        return rule.name();
    }

    /** The plan named {@code name}, or {@code null} when it is not listed (then the rule's own figures apply). */
    public Plan plan(String name) {
        for (int i = 0, n = plans.size(); i < n; i++) {
            Plan p = plans.get(i);
            if (p.name().equals(name)) return p;
        }
        return null;
    }

    /** This rule with {@code plans} selected by {@code planKey}, a source the client cannot set. */
    public RuleConfig withPlans(KeyExpression newPlanKey, List<Plan> newPlans) {
        return withPlans(newPlanKey, newPlans, false);
    }

    /**
     * This rule with {@code plans} selected by {@code planKey}; {@code sourceTrusted} allows a
     * {@code header:} or {@code query:} source, which a trusted hop sets and strips the client's own of.
     */
    public RuleConfig withPlans(KeyExpression newPlanKey, List<Plan> newPlans, boolean sourceTrusted) {
        return new RuleConfig(rule, key, match, newPlanKey, newPlans, count, sourceTrusted, keyCase, actualCost);
    }

    /** This rule counting only responses with these statuses ({@code null}: all). */
    public RuleConfig withCount(ResponseStatuses statuses) {
        return new RuleConfig(rule, key, match, planKey, plans, statuses, planSourceTrusted, keyCase, actualCost);
    }

    /** This rule with its key values kept as they are or folded. */
    public RuleConfig withKeyCase(KeyCase newKeyCase) {
        return new RuleConfig(rule, key, match, planKey, plans, count, planSourceTrusted, newKeyCase, actualCost);
    }

    /** This rule settling its cost after the response from {@code source} ({@code null}: the cost stands). */
    public RuleConfig withActualCost(ActualCost source) {
        return new RuleConfig(rule, key, match, planKey, plans, count, planSourceTrusted, keyCase, source);
    }

    /** Whether the client sets the plan source itself ({@code header:} or {@code query:} in any alternative). */
    public boolean planSourceClientSet() {
        return planKey != null && (planKey.uses(KeyExpression.Kind.HEADER) || planKey.uses(KeyExpression.Kind.QUERY));
    }
}
