package dev.sluice.config;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.InvalidRuleException;
import dev.sluice.limiter.Rule;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** The one builder: every cross-field check, for code and for text alike. */
class SluiceConfigBuilderTest {

    private static final Rule API = Rule.of("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1));

    private static ConfigException rejected(Map<String, String> properties) {
        return catchThrowableOfType(() -> ConfigLoader.load(properties), ConfigException.class);
    }

    @Test
    void aConfigurationBuiltInCodeEqualsTheSameOneReadFromText() {
        SluiceConfig fromText = ConfigLoader.load(Map.of("rules", "api", "rule.api.limit", "10", "rule.api.window", "1m",
                "redis.url", "redis://cache:6380/2", "redis.timeout", "80ms", "status-code", "503"));
        SluiceConfig inCode = SluiceConfig.builder().rule(API).redisUrl("redis://cache:6380/2")
                .redisTimeout(Duration.ofMillis(80)).statusCode(503).build();
        assertThat(inCode).isEqualTo(fromText);
        assertThat(inCode.toBuilder().build()).isEqualTo(inCode);
    }

    @Test
    void atLeastOneRuleAndEachOnce() {
        assertThatThrownBy(() -> SluiceConfig.builder().build()).isInstanceOf(ConfigException.class)
                .hasMessageContaining("rules").hasMessageContaining("at least one rule");
        assertThatThrownBy(() -> SluiceConfig.builder().rule(API).rule(API).build())
                .hasMessageContaining("'api' is listed twice");
    }

    @Test
    void rangesAndCombinationsAreCheckedForCodeToo() {
        assertThat(catchThrowableOfType(() -> SluiceConfig.builder().rule(API).statusCode(200).build(),
                ConfigException.class).key()).isEqualTo("status-code");
        assertThat(catchThrowableOfType(() -> SluiceConfig.builder().rule(API).redisPoolMaxTotal(8).redisPoolMaxIdle(9)
                .build(), ConfigException.class).key()).isEqualTo("redis.pool.max-idle");
        assertThat(catchThrowableOfType(() -> SluiceConfig.builder().rule(API).breakerOpenBase(Duration.ofSeconds(2))
                .breakerOpenMax(Duration.ofSeconds(1)).build(), ConfigException.class).key()).isEqualTo("redis.breaker.open-max");
        assertThat(catchThrowableOfType(() -> SluiceConfig.builder().rule(API).keyPrefix("a{b}").build(),
                ConfigException.class).key()).isEqualTo("key-prefix");
        assertThat(catchThrowableOfType(() -> SluiceConfig.builder().rule(API)
                .redisClusterNodes(List.of(new SluiceConfig.HostPort("c1", 7000))).redisUrl("redis://h").build(),
                ConfigException.class).key()).isEqualTo("redis.url");
    }

    /** fixed-window, limit 100, cost 10, fallback-limit 5: during an outage every request would be refused. */
    @Test
    void theCostMustFitTheBackstopsCapacity() {
        ConfigException e = rejected(Map.of("rules", "api", "rule.api.algorithm", "fixed-window", "rule.api.limit", "100",
                "rule.api.window", "1m", "rule.api.cost", "10", "rule.api.fallback-limit", "5"));
        assertThat(e.key()).isEqualTo("rule.api.fallback-limit");
        assertThat(e).hasMessageContaining("'5'").hasMessageContaining("at least 10");

        ConfigException bucket = rejected(Map.of("rules", "api", "rule.api.limit", "100", "rule.api.burst", "200",
                "rule.api.window", "1m", "rule.api.cost", "10", "rule.api.fallback-limit", "4"));
        assertThat(bucket.key()).isEqualTo("rule.api.fallback-limit");
        assertThat(bucket).hasMessageContaining("its capacity is 8").hasMessageContaining("at least 5");
        assertThat(ConfigLoader.load(Map.of("rules", "api", "rule.api.limit", "100", "rule.api.burst", "200",
                "rule.api.window", "1m", "rule.api.cost", "10", "rule.api.fallback-limit", "5"))
                .rules().get(0).rule().asFallback().burst()).isEqualTo(10);
    }

    /** 10,000,000 a day: about 1 GB per client in Redis, and a large cost runs thousands of ZADDs in one script. */
    @Test
    void aSlidingWindowLogHasASizeCapWithAClearMessage() {
        ConfigException e = rejected(Map.of("rules", "api", "rule.api.algorithm", "sliding-window-log",
                "rule.api.limit", "10000000", "rule.api.window", "1d"));
        assertThat(e.key()).isEqualTo("rule.api.limit");
        assertThat(e).hasMessageContaining("at most " + Rule.MAX_LOG_LIMIT).hasMessageContaining("sliding-window-counter");
        assertThat(ConfigLoader.load(Map.of("rules", "api", "rule.api.algorithm", "sliding-window-log",
                "rule.api.limit", "10000", "rule.api.window", "1d")).rules()).hasSize(1);
    }

    @Test
    void aHugeWindowNamesTheKeyInsteadOfOverflowing() {
        ConfigException e = rejected(Map.of("rules", "api", "rule.api.limit", "1", "rule.api.window", "200000000000d"));
        assertThat(e.key()).isEqualTo("rule.api.window");
        assertThat(e).hasMessageContaining("200000000000d");
    }

    @Test
    void aRuleMadeInCodeIsValidatedByItselfNamingTheField() {
        InvalidRuleException e = catchThrowableOfType(() -> Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW)
                .limit(5).window(Duration.ofMinutes(1)).burst(10).build(), InvalidRuleException.class);
        assertThat(e.field()).isEqualTo("burst");
        assertThat(catchThrowableOfType(() -> Rule.builder("a b").limit(5).window(Duration.ofMinutes(1)).build(),
                InvalidRuleException.class).field()).isEqualTo("name");
        assertThat(catchThrowableOfType(() -> Rule.builder("api").limit(5).window(Duration.ofMillis(1).plusNanos(1)).build(),
                InvalidRuleException.class).field()).isEqualTo("window");
        assertThat(catchThrowableOfType(() -> Rule.builder("api").limit(5).window(Duration.ofMinutes(1))
                .maxDelay(Duration.ofSeconds(1)).build(), InvalidRuleException.class).field()).isEqualTo("max-delay");
        assertThat(Rule.builder("api").limit(5).window(Duration.ofMinutes(1)).build())
                .isEqualTo(Rule.of("api", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1)));
    }
}
