package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class RuleCacheTest {

    private final AtomicInteger derivations = new AtomicInteger();
    private final RuleCache<String> cache = new RuleCache<>(r -> r.name() + "#" + derivations.incrementAndGet());

    @Test
    void aRuleIsDerivedOnceAndAnEqualCopyFindsTheSameValue() {
        Rule rule = Rule.of("api", Algorithm.GCRA, 10, Duration.ofSeconds(1));
        Rule copy = Rule.of("api", Algorithm.GCRA, 10, Duration.ofSeconds(1));
        assertThat(cache.get(rule)).isEqualTo("api#1");
        assertThat(cache.get(rule)).isEqualTo("api#1");
        assertThat(cache.get(copy)).isEqualTo("api#1");
        assertThat(derivations).hasValue(1);
    }

    @Test
    void differentRulesGetTheirOwnValues() {
        for (int i = 0; i < 200; i++) {
            Rule rule = Rule.of("r" + i, Algorithm.FIXED_WINDOW, 10, Duration.ofSeconds(1));
            assertThat(cache.get(rule)).isEqualTo("r" + i + "#" + (i + 1));
        }
        for (int i = 0; i < 200; i++) {
            assertThat(cache.get(Rule.of("r" + i, Algorithm.FIXED_WINDOW, 10, Duration.ofSeconds(1)))).startsWith("r" + i + "#");
        }
        assertThat(derivations).hasValue(200);
    }
}
