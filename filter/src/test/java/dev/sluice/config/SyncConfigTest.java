package dev.sluice.config;

import dev.sluice.limiter.Rule;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** {@code rule.<name>.sync}: the approximate mode's key, its checks, and that it changes while running. */
class SyncConfigTest {

    private final Map<String, String> none = new HashMap<>();
    private final ConfigLoader loader = new ConfigLoader(new Placeholders(none::get, none::get));

    private SluiceConfig load(String... keysAndValues) {
        Map<String, String> raw = new LinkedHashMap<>();
        raw.put("rules", "api");
        raw.put("rule.api.algorithm", "fixed-window");
        raw.put("rule.api.limit", "1000");
        raw.put("rule.api.window", "1s");
        for (int i = 0; i < keysAndValues.length; i += 2) raw.put(keysAndValues[i], keysAndValues[i + 1]);
        return loader.parse(raw);
    }

    private ConfigException rejected(String... keysAndValues) {
        ConfigException e = catchThrowableOfType(() -> load(keysAndValues), ConfigException.class);
        assertThat(e).as("rejected").isNotNull();
        return e;
    }

    @Test
    void aRuleIsExactUnlessItSaysHowOftenToSync() {
        Rule exact = load().rules().get(0).rule();
        assertThat(exact.approximate()).isFalse();
        assertThat(exact.sync()).isEqualTo(Duration.ZERO);

        Rule approximate = load("rule.api.sync", "100ms").rules().get(0).rule();
        assertThat(approximate.approximate()).isTrue();
        assertThat(approximate.syncMillis()).isEqualTo(100);
        assertThat(load("rule.api.sync", "0").rules().get(0).rule().approximate()).isFalse();
        assertThat(load("rule.api.algorithm", "sliding-window-counter", "rule.api.sync", "500ms").rules().get(0).rule()
                .approximate()).isTrue();
    }

    @Test
    void onlyTheWindowAlgorithmsThatCountPerWindowCanSync() {
        for (String algorithm : new String[]{"token-bucket", "gcra", "leaky-bucket", "sliding-window-log"}) {
            ConfigException e = rejected("rule.api.algorithm", algorithm, "rule.api.sync", "100ms");
            assertThat(e.key()).isEqualTo("rule.api.sync");
            assertThat(e.value()).isEqualTo("100ms");
            assertThat(e).hasMessageContaining("only for fixed-window and sliding-window-counter").hasMessageContaining(algorithm);
        }
    }

    @Test
    void aSyncIntervalIsAtMostHalfTheWindow() {
        assertThat(load("rule.api.sync", "500ms").rules().get(0).rule().syncMillis()).isEqualTo(500);
        ConfigException e = rejected("rule.api.sync", "501ms");
        assertThat(e.key()).isEqualTo("rule.api.sync");
        assertThat(e).hasMessageContaining("at most half the window (500 ms");
        assertThat(rejected("rule.api.sync", "100").key()).as("a duration carries its unit").isEqualTo("rule.api.sync");
        assertThat(rejected("rule.api.sync", "-1s").key()).isEqualTo("rule.api.sync");
    }

    @Test
    void aPlanWithAShorterWindowMustStillLeaveRoomForTwoSyncs() {
        ConfigException e = rejected("rule.api.sync", "400ms", "rule.api.plan", "attr:plan", "rule.api.plans", "gold",
                "rule.api.plan.gold.limit", "10", "rule.api.plan.gold.window", "600ms");
        assertThat(e.key()).isEqualTo("rule.api.sync");
        assertThat(e).hasMessageContaining("plan gold").hasMessageContaining("half the window (300 ms");
    }

    @Test
    void countingOnlySomeOutcomesIsRefusedWithSync() {
        ConfigException e = rejected("rule.api.sync", "100ms", "rule.api.count", "4xx");
        assertThat(e.key()).isEqualTo("rule.api.count");
        assertThat(e).hasMessageContaining("not available with rule.api.sync");
    }

    @Test
    void syncChangesWhileRunningLikeTheOtherRuleKeys() {
        SluiceConfig exact = load();
        SluiceConfig approximate = load("rule.api.sync", "100ms");
        assertThatCode(() -> approximate.checkReplaces(exact)).doesNotThrowAnyException();
        assertThatCode(() -> exact.checkReplaces(approximate)).doesNotThrowAnyException();
    }
}
