package dev.sluice.config;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DurationsTest {

    @ParameterizedTest
    @CsvSource({
            "250ms, 250",
            "30s, 30000",
            "5m, 300000",
            "1h, 3600000",
            "1d, 86400000",
            "30S, 30000",
            "10 s, 10000",
            "PT1M, 60000",
            "PT0.5S, 500",
            "pt2s, 2000",
            "P1D, 86400000",
    })
    void acceptsAWholeNumberWithAUnitOrIso8601(String value, long millis) {
        assertThat(Durations.parse("rule.api.window", value)).isEqualTo(Duration.ofMillis(millis));
    }

    @ParameterizedTest
    @CsvSource({
            "2000, 2s",
            "90000, 90s",
            "1500, 1500ms",
            "60000, 1m",
            "7200000, 2h",
            "86400000, 1d",
            "0, 0",
    })
    void aDurationIsShownAsAUserWritesOneAndParsesBackToItself(long millis, String shown) {
        assertThat(Durations.format(Duration.ofMillis(millis))).isEqualTo(shown);
        assertThat(Durations.parse("reload", shown)).isEqualTo(Duration.ofMillis(millis));
    }

    @Test
    void aDurationFinerThanAMillisecondIsRejectedRatherThanTruncated() {
        assertThatThrownBy(() -> Durations.parse("rule.api.window", "PT1.0005S"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rule.api.window='PT1.0005S'").hasMessageContaining("whole milliseconds");
    }

    @Test
    void zeroNeedsNoUnitBecauseItIsTheSameInEveryUnit() {
        assertThat(Durations.parse("rule.slow.max-delay", "0")).isZero();
        assertThat(Durations.parse("rule.slow.max-delay", "0ms")).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"60", "1.5", "250"})
    void aBareNumberIsRejectedWithAdviceToAddAUnit(String value) {
        assertThatThrownBy(() -> Durations.parse("rule.api.window", value))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rule.api.window")
                .hasMessageContaining("'" + value + "'")
                .hasMessageContaining("add one, e.g. " + value + "s")
                .hasMessageContaining("250ms, 30s, 5m, 1h, 1d");
    }

    @ParameterizedTest
    @ValueSource(strings = {"-5s", "PT-1S", "-PT1S"})
    void aNegativeDurationIsRejected(String value) {
        assertThatThrownBy(() -> Durations.parse("redis.timeout", value))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("redis.timeout='" + value + "'")
                .hasMessageContaining("must not be negative");
    }

    @ParameterizedTest
    @ValueSource(strings = {"fast", "5 minutes", "1w", "s", "P", "PTxS", "5ms5"})
    void anythingElseIsRejectedNamingTheAcceptedForms(String value) {
        assertThatThrownBy(() -> Durations.parse("redis.timeout", value))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("redis.timeout='" + value + "'")
                .hasMessageContaining("a duration with a unit: 250ms, 30s, 5m, 1h, 1d, or ISO-8601");
    }

    @Test
    void aNumberTooLargeForADurationIsRejectedNotWrapped() {
        assertThatThrownBy(() -> Durations.parse("rule.api.window", "99999999999999999999d"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("too large");
        assertThatThrownBy(() -> Durations.parse("rule.api.window", "999999999999999999d"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("too large");
    }
}
