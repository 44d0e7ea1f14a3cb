package dev.sluice.internal.http;

import dev.sluice.key.ClientKey;
import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.limiter.Acquisition;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestSeed;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

class RateLimitHeadersTest {

    static final Rule API = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
    static final Rule LOGIN = Rule.of("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));

    @Test
    void draftFieldsListEveryRuleThatAppliedInOrder() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 42, 0, 16_200, 1_200, 0, Source.REDIS),
                new RuleDecision(LOGIN, true, 4, 0, 59_001, 59_001, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.DRAFT, d);
        assertThat(h).containsEntry("RateLimit-Policy", "\"api\";q=100;w=60, \"login\";q=5;w=60")
                .containsEntry("RateLimit", "\"api\";r=42;t=2, \"login\";r=4;t=60")
                .doesNotContainKey("X-RateLimit-Limit");
        assertThat(RateLimitItems.parse(h.get("RateLimit-Policy"), "q", "w"))
                .containsExactly(entry("api", Map.of("q", 100L, "w", 60L)), entry("login", Map.of("q", 5L, "w", 60L)));
        assertThat(RateLimitItems.parse(h.get("RateLimit"), "r", "t"))
                .containsExactly(entry("api", Map.of("r", 42L, "t", 2L)), entry("login", Map.of("r", 4L, "t", 60L)));
    }

    @Test
    void allowedTIsTheTimeUntilMoreQuotaAndLegacyResetTheTimeToAFullQuota() {
        // a 10-a-minute token bucket after two requests: the next token in 6 s, full in 12 s
        Rule bucket = Rule.of("api", Algorithm.TOKEN_BUCKET, 10, Duration.ofMinutes(1));
        Map<String, String> h = write(HeaderStyle.BOTH,
                Decision.of(List.of(new RuleDecision(bucket, true, 8, 0, 12_000, 6_000, 0, Source.REDIS))));
        assertThat(RateLimitItems.parse(h.get("RateLimit"), "r", "t")).containsExactly(entry("api", Map.of("r", 8L, "t", 6L)));
        assertThat(h).containsEntry("X-RateLimit-Remaining", "8").containsEntry("X-RateLimit-Reset", "12");
    }

    @Test
    void tIsRoundedUpSoThatWaitingItAlwaysFindsMoreQuota() {
        for (long[] msAndSeconds : new long[][]{{1, 1}, {999, 1}, {1_000, 1}, {1_001, 2}, {59_999, 60}}) {
            Decision d = Decision.of(List.of(new RuleDecision(API, true, 3, 0, 90_000, msAndSeconds[0], 0, Source.REDIS)));
            assertThat(RateLimitItems.parse(write(HeaderStyle.DRAFT, d).get("RateLimit"), "r", "t").get("api"))
                    .as("%d ms", msAndSeconds[0]).containsEntry("t", msAndSeconds[1]);
        }
    }

    @Test
    void aFullQuotaHasTZero() {
        Decision d = Decision.of(List.of(new RuleDecision(API, true, 100, 0, 0, 0, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.BOTH, d);
        assertThat(RateLimitItems.parse(h.get("RateLimit"), "r", "t")).containsExactly(entry("api", Map.of("r", 100L, "t", 0L)));
        assertThat(h).containsEntry("X-RateLimit-Reset", "0");
    }

    @Test
    void legacyFieldsShowTheRuleClosestToItsLimit() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 42, 0, 16_200, 600, 0, Source.REDIS),
                new RuleDecision(LOGIN, true, 1, 0, 30_000, 30_000, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.LEGACY, d);
        assertThat(h).containsEntry("X-RateLimit-Limit", "5").containsEntry("X-RateLimit-Remaining", "1")
                .containsEntry("X-RateLimit-Reset", "30").doesNotContainKey("RateLimit");
    }

    @Test
    void denyingRulesTIsItsRetryAfterAndAtLeastOneSecond() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 99, 0, 600, 600, 0, Source.REDIS),
                new RuleDecision(LOGIN, false, 0, 120, 40_000, 120, 0, Source.REDIS)));
        Map<String, String> h = write(HeaderStyle.BOTH, d);
        assertThat(RateLimitItems.parse(h.get("RateLimit"), "r", "t"))
                .containsExactly(entry("api", Map.of("r", 99L, "t", 1L)), entry("login", Map.of("r", 0L, "t", 1L)));
        assertThat(h).containsEntry("X-RateLimit-Limit", "5").containsEntry("X-RateLimit-Reset", "1");
        assertThat(RateLimitHeaders.retryAfterSeconds(d.retryAfterMs())).isEqualTo(1);
    }

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void everyAlgorithmsFieldsParseAndShowItsFigures(Algorithm algorithm) {
        // random requests of one client through the local engine: every field a response would carry parses,
        // r is the remaining, t the next (allowed) or the retry-after (denied), and Retry-After is never earlier
        long seed = TestSeed.get() + algorithm.ordinal();
        Random rnd = new Random(seed);
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
        long limit = 1 + rnd.nextInt(20);
        Duration maxDelay = algorithm == Algorithm.LEAKY_BUCKET ? Duration.ofMillis(rnd.nextInt(20_000)) : Duration.ZERO;
        Rule rule = new Rule("r-" + algorithm.id(), algorithm, limit, Duration.ofMillis(1 + rnd.nextInt(90_000)), limit, 1,
                FailurePolicy.OPEN, limit, maxDelay);
        Rule other = Rule.of("other", Algorithm.TOKEN_BUCKET, 50, Duration.ofSeconds(10));
        try (LocalEngine engine = new LocalEngine(clock, 100)) {
            for (int i = 0; i < 300; i++) {
                clock.advance(rnd.nextInt(4) == 0 ? 0 : rnd.nextInt((int) rule.windowMillis() / 3 + 1));
                long cost = 1 + rnd.nextInt((int) rule.limit());
                List<Acquisition> request = rnd.nextBoolean() ? List.of(new Acquisition(rule, ClientKey.parse("c"), cost))
                        : List.of(new Acquisition(other, ClientKey.parse("c")), new Acquisition(rule, ClientKey.parse("c"), cost));
                Decision d = engine.decide(request);
                Map<String, String> h = write(HeaderStyle.BOTH, d);
                String context = TestSeed.replay() + ", step " + i + ": " + d + " -> " + h;
                Map<String, Map<String, Long>> current = RateLimitItems.parse(h.get("RateLimit"), "r", "t");
                Map<String, Map<String, Long>> policy = RateLimitItems.parse(h.get("RateLimit-Policy"), "q", "w");
                assertThat(current.keySet()).as(context).containsExactlyElementsOf(policy.keySet());
                for (RuleDecision r : d.rules()) {
                    long t = r.allowed() ? (r.nextMs() + 999) / 1000 : Math.max(1, (r.retryAfterMs() + 999) / 1000);
                    assertThat(current.get(r.rule().name())).as(context).isEqualTo(Map.of("r", r.remaining(), "t", t));
                    assertThat(policy.get(r.rule().name())).as(context)
                            .isEqualTo(Map.of("q", r.rule().limit(), "w", (r.rule().windowMillis() + 999) / 1000));
                    if (!r.allowed()) {
                        assertThat(RateLimitHeaders.retryAfterSeconds(d.retryAfterMs())).as(context).isGreaterThanOrEqualTo(t);
                    }
                }
            }
        }
    }

    @Test
    void oneRulesFieldsAreTheSameWrittenAloneAsInAList() {
        Rule calendar = Rule.builder("month").algorithm(Algorithm.FIXED_WINDOW).limit(1000)
                .calendar(java.time.ZoneId.of("Europe/Berlin")).window(java.time.Period.ofMonths(1)).build();
        for (HeaderStyle style : HeaderStyle.values()) {
            for (RuleDecision r : List.of(
                    new RuleDecision(API, true, 42, 0, 16_200, 1_200, 0, Source.REDIS),
                    new RuleDecision(API, true, 100_000_000_000L, 0, 999_000_000, 0, 0, Source.BACKSTOP),
                    new RuleDecision(LOGIN, false, 0, 17_000, 40_000, 0, Source.REDIS),
                    new RuleDecision(calendar, true, 7, 0, 86_400_000, 86_400_000, 0, null, Source.REDIS, 2_674_800_000L))) {
                Decision d = Decision.of(List.of(r));
                RateLimitHeaders.RuleFields fields = new RateLimitHeaders.RuleFields(r.rule());
                Map<String, String> alone = new LinkedHashMap<>();
                new RateLimitHeaders(style).write(recording(alone), d, fields);
                Map<String, String> inAList = new LinkedHashMap<>();
                new RateLimitHeaders(style).write(recording(inAList), d, List.of(fields));
                assertThat(alone).as(style + " " + r).isEqualTo(inAList);
            }
        }
    }

    /** While Redis is away the backstop decides at fallback-limit: both families show the limit it decided by. */
    @Test
    void aBackstopsDecisionShowsTheFallbackLimitInBothFamilies() {
        Rule rule = Rule.builder("api").limit(100).window(java.time.Duration.ofMinutes(1)).fallbackLimit(5).build();
        Decision d = Decision.of(List.of(new RuleDecision(rule, true, 4, 0, 12_000, 12_000, 0, Source.BACKSTOP)));
        Map<String, String> h = write(HeaderStyle.BOTH, d);
        assertThat(h).containsEntry("RateLimit-Policy", "\"api\";q=5;w=60").containsEntry("X-RateLimit-Limit", "5")
                .containsEntry("X-RateLimit-Remaining", "4");
        Map<String, String> byRedis = write(HeaderStyle.BOTH, Decision.of(List.of(
                new RuleDecision(rule, true, 99, 0, 600, 600, 0, Source.REDIS))));
        assertThat(byRedis).containsEntry("RateLimit-Policy", "\"api\";q=100;w=60").containsEntry("X-RateLimit-Limit", "100");
    }

    @Test
    void decimalIsLongToStringForEveryNumber() {
        for (long n : new long[]{0, 1, 9, 10, 255, 256, 1000, -1, Long.MAX_VALUE, Long.MIN_VALUE}) {
            assertThat(RateLimitHeaders.decimal(n)).isEqualTo(Long.toString(n));
        }
    }

    @Test
    void noneWritesNothing() {
        Decision d = Decision.of(List.of(new RuleDecision(API, false, 0, 5_000, 5_000, 0, Source.REDIS)));
        assertThat(write(HeaderStyle.NONE, d)).isEmpty();
    }

    @Test
    void problemBodyNamesTheViolatedRules() {
        Decision d = Decision.of(List.of(
                new RuleDecision(API, true, 99, 0, 600, 0, Source.REDIS),
                new RuleDecision(LOGIN, false, 0, 17_000, 40_000, 0, Source.REDIS)));
        String body = QuotaExceededProblem.body(d, 429, 17);
        assertThat(body).startsWith("{").endsWith("}")
                .contains("\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\"")
                .contains("\"status\":429").contains("\"violated-policies\":[\"login\"]")
                .contains("\"retry-after\":17").doesNotContain("\"api\"");
    }

    /** Writes the headers onto a response that records them. */
    static Map<String, String> write(HeaderStyle style, Decision d) {
        Map<String, String> headers = new LinkedHashMap<>();
        List<RateLimitHeaders.RuleFields> fields = d.rules().stream().map(r -> new RateLimitHeaders.RuleFields(r.rule())).toList();
        new RateLimitHeaders(style).write(recording(headers), d, fields);
        return headers;
    }

    /** A response that records the headers set on it into {@code headers}. */
    static HttpServletResponse recording(Map<String, String> headers) {
        return (HttpServletResponse) Proxy.newProxyInstance(
                RateLimitHeadersTest.class.getClassLoader(), new Class<?>[]{HttpServletResponse.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("setHeader")) {
                        headers.put((String) args[0], (String) args[1]);
                        return null;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }
}
