package dev.sluice.config;

import dev.sluice.limiter.Rule;

import java.util.List;
import java.util.Objects;

/**
 * A rule as configured: the plain-Java {@link Rule} plus the HTTP side (which requests it applies
 * to and who the client is), both validated at load.
 *
 * @param rule    the limit
 * @param key     {@code rule.<name>.key}: the key expression, e.g. {@code header:X-Api-Key|ip}; validated
 * @param match   {@code rule.<name>.match}: {@code [METHOD ]pattern} entries; validated
 */
public record RuleConfig(Rule rule, String key, List<String> match) {

    public RuleConfig {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(key, "key");
        match = List.copyOf(match);
    }

    public String name() {
        return rule.name();
    }
}
