package dev.sluice.config;

import dev.sluice.http.RequestMatcher;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Rule;

import java.util.List;
import java.util.Objects;

/**
 * A rule as the filter applies it: the plain-Java {@link Rule} plus its HTTP side, which requests
 * it applies to ({@code rule.<name>.match}) and who the client is ({@code rule.<name>.key}).
 *
 * @param rule  the limit
 * @param key   {@code rule.<name>.key}, e.g. {@code header:X-Api-Key|ip}
 * @param match {@code rule.<name>.match}, e.g. {@code POST /login, /api/**}
 */
public record RuleConfig(Rule rule, KeyExpression key, RequestMatcher match) {

    /** {@code key=ip}. */
    public static final KeyExpression DEFAULT_KEY = KeyExpression.parse("ip");

    /** {@code match=/**}. */
    public static final RequestMatcher DEFAULT_MATCH = RequestMatcher.parse(List.of("/**"));

    public RuleConfig {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(match, "match");
    }

    /** The rule on every path ({@code /**}), per client IP. */
    public static RuleConfig of(Rule rule) {
        return new RuleConfig(rule, DEFAULT_KEY, DEFAULT_MATCH);
    }

    public String name() {
        return rule.name();
    }
}
