package dev.sluice.config;

import dev.sluice.config.SluiceConfig.HostPort;
import dev.sluice.http.RequestMatcher;
import dev.sluice.key.KeyCase;
import dev.sluice.key.KeyExpression;
import dev.sluice.key.CidrSet;
import dev.sluice.config.SluiceConfig.Backend;
import dev.sluice.config.SluiceConfig.BreakerSettings;
import dev.sluice.key.ClientIpResolver.Header;
import dev.sluice.config.SluiceConfig.ClockSource;
import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.config.SluiceConfig.Mode;
import dev.sluice.config.SluiceConfig.RedisSettings;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class ConfigLoaderTest {

    private final Map<String, String> environment = new HashMap<>();
    private final Map<String, String> systemProperties = new HashMap<>();
    private final ConfigLoader loader = new ConfigLoader(new Placeholders(systemProperties::get, environment::get));

    /** The smallest valid configuration: one rule with its two required keys. */
    private static Map<String, String> minimal() {
        Map<String, String> raw = new LinkedHashMap<>();
        raw.put("rules", "api");
        raw.put("rule.api.limit", "10");
        raw.put("rule.api.window", "1m");
        return raw;
    }

    private static Map<String, String> minimalWith(String... keysAndValues) {
        Map<String, String> raw = minimal();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            raw.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return raw;
    }

    private SluiceConfig load(String... keysAndValues) {
        return loader.parse(minimalWith(keysAndValues));
    }

    private RedisSettings redis(String... keysAndValues) {
        return load(keysAndValues).redis();
    }

    private Rule rule(String... keysAndValues) {
        return load(keysAndValues).rules().get(0).rule();
    }

    /** Asserts the rejection names the key and the value (as shown) and says what is accepted. */
    private AbstractThrowableAssert<?, ? extends Throwable> assertRejected(Map<String, String> raw, String key,
                                                                          String value, String accepted) {
        ConfigException e = catchThrowableOfType(() -> loader.parse(raw), ConfigException.class);
        assertThat(e).as("expected a ConfigException for %s", key).isNotNull();
        assertThat(e.key()).isEqualTo(key);
        assertThat(e.value()).isEqualTo(value);
        return assertThat(e)
                .hasMessageStartingWith("Invalid Sluice configuration: " + key + "=" + (value == null ? "(missing)" : "'" + value + "'"))
                .hasMessageContaining(accepted);
    }

    private AbstractThrowableAssert<?, ? extends Throwable> assertRejected(String key, String value, String accepted) {
        return assertRejected(minimalWith(key, value), key, value, accepted);
    }

    @Test
    void theDefaultsOfTheContractApplyToEveryKeyNotGiven() {
        SluiceConfig config = loader.parse(minimal());

        Rule api = new Rule("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1), 10, 1, FailurePolicy.OPEN, 10,
                Duration.ZERO);
        assertThat(config).isEqualTo(SluiceConfig.builder().rule(api).build());
        assertThat(config.rules()).containsExactly(new RuleConfig(api, KeyExpression.parse("ip"), RequestMatcher.parse(List.of("/**"))));
        assertThat(config.backend()).isEqualTo(Backend.REDIS);
        assertThat(config.redis()).isEqualTo(new RedisSettings("localhost", 6379, 0, null, null, false, List.of(), null,
                List.of(), Duration.ofMillis(50), 64, 64, 4, Duration.ofMillis(50)));
        assertThat(config.keyPrefix()).isEqualTo("rl:");
        assertThat(config.clock()).isEqualTo(ClockSource.REDIS);
        assertThat(config.failurePolicy()).isEqualTo(FailurePolicy.OPEN);
        assertThat(config.trustedProxies().isEmpty()).isTrue();
        assertThat(config.clientIpHeader()).isEqualTo(Header.X_FORWARDED_FOR);
        assertThat(config.ipv6Prefix()).isEqualTo(64);
        assertThat(config.headers()).isEqualTo(HeaderStyle.BOTH);
        assertThat(config.statusCode()).isEqualTo(429);
        assertThat(config.mode()).isEqualTo(Mode.ENFORCE);
        assertThat(config.exclude().isEmpty()).isTrue();
        assertThat(config.exemptIps().isEmpty()).isTrue();
        assertThat(config.localMaxKeys()).isEqualTo(100_000);
        assertThat(config.deniedCache()).isEqualTo(new SluiceConfig.DeniedCacheSettings(true, 10_000, Duration.ofSeconds(1)));
        assertThat(config.breaker()).isEqualTo(new BreakerSettings(3, Duration.ofMillis(100), Duration.ofSeconds(1)));
        assertThat(config.micrometer()).isTrue();
        assertThat(config.source()).isEqualTo(Map.of("rules", "api", "rule.api.limit", "10", "rule.api.window", "1m"));
    }

    @Test
    void micrometerMetricsCanBeTurnedOffAndTheValueIsTrueOrFalse() {
        assertThat(loader.parse(minimalWith("metrics.micrometer", "false")).micrometer()).isFalse();
        assertRejected("metrics.micrometer", "off", "one of true, false");
    }

    @Test
    void propertiesAreLoadedLikeAMapIncludingTheirDefaults() {
        Properties defaults = new Properties();
        defaults.setProperty("rules", "api");
        Properties properties = new Properties(defaults);
        properties.setProperty("rule.api.limit", "10");
        properties.setProperty("rule.api.window", "1m");
        assertThat(ConfigLoader.load(properties).rules()).extracting(RuleConfig::name).containsExactly("api");
    }

    @Test
    void keysAndValuesAreTrimmed() {
        Map<String, String> raw = new HashMap<>();
        raw.put(" rules ", " api , login ");
        raw.put("rule.api.limit ", "\t10 ");
        raw.put("rule.api.window", " 1m");
        raw.put("rule.login.limit", "5");
        raw.put("rule.login.window", "1m");
        SluiceConfig config = loader.parse(raw);
        assertThat(config.rules()).extracting(RuleConfig::name).containsExactly("api", "login");
        assertThat(config.rules().get(0).rule().limit()).isEqualTo(10);
    }

    @Test
    void aBlankValueMeansNotSet() {
        SluiceConfig config = load("status-code", "", "redis.password", " ", "rule.api.burst", "");
        assertThat(config.statusCode()).isEqualTo(429);
        assertThat(config.redis().password()).isNull();
        assertThat(config.rules().get(0).rule().burst()).isEqualTo(10);
    }

    @Test
    void theConfigurationIsImmutable() {
        SluiceConfig config = load("trusted-proxies", "10.0.0.0/8");
        assertThatThrownBy(() -> config.rules().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> config.trustedProxies().cidrs().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> config.source().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> config.rules().get(0).match().entries().clear()).isInstanceOf(UnsupportedOperationException.class);
    }

    @Nested
    class Substitution {

        @Test
        void everyValueMaySubstituteEnvironmentVariablesAndSystemProperties() {
            environment.put("REDIS_URL", "redis://cache:6380");
            systemProperties.put("api.limit", "250");
            SluiceConfig config = load("redis.url", "${REDIS_URL}", "rule.api.limit", "${api.limit}");
            assertThat(config.redis().host()).isEqualTo("cache");
            assertThat(config.redis().port()).isEqualTo(6380);
            assertThat(config.rules().get(0).rule().limit()).isEqualTo(250);
        }

        @Test
        void theDefaultAppliesWhenTheVariableIsNotSet() {
            SluiceConfig config = load("redis.url", "${REDIS_URL:redis://fallback:6381}", "rule.api.window", "${WINDOW:30s}");
            assertThat(config.redis().host()).isEqualTo("fallback");
            assertThat(config.rules().get(0).rule().window()).isEqualTo(Duration.ofSeconds(30));
        }

        @Test
        void anEmptyDefaultLeavesTheKeyUnset() {
            assertThat(redis("redis.password", "${REDIS_PASSWORD:}").password()).isNull();
            environment.put("REDIS_PASSWORD", "hunter2");
            assertThat(redis("redis.password", "${REDIS_PASSWORD:}").password()).isEqualTo("hunter2");
        }

        @Test
        void theSubstitutedValueIsValidated() {
            environment.put("LIMIT", "-1");
            assertRejected(minimalWith("rule.api.limit", "${LIMIT}"), "rule.api.limit", "-1", "a whole number, at least 1");
        }

        @Test
        void anUnresolvedPlaceholderNamesTheKeyAndThePlaceholder() {
            assertRejected("redis.url", "${REDIS_URL}", "placeholder ${REDIS_URL} is neither");
        }
    }

    @Nested
    class Rules {

        @Test
        void rulesIsRequired() {
            Map<String, String> raw = minimal();
            raw.remove("rules");
            raw.remove("rule.api.limit");
            raw.remove("rule.api.window");
            assertRejected(raw, "rules", null, "required: comma-separated rule names");
            assertRejected(Map.of("rules", " "), "rules", "", "required");
            assertRejected(Map.of("rules", ", ,"), "rules", ", ,", "required");
        }

        @ParameterizedTest
        @CsvSource(delimiter = '|', value = {
                "api.v2     | 'api.v2' is not a rule name",
                "api v2     | 'api v2' is not a rule name",
                "api, api   | 'api' is listed twice",
                "r{1}       | 'r{1}' is not a rule name",
        })
        void ruleNamesAreLettersDigitsUnderscoresAndDashesListedOnce(String rules, String why) {
            assertRejected(minimalWith("rules", rules), "rules", rules, why);
        }

        @Test
        void aRuleNameMayBe64CharactersButNotMore() {
            String name64 = "r".repeat(64);
            SluiceConfig config = loader.parse(Map.of("rules", name64, "rule." + name64 + ".limit", "1",
                    "rule." + name64 + ".window", "1s"));
            assertThat(config.rules().get(0).name()).isEqualTo(name64);
            assertRejected(Map.of("rules", name64 + "r"), "rules", name64 + "r", "at most 64 characters");
        }

        @Test
        void rulesKeepTheOrderListed() {
            SluiceConfig config = loader.parse(Map.of("rules", "zeta, alpha, mid",
                    "rule.zeta.limit", "1", "rule.zeta.window", "1s",
                    "rule.alpha.limit", "2", "rule.alpha.window", "1s",
                    "rule.mid.limit", "3", "rule.mid.window", "1s"));
            assertThat(config.rules()).extracting(RuleConfig::name).containsExactly("zeta", "alpha", "mid");
        }

        @Test
        void aListedRuleWithoutLimitIsRejected() {
            Map<String, String> raw = minimal();
            raw.remove("rule.api.limit");
            assertRejected(raw, "rule.api.limit", null, "required: a whole number, at least 1");
        }

        @Test
        void aListedRuleWithoutWindowIsRejected() {
            Map<String, String> raw = minimal();
            raw.remove("rule.api.window");
            assertRejected(raw, "rule.api.window", null, "required: a duration with a unit");
        }

        @Test
        void aKeyOfARuleNotListedIsRejected() {
            assertRejected("rule.admin.limit", "5", "a key of rule 'admin', which is not listed in rules (api)");
        }

        @Test
        void aKeyOfAMisspelledRuleSuggestsTheListedOne() {
            assertRejected("rule.apu.limit", "5", "not listed in rules (api)")
                    .hasMessageContaining("did you mean rule.api.limit?");
        }

        @ParameterizedTest
        @ValueSource(strings = {"-5", "0", "ten", "1.5", "2147483648"})
        void limitIsAWholeNumberOfAtLeastOne(String limit) {
            assertRejected("rule.api.limit", limit, "a whole number, at least 1");
        }

        @Test
        void aBareNumberWindowIsRejectedAskingForAUnit() {
            assertRejected("rule.api.window", "60", "a duration with a unit: 250ms, 30s, 5m, 1h, 1d")
                    .hasMessageContaining("add one, e.g. 60s");
        }

        @Test
        void aZeroWindowIsRejected() {
            assertRejected("rule.api.window", "0ms", "at least 1ms");
        }

        @Test
        void everyAlgorithmOfTheContractIsAccepted() {
            for (Algorithm algorithm : Algorithm.values()) {
                if (algorithm.isConcurrency()) continue; // no window: below
                assertThat(rule("rule.api.algorithm", algorithm.id()).algorithm()).isEqualTo(algorithm);
            }
            assertThat(ConfigLoader.load(Map.of("rules", "api", "rule.api.algorithm", "concurrency", "rule.api.limit", "5"))
                    .rule("api").rule().algorithm()).isEqualTo(Algorithm.CONCURRENCY);
            assertThat(rule("rule.api.algorithm", "Fixed-Window").algorithm()).isEqualTo(Algorithm.FIXED_WINDOW);
        }

        @Test
        void anUnknownAlgorithmIsRejectedListingTheAcceptedOnes() {
            assertRejected("rule.api.algorithm", "sliding-window", "one of fixed-window, sliding-window-counter,"
                    + " sliding-window-log, token-bucket, leaky-bucket, gcra, concurrency");
        }

        @Test
        void eachRuleKeyIsRead() {
            Rule rule = rule("rule.api.algorithm", "gcra", "rule.api.burst", "20", "rule.api.cost", "2",
                    "rule.api.failure-policy", "closed", "rule.api.fallback-limit", "3");
            assertThat(rule).isEqualTo(new Rule("api", Algorithm.GCRA, 10, Duration.ofMinutes(1), 20, 2,
                    FailurePolicy.CLOSED, 3, Duration.ZERO));
        }

        @Test
        void aRuleInheritsTheGlobalFailurePolicyUnlessItSetsItsOwn() {
            SluiceConfig config = loader.parse(Map.of("rules", "api, login", "failure-policy", "closed",
                    "rule.api.limit", "1", "rule.api.window", "1s",
                    "rule.login.limit", "1", "rule.login.window", "1s", "rule.login.failure-policy", "OPEN"));
            assertThat(config.failurePolicy()).isEqualTo(FailurePolicy.CLOSED);
            assertThat(config.rules().get(0).rule().failurePolicy()).isEqualTo(FailurePolicy.CLOSED);
            assertThat(config.rules().get(1).rule().failurePolicy()).isEqualTo(FailurePolicy.OPEN);
        }

        @Test
        void burstDefaultsToLimitAndMustBePositive() {
            assertThat(rule("rule.api.limit", "7").burst()).isEqualTo(7);
            assertRejected("rule.api.burst", "0", "a whole number, at least 1");
        }

        @Test
        void burstIsRejectedOnWindowAlgorithmsWhichHaveNoBucket() {
            assertRejected(minimalWith("rule.api.algorithm", "fixed-window", "rule.api.burst", "20"),
                    "rule.api.burst", "20", "only for token-bucket, leaky-bucket and gcra");
        }

        @Test
        void costDefaultsToOneAndMayNotExceedWhatTheBucketHolds() {
            assertThat(rule().cost()).isEqualTo(1);
            assertRejected("rule.api.cost", "0", "a whole number, at least 1");
            assertRejected("rule.api.cost", "11", "a whole number from 1 to 10 (the rule's limit)")
                    .hasMessageContaining("could never be admitted");
            assertThat(rule("rule.api.burst", "20", "rule.api.cost", "20").cost()).isEqualTo(20);
        }

        @Test
        void fallbackLimitDefaultsToLimit() {
            assertThat(rule("rule.api.limit", "42").fallbackLimit()).isEqualTo(42);
            assertRejected("rule.api.fallback-limit", "-1", "a whole number, at least 1");
        }

        @Test
        void failurePolicyIsOpenOrClosed() {
            assertRejected("rule.api.failure-policy", "fail", "one of open, closed");
        }

        @Test
        void maxDelayDefaultsToZeroAndIsReadForLeakyBucket() {
            assertThat(rule().maxDelay()).isZero();
            Rule leaky = rule("rule.api.algorithm", "leaky-bucket", "rule.api.max-delay", "500ms");
            assertThat(leaky.maxDelay()).isEqualTo(Duration.ofMillis(500));
            assertThat(rule("rule.api.algorithm", "leaky-bucket", "rule.api.max-delay", "0").maxDelay()).isZero();
        }

        @Test
        void maxDelayOnAnotherAlgorithmIsRejectedNamingTheKey() {
            assertRejected("rule.api.max-delay", "500ms", "only for leaky-bucket; rule.api.algorithm is token-bucket");
            assertRejected(minimalWith("rule.api.algorithm", "leaky-bucket", "rule.api.max-delay", "-1s"),
                    "rule.api.max-delay", "-1s", "must not be negative");
        }

        @Test
        void keyIsAValidatedKeyExpression() {
            assertThat(load("rule.api.key", "header:X-Api-Key|ip").rules().get(0).key()).isEqualTo(KeyExpression.parse("header:X-Api-Key|ip"));
            assertRejected("rule.api.key", "cookie:sid", "unknown source 'cookie:sid'")
                    .hasMessageContaining("header:NAME");
        }

        @Test
        void matchIsCommaSeparatedEntriesWithMethodsJoinedByBars() {
            assertThat(load("rule.api.match", "POST /login, GET|HEAD /feed,/api/**").rules().get(0).match().entries())
                    .containsExactly("POST /login", "GET|HEAD /feed", "/api/**");
        }

        @Test
        void aMalformedMatchIsRejected() {
            assertRejected("rule.api.match", "/api/**, api", "invalid path pattern 'api'")
                    .hasMessageContaining("must start with /");
        }

        @Test
        void methodsSeparatedByCommasAreRejectedWithAHintToUseBars() {
            assertRejected("rule.api.match", "GET, POST /api/**", "join several methods with |, e.g. GET|POST /api/**");
        }
        @Test
        void aLimitTooLargeForExactArithmeticIsRejectedAtLoadNotOnTheFirstRequest() {
            assertRejected(minimalWith("rule.api.limit", "100000000", "rule.api.window", "1d"),
                    "rule.api.limit", "100000000", "at most 2^50");
        }
    }

    @Test
    void keyCaseIsSensitiveUnlessSaidInsensitive() {
        assertThat(load().rule("api").keyCase()).isEqualTo(KeyCase.SENSITIVE);
        assertThat(load("rule.api.key-case", "Insensitive").rule("api").keyCase()).isEqualTo(KeyCase.INSENSITIVE);
        assertRejected("rule.api.key-case", "ignore", "one of sensitive, insensitive");
    }

    @Nested
    class Plans {

        private Map<String, String> plans(String source, String... more) {
            Map<String, String> raw = minimalWith("rule.api.plan", source, "rule.api.plans", "pro, internal",
                    "rule.api.plan.pro.limit", "100", "rule.api.plan.internal.limit", "unlimited");
            for (int i = 0; i < more.length; i += 2) raw.put(more[i], more[i + 1]);
            return raw;
        }

        @ParameterizedTest
        @ValueSource(strings = {"header:X-Plan", "query:plan", "attr:plan|header:X-Plan", "user|query:tier"})
        void aPlanSourceTheClientSetsFailsTheDeploymentNamingThePlanKey(String source) {
            assertRejected(plans(source), "rule.api.plan", source, "the client sets this source itself")
                    .hasMessageContaining("attr:plan")
                    .hasMessageContaining("rule.api.plan.source-trusted=true");
        }

        @Test
        void aTrustedHopsHeaderMayNameThePlanWhenSaidSo() {
            RuleConfig api = loader.parse(plans("header:X-Plan", "rule.api.plan.source-trusted", "true")).rule("api");
            assertThat(api.planKey()).isEqualTo(KeyExpression.parse("header:X-Plan"));
            assertThat(api.planSourceTrusted()).isTrue();
        }

        @Test
        void sourcesTheClientCannotSetNeedNoTrust() {
            for (String source : List.of("attr:plan", "user", "class:com.example.Plans", "attr:plan|attr:tier")) {
                assertThat(loader.parse(plans(source)).rule("api").planSourceTrusted()).as(source).isFalse();
            }
        }

        @Test
        void sourceTrustedWithoutAPlanSourceIsRejected() {
            assertRejected(minimalWith("rule.api.plan.source-trusted", "true"), "rule.api.plan.source-trusted", "true",
                    "only with rule.api.plan");
            assertRejected(plans("header:X-Plan", "rule.api.plan.source-trusted", "yes"), "rule.api.plan.source-trusted",
                    "yes", "one of true, false");
        }

        @Test
        void theHintForACompositePlanSourceShowsAttrFirstAndNoHeader() {
            assertRejected(plans("attr:plan+ip"), "rule.api.plan", "attr:plan+ip", "e.g. attr:plan or attr:plan|attr:tier")
                    .hasMessageNotContaining("header:");
        }
    }

    @Nested
    class UnknownKeys {

        @Test
        void anUnknownKeyIsRejectedSuggestingTheNearestKnownKey() {
            // an unknown key's value is never shown: it may be a mistyped secret
            assertRejected(minimalWith("rule.api.windw", "1m"), "rule.api.windw", "****", "not a Sluice key; did you mean rule.api.window?");
            assertRejected(minimalWith("trusted-proxy", "10.0.0.0/8"), "trusted-proxy", "****", "did you mean trusted-proxies?");
            assertRejected(minimalWith("redis.pool.maxTotal", "8"), "redis.pool.maxTotal", "****", "did you mean redis.pool.max-total?");
            assertRejected(minimalWith("Backend", "local"), "Backend", "****", "did you mean backend?");
        }

        @Test
        void anUnknownKeyFarFromEveryKnownKeyListsTheKeys() {
            assertRejected(minimalWith("completely-unrelated", "x"), "completely-unrelated", "****",
                    "not a Sluice key; the keys are rules, backend, redis.url")
                    .hasMessageContaining("rule.<name>.{algorithm, limit, window");
        }

        @Test
        void configIsAcceptedOnlyAsAnInitParam() {
            assertRejected("config", "classpath:/x.properties", "accepted only as a filter init-param");
        }

        @Test
        void theFirstProblemInKeyOrderIsReportedWhateverTheMapOrder() {
            Map<String, String> raw = minimalWith("zzz", "1", "aaa", "1", "mmm", "1");
            assertThat(catchThrowableOfType(() -> loader.parse(raw), ConfigException.class).key()).isEqualTo("aaa");
        }

        @Test
        void unknownKeysAreReportedBeforeBadValues() {
            Map<String, String> raw = minimalWith("status-code", "200", "zz-typo", "1");
            assertThat(catchThrowableOfType(() -> loader.parse(raw), ConfigException.class).key()).isEqualTo("zz-typo");
        }
    }

    @Nested
    class GlobalKeys {

        @Test
        void eachEnumeratedKeyAcceptsItsValuesCaseInsensitively() {
            SluiceConfig config = load("backend", "LOCAL", "clock", "local", "failure-policy", "closed",
                    "client-ip-header", "forwarded", "headers", "Draft", "mode", "dry-run");
            assertThat(config.backend()).isEqualTo(Backend.LOCAL);
            assertThat(config.clock()).isEqualTo(ClockSource.LOCAL);
            assertThat(config.failurePolicy()).isEqualTo(FailurePolicy.CLOSED);
            assertThat(config.clientIpHeader()).isEqualTo(Header.FORWARDED);
            assertThat(config.headers()).isEqualTo(HeaderStyle.DRAFT);
            assertThat(config.mode()).isEqualTo(Mode.DRY_RUN);
            assertThat(load("headers", "legacy").headers()).isEqualTo(HeaderStyle.LEGACY);
            assertThat(load("headers", "none").headers()).isEqualTo(HeaderStyle.NONE);
            assertThat(load("client-ip-header", "X-FORWARDED-FOR").clientIpHeader()).isEqualTo(Header.X_FORWARDED_FOR);
        }

        @ParameterizedTest
        @CsvSource(delimiter = '|', value = {
                "backend          | memory      | one of redis, local",
                "clock            | ntp         | one of redis, local",
                "failure-policy   | fail-open   | one of open, closed",
                "client-ip-header | X-Real-IP   | one of X-Forwarded-For, Forwarded",
                "headers          | all         | one of draft, legacy, both, none",
                "mode             | dryrun      | one of enforce, dry-run",
                "ipv6-prefix      | 129         | a whole number from 0 to 128",
                "ipv6-prefix      | -1          | a whole number from 0 to 128",
                "status-code      | 200         | a whole number from 400 to 599",
                "status-code      | 600         | a whole number from 400 to 599",
                "local.max-keys   | 0           | a whole number, at least 1",
        })
        void aBadValueIsRejectedNamingKeyValueAndAcceptedValues(String key, String value, String accepted) {
            assertRejected(key, value, accepted);
        }

        @Test
        void numbersAreRead() {
            SluiceConfig config = load("ipv6-prefix", "48", "status-code", "503", "local.max-keys", "5000");
            assertThat(config.ipv6Prefix()).isEqualTo(48);
            assertThat(config.statusCode()).isEqualTo(503);
            assertThat(config.localMaxKeys()).isEqualTo(5000);
            assertThat(load("ipv6-prefix", "0").ipv6Prefix()).isZero();
            assertThat(load("ipv6-prefix", "128").ipv6Prefix()).isEqualTo(128);
        }

        @Test
        void keyPrefixIsShortAndCannotBreakTheKeyLayout() {
            assertThat(load("key-prefix", "myapp:rl:").keyPrefix()).isEqualTo("myapp:rl:");
            assertThat(load("key-prefix", "p".repeat(64)).keyPrefix()).hasSize(64);
            String accepted = "at most 64 characters without '{', '}', whitespace";
            assertRejected("key-prefix", "rl{x}:", accepted);
            assertRejected("key-prefix", "my app:", accepted);
            assertRejected("key-prefix", "p".repeat(65), accepted);
        }

        @Test
        void trustedProxiesAndExemptIpsAreValidatedCidrLists() {
            SluiceConfig config = load("trusted-proxies", "10.0.0.0/8, 127.0.0.1/32,::1", "exempt-ips", "192.168.1.7");
            assertThat(config.trustedProxies()).isEqualTo(CidrSet.parse(List.of("10.0.0.0/8", "127.0.0.1/32", "::1")));
            assertThat(config.exemptIps()).isEqualTo(CidrSet.parse(List.of("192.168.1.7")));
        }

        @Test
        void aMalformedCidrIsRejectedNamingTheEntry() {
            assertRejected("trusted-proxies", "10.0.0.0/33", "invalid prefix length")
                    .hasMessageContaining("accepted: an IPv4 or IPv6 address with an optional /prefix");
            assertRejected(minimalWith("exempt-ips", "10.0.0.1, monitoring.internal"), "exempt-ips",
                    "monitoring.internal", "is not an IP address or CIDR");
        }

        @Test
        void excludeIsValidatedPathPatterns() {
            assertThat(load("exclude", "/health, /static/**").exclude().entries()).containsExactly("/health", "/static/**");
            assertRejected("exclude", "health", "invalid path pattern 'health'");
        }

        @Test
        void aGetInMatchOrExcludeAlsoMeansHead() {
            SluiceConfig config = load("exclude", "GET /status", "rule.api.match", "GET /verify");
            assertThat(config.exclude().matches("HEAD", "/status")).isTrue();
            assertThat(config.rules().get(0).match().matches("HEAD", "/verify")).isTrue();
        }
    }

    @Nested
    class Redis {

        @Test
        void theUrlGivesHostPortDatabaseCredentialsAndTls() {
            RedisSettings redis = redis("redis.url", "rediss://app:s%40cret@cache.internal:6380/2");
            assertThat(redis.host()).isEqualTo("cache.internal");
            assertThat(redis.port()).isEqualTo(6380);
            assertThat(redis.database()).isEqualTo(2);
            assertThat(redis.user()).isEqualTo("app");
            assertThat(redis.password()).isEqualTo("s@cret");
            assertThat(redis.ssl()).isTrue();
            assertThat(redis.cluster()).isFalse();
            assertThat(redis.sentinel()).isFalse();
        }

        @Test
        void separateCredentialKeysOverrideTheUrls() {
            RedisSettings redis = redis("redis.url", "rediss://app:old@h", "redis.user", "ops", "redis.password", "new",
                    "redis.ssl", "false");
            assertThat(redis.user()).isEqualTo("ops");
            assertThat(redis.password()).isEqualTo("new");
            assertThat(redis.ssl()).isFalse();
        }

        @Test
        void aMalformedUrlIsRejectedWithoutShowingThePassword() {
            assertRejected(minimalWith("redis.url", "redis://app:hunter2@cache:port"), "redis.url",
                    "redis://app:****@cache:port", "redis://[user[:password]@]host[:port][/db]")
                    .hasMessageContaining("redis.url='redis://app:****@cache:port'")
                    .hasMessageNotContaining("hunter2");
        }

        @Test
        void sslIsTrueOrFalse() {
            assertThat(redis("redis.ssl", "TRUE").ssl()).isTrue();
            assertRejected("redis.ssl", "yes", "one of true, false");
        }

        @Test
        void clusterNodesTurnOnClusterModeWithPort6379ByDefault() {
            RedisSettings redis = redis("redis.cluster.nodes", "10.0.0.1:7000, 10.0.0.2, [2001:db8::3]:7002",
                    "redis.user", "app", "redis.password", "pw", "redis.ssl", "true");
            assertThat(redis.cluster()).isTrue();
            assertThat(redis.clusterNodes()).containsExactly(new HostPort("10.0.0.1", 7000),
                    new HostPort("10.0.0.2", 6379), new HostPort("2001:db8::3", 7002));
            assertThat(redis.user()).isEqualTo("app");
            assertThat(redis.password()).isEqualTo("pw");
            assertThat(redis.ssl()).isTrue();
            assertThat(redis.host()).isNull();
            assertThat(redis.describe()).isEqualTo("cluster [10.0.0.1:7000, 10.0.0.2:6379, [2001:db8::3]:7002]");
        }

        @Test
        void sentinelNeedsMasterAndNodesWithPort26379ByDefault() {
            RedisSettings redis = redis("redis.sentinel.master", "mymaster", "redis.sentinel.nodes", "s1, s2:26380");
            assertThat(redis.sentinel()).isTrue();
            assertThat(redis.cluster()).isFalse();
            assertThat(redis.sentinelMaster()).isEqualTo("mymaster");
            assertThat(redis.sentinelNodes()).containsExactly(new HostPort("s1", 26379), new HostPort("s2", 26380));
            assertRejected(minimalWith("redis.sentinel.master", "mymaster"), "redis.sentinel.nodes", null,
                    "required with redis.sentinel.master");
            assertRejected(minimalWith("redis.sentinel.nodes", "s1"), "redis.sentinel.master", null,
                    "required with redis.sentinel.nodes");
        }

        @Test
        void clusterAndSentinelExcludeEachOther() {
            assertRejected(minimalWith("redis.cluster.nodes", "c1", "redis.sentinel.master", "m",
                    "redis.sentinel.nodes", "s1"), "redis.cluster.nodes", "c1", "exclude each other");
        }

        @Test
        void aUrlBesideClusterOrSentinelIsRejectedBecauseItWouldBeIgnored() {
            assertRejected(minimalWith("redis.cluster.nodes", "c1", "redis.url", "redis://:pw@h"), "redis.url",
                    "redis://:****@h", "only for a standalone Redis");
        }

        @Test
        void aMalformedNodeIsRejectedNamingTheEntry() {
            assertRejected(minimalWith("redis.cluster.nodes", "c1:7000, c2:70000"), "redis.cluster.nodes", "c2:70000",
                    "host[:port] entries separated by commas");
            assertRejected(minimalWith("redis.sentinel.master", "m", "redis.sentinel.nodes", "::1"),
                    "redis.sentinel.nodes", "::1", "must be written in brackets");
        }

        @Test
        void poolSettingsDefaultToEachOtherAndToTheTimeout() {
            RedisSettings redis = redis("redis.timeout", "200ms", "redis.pool.max-total", "16");
            assertThat(redis.timeout()).isEqualTo(Duration.ofMillis(200));
            assertThat(redis.poolMaxTotal()).isEqualTo(16);
            assertThat(redis.poolMaxIdle()).as("max-idle = max-total").isEqualTo(16);
            assertThat(redis.poolMinIdle()).isEqualTo(4);
            assertThat(redis.poolMaxWait()).as("max-wait = redis.timeout").isEqualTo(Duration.ofMillis(200));
        }

        @Test
        void aSmallPoolLowersTheDefaultMinIdleRatherThanFailing() {
            RedisSettings redis = redis("redis.pool.max-total", "2");
            assertThat(redis.poolMaxIdle()).isEqualTo(2);
            assertThat(redis.poolMinIdle()).isEqualTo(2);
        }

        @Test
        void poolSettingsAreConsistent() {
            assertRejected("redis.pool.max-total", "0", "a whole number, at least 1");
            assertRejected(minimalWith("redis.pool.max-total", "8", "redis.pool.max-idle", "9"), "redis.pool.max-idle",
                    "9", "a whole number from 0 to 8");
            assertRejected(minimalWith("redis.pool.max-idle", "2", "redis.pool.min-idle", "3"), "redis.pool.min-idle",
                    "3", "a whole number from 0 to 2");
            assertRejected("redis.pool.max-wait", "50", "add one, e.g. 50s");
            assertThat(redis("redis.pool.max-wait", "0ms").poolMaxWait()).isZero();
        }

        @Test
        void theTimeoutIsAPositiveDuration() {
            assertRejected("redis.timeout", "0ms", "at least 1ms");
            assertRejected("redis.timeout", "50", "add one, e.g. 50s");
        }
    }

    @Nested
    class Breaker {

        @Test
        void breakerKeysAreRead() {
            BreakerSettings breaker = load("redis.breaker.failure-threshold", "5", "redis.breaker.open-base", "250ms",
                    "redis.breaker.open-max", "PT10S").breaker();
            assertThat(breaker).isEqualTo(new BreakerSettings(5, Duration.ofMillis(250), Duration.ofSeconds(10)));
        }

        @Test
        void openMaxIsAtLeastOpenBaseAndFollowsALargerBase() {
            assertThat(load("redis.breaker.open-base", "2s").breaker().openMax()).isEqualTo(Duration.ofSeconds(2));
            assertRejected(minimalWith("redis.breaker.open-base", "2s", "redis.breaker.open-max", "1s"),
                    "redis.breaker.open-max", "1s", "at least 2s");
        }

        @Test
        void badBreakerValuesAreRejected() {
            assertRejected("redis.breaker.failure-threshold", "0", "a whole number, at least 1");
            assertRejected("redis.breaker.open-base", "0s", "at least 1ms");
        }
    }

    @Nested
    class Secrets {

        @Test
        void extraHoldsEveryValueAfterSubstitutionWithSecretsMasked() {
            environment.put("REDIS_PASSWORD", "hunter2");
            SluiceConfig config = load("redis.url", "redis://app:urlsecret@h:6379", "redis.password", "${REDIS_PASSWORD}",
                    "mode", "${MODE:dry-run}");
            assertThat(config.source())
                    .containsEntry("redis.url", "redis://app:****@h:6379")
                    .containsEntry("redis.password", "****")
                    .containsEntry("mode", "dry-run")
                    .containsEntry("rule.api.limit", "10");
            assertThat(config.redis().password()).isEqualTo("hunter2");
        }

        @Test
        void toStringOfTheWholeConfigurationContainsNoSecret() {
            SluiceConfig fromUrl = load("redis.url", "redis://app:urlsecret@h:6379");
            SluiceConfig fromKey = load("redis.password", "keysecret");
            assertThat(fromUrl.toString()).doesNotContain("urlsecret").contains("****");
            assertThat(fromKey.toString()).doesNotContain("keysecret").contains("****");
            assertThat(fromUrl.redis().describe()).doesNotContain("urlsecret");
        }

        @Test
        void noExceptionMessageContainsThePasswordKeysValue() {
            ConfigException e = catchThrowableOfType(() -> load("redis.password", "${NOT_SET}x-hunter2"),
                    ConfigException.class);
            assertThat(e.getMessage()).doesNotContain("hunter2").contains("redis.password='****'").contains("${NOT_SET}");
            assertThat(e.value()).isEqualTo("****");
        }

        @Test
        void aMistypedSecretKeyNeverShowsItsValue() {
            ConfigException typo = catchThrowableOfType(() -> load("redis.pasword", "hunter2"), ConfigException.class);
            assertThat(typo.getMessage()).doesNotContain("hunter2").contains("redis.pasword='****'")
                    .contains("did you mean redis.password?");
            ConfigException url = catchThrowableOfType(() -> load("redis.ur", "redis://:hunter2@host"), ConfigException.class);
            assertThat(url.getMessage()).doesNotContain("hunter2").contains("did you mean redis.url?");
        }
    }

    /** A reload that would move Redis is refused naming the key that changed, with its value as written. */
    @Nested
    class ARedisChangeWhileRunning {

        private ConfigException refused(SluiceConfig running, String... keysAndValues) {
            ConfigException e = catchThrowableOfType(() -> load(keysAndValues).checkReplaces(running), ConfigException.class);
            assertThat(e).as("refused").isNotNull();
            return e;
        }

        @Test
        void clusterNodesAreNamedAsTheyAreWritten() {
            SluiceConfig running = load("redis.cluster.nodes", "10.0.0.1:7000");
            ConfigException e = refused(running, "redis.cluster.nodes", "10.0.0.1:7000, 10.0.0.2:7000");
            assertThat(e.key()).isEqualTo("redis.cluster.nodes");
            assertThat(e).hasMessageContaining("redis.cluster.nodes='10.0.0.1:7000, 10.0.0.2:7000'")
                    .hasMessageContaining("running: 10.0.0.1:7000)").hasMessageNotContaining("redis.url")
                    .hasMessageNotContaining("****");
        }

        @Test
        void theSentinelMasterAndNodesEachByTheirKey() {
            SluiceConfig running = load("redis.sentinel.master", "main", "redis.sentinel.nodes", "10.0.0.5:26379");
            ConfigException master = refused(running, "redis.sentinel.master", "other", "redis.sentinel.nodes", "10.0.0.5:26379");
            assertThat(master.key()).isEqualTo("redis.sentinel.master");
            assertThat(master).hasMessageContaining("running: main)");
            ConfigException nodes = refused(running, "redis.sentinel.master", "main", "redis.sentinel.nodes", "10.0.0.6:26379");
            assertThat(nodes.key()).isEqualTo("redis.sentinel.nodes");
            assertThat(nodes).hasMessageContaining("running: 10.0.0.5:26379)");
        }

        @Test
        void fromAUrlToACluster() {
            ConfigException e = refused(load("redis.url", "redis://cache:6379"), "redis.cluster.nodes", "10.0.0.1:7000");
            assertThat(e.key()).isEqualTo("redis.cluster.nodes");
            assertThat(e).hasMessageContaining("running: null)");
        }

        @Test
        void theUrlWithoutItsPassword() {
            ConfigException e = refused(load("redis.url", "redis://:hunter2@cache-a:6379/1"), "redis.url", "redis://:hunter2@cache-b:6379/1");
            assertThat(e.key()).isEqualTo("redis.url");
            assertThat(e).hasMessageContaining("running: redis://cache-a:6379/1)").hasMessageNotContaining("hunter2");
        }

        @Test
        void tlsByTheKeyThatSetIt() {
            SluiceConfig plain = load("redis.url", "redis://cache:6379");
            assertThat(refused(plain, "redis.url", "rediss://cache:6379").key()).isEqualTo("redis.url");
            assertThat(refused(plain, "redis.url", "redis://cache:6379", "redis.ssl", "true").key()).isEqualTo("redis.ssl");
        }

        @Test
        void whatDidNotChangeIsNotRefused() {
            SluiceConfig running = load("redis.cluster.nodes", "10.0.0.1:7000,10.0.0.2:7000");
            load("redis.cluster.nodes", "10.0.0.1:7000, 10.0.0.2:7000", "rule.api.limit", "20").checkReplaces(running);
        }
    }
}
