package dev.sluice.config;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PlaceholdersTest {

    private final Map<String, String> systemProperties = Map.of("redis.host", "from-property", "BOTH", "property");
    private final Map<String, String> environment = Map.of("REDIS_HOST", "from-env", "BOTH", "env", "EMPTY", "");
    private final Placeholders placeholders = new Placeholders(systemProperties::get, environment::get);

    @Test
    void aValueWithoutPlaceholdersIsReturnedAsIs() {
        assertThat(placeholders.resolve("mode", "dry-run")).isEqualTo("dry-run");
    }

    @Test
    void aPlaceholderIsReplacedByAnEnvironmentVariable() {
        assertThat(placeholders.resolve("redis.url", "redis://${REDIS_HOST}:6379")).isEqualTo("redis://from-env:6379");
    }

    @Test
    void aSystemPropertyWinsOverAnEnvironmentVariableOfTheSameName() {
        assertThat(placeholders.resolve("mode", "${BOTH}")).isEqualTo("property");
        assertThat(placeholders.resolve("mode", "${redis.host}")).isEqualTo("from-property");
    }

    @Test
    void theDefaultIsUsedOnlyWhenNeitherIsSet() {
        assertThat(placeholders.resolve("redis.url", "${REDIS_URL:redis://localhost:6379}"))
                .as("the default is everything after the first colon")
                .isEqualTo("redis://localhost:6379");
        assertThat(placeholders.resolve("redis.url", "redis://${REDIS_HOST:localhost}:6379"))
                .isEqualTo("redis://from-env:6379");
    }

    @Test
    void anEmptyDefaultAndAnEmptyVariableAreEmptyValues() {
        assertThat(placeholders.resolve("redis.password", "${REDIS_PASSWORD:}")).isEmpty();
        assertThat(placeholders.resolve("redis.password", "${EMPTY:fallback}")).isEmpty();
    }

    @Test
    void severalPlaceholdersInOneValueAreAllReplaced() {
        assertThat(placeholders.resolve("redis.url", "redis://${REDIS_HOST}:${PORT:6380}/${DB:2}"))
                .isEqualTo("redis://from-env:6380/2");
    }

    @Test
    void aResolvedValueIsNotScannedAgain() {
        Placeholders tricky = new Placeholders(name -> null, Map.of("A", "${B}", "B", "b")::get);
        assertThat(tricky.resolve("key-prefix", "${A}")).isEqualTo("${B}");
    }

    @Test
    void anUnresolvedPlaceholderWithoutDefaultNamesTheKeyAndThePlaceholder() {
        assertThatThrownBy(() -> placeholders.resolve("redis.url", "${REDIS_URL}"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("redis.url='${REDIS_URL}'")
                .hasMessageContaining("placeholder ${REDIS_URL} is neither a system property nor an environment variable")
                .hasMessageContaining("${REDIS_URL:default}");
    }

    @Test
    void anUnclosedPlaceholderIsAnError() {
        assertThatThrownBy(() -> placeholders.resolve("redis.url", "redis://${REDIS_HOST:6379"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("redis.url")
                .hasMessageContaining("never closed");
    }

    @Test
    void aPlaceholderWithoutAValidNameIsAnError() {
        assertThatThrownBy(() -> placeholders.resolve("mode", "${:enforce}"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("mode='${:enforce}'")
                .hasMessageContaining("needs a name");
        assertThatThrownBy(() -> placeholders.resolve("mode", "${A B}"))
                .isInstanceOf(ConfigException.class);
    }

    @Test
    void aPlaceholderInADefaultIsRefusedRatherThanHalfResolved() {
        assertThatThrownBy(() -> placeholders.resolve("redis.url", "${REDIS_URL:${OTHER}}"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("nested placeholders are not supported");
    }
}
