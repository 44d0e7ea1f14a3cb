package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;

/**
 * Found by a configuration review of 0.3: configurations accepted at init that then misbehaved (a rule that matched
 * nothing, a dry-run that refused, a key silently given twice...). Each failed before its fix.
 */
class ConfigFailFastTest {

    @TempDir
    Path dir;

    /** Starts a filter; if init accepts the configuration, sends 10 GETs to {@code path} and fails with what it admitted. */
    private static Throwable initOrCount(String path, String... params) throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        Throwable t = catchThrowable(() -> filter.init(FakeServlet.filterConfig("review", FakeServlet.params(params))));
        if (t == null) {
            CountingChain chain = new CountingChain();
            try {
                for (int i = 0; i < 10; i++) {
                    filter.doFilter(FakeServlet.get(path, "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
                }
            } finally {
                filter.destroy();
            }
            fail("init accepted the configuration, then admitted " + chain.passed + " of 10 requests to " + path
                    + " under a limit of 2");
        }
        return t;
    }

    // F1 (high): a match list with no entries (e.g. two placeholders that are both unset) is accepted and
    // the rule then matches nothing: the limit is silently not enforced.
    @Test
    void aMatchListWithoutEntriesFailsInitNamingTheKey() throws Exception {
        Throwable t = initOrCount("/api/x", "rules", "api", "backend", "local", "rule.api.limit", "2",
                "rule.api.window", "1h", "rule.api.match", "${SLUICE_REVIEW_UNSET_A:}, ${SLUICE_REVIEW_UNSET_B:}");
        assertThat(t).hasMessageContaining("rule.api.match");
    }

    @Test
    void aMatchOfOnlyACommaFailsInitNamingTheKey() throws Exception {
        Throwable t = initOrCount("/api/x", "rules", "api", "backend", "local", "rule.api.limit", "2",
                "rule.api.window", "1h", "rule.api.match", ",");
        assertThat(t).hasMessageContaining("rule.api.match");
    }

    // F2 (medium): a pattern with a query string can never match (the path never holds one): accepted, never enforced.
    @Test
    void aMatchPatternWithAQueryStringFailsInit() throws Exception {
        Throwable t = initOrCount("/search", "rules", "search", "backend", "local", "rule.search.limit", "2",
                "rule.search.window", "1h", "rule.search.match", "GET /search?q=*");
        assertThat(t).hasMessageContaining("rule.search.match");
    }

    // F5 (low): a class: key source that does not exist fails init, but the message does not name the key.
    @Test
    void aMissingKeySourceClassIsReportedNamingTheKey() throws Exception {
        Throwable t = initOrCount("/x", "rules", "api", "backend", "local", "rule.api.limit", "2",
                "rule.api.window", "1h", "rule.api.key", "class:com.example.NoSuchKeySource");
        assertThat(t).hasMessageContaining("rule.api.key");
    }

    // F6 (low): durations accepted by the loader overflow when the filter starts: init fails with
    // "long overflow", naming no key (nothing listens on 127.0.0.1:1; no Redis is touched).
    @Test
    void aHugeDeniedCacheRevalidateIsRefusedNamingTheKey() throws Exception {
        Throwable t = initOrCount("/x", "rules", "api", "redis.url", "redis://127.0.0.1:1", "rule.api.limit", "2",
                "rule.api.window", "1h", "denied-cache.revalidate", "200000d");
        assertThat(t).hasMessageContaining("denied-cache.revalidate");
    }

    @Test
    void aHugeBreakerOpenBaseIsRefusedNamingTheKey() throws Exception {
        Throwable t = initOrCount("/x", "rules", "api", "redis.url", "redis://127.0.0.1:1", "rule.api.limit", "2",
                "rule.api.window", "1h", "redis.breaker.open-base", "200000000000d");
        assertThat(t).hasMessageContaining("redis.breaker.open-base");
    }

    @Test
    void aHugeReloadIntervalIsRefusedNamingTheKey() throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        Files.writeString(file, "rules=api\nbackend=local\nrule.api.limit=2\nrule.api.window=1h\nreload=200000000000d\n");
        Throwable t = initOrCount("/x", "config", "file:" + file);
        assertThat(t).hasMessageContaining("reload");
    }

    // F7 (low): a key given twice in the properties file: the last silently wins.
    @Test
    void aKeyGivenTwiceInThePropertiesFileFailsInit() throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        Files.writeString(file, "rules=api\nbackend=local\nrule.api.limit=2\nrule.api.window=1h\n"
                + "# ... much later, someone else's edit\nrule.api.limit=2000\n");
        Throwable t = initOrCount("/x", "config", "file:" + file);
        assertThat(t).hasMessageContaining("rule.api.limit");
    }

    // F3 (medium): the programmatic builder's global dry-run mode applied to no rule: its rules enforced
    // during what was meant as a shadow roll-out. Now a rule that enforces under it fails build(), naming mode.
    @Test
    void theBuildersGlobalDryRunModeWithAnEnforcingRuleFailsBuildNamingMode() {
        SluiceConfig.Builder builder = SluiceConfig.builder()
                .backend(SluiceConfig.Backend.LOCAL)
                .mode(SluiceConfig.Mode.DRY_RUN)
                .rule(Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(1).window(Duration.ofHours(1)).build());
        assertThat(catchThrowable(builder::build)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("mode").hasMessageContaining("dryRun(true)");

        SluiceConfig config = SluiceConfig.builder()
                .backend(SluiceConfig.Backend.LOCAL)
                .mode(SluiceConfig.Mode.DRY_RUN)
                .rule(Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(1).window(Duration.ofHours(1))
                        .dryRun(true).build())
                .build();
        try (Sluice sluice = Sluice.builder(config).build()) {
            ClientKey client = ClientKey.of("c1");
            assertThat(sluice.tryAcquire("api", client).allowed()).isTrue();
            assertThat(sluice.tryAcquire("api", client).allowed()).as("a dry-run never refuses").isTrue();
        }
    }

    // F9 (low): reload without a config file to watch is accepted and silently does nothing.
    @Test
    void aReloadIntervalWithoutAConfigFileFailsInit() throws Exception {
        Throwable t = initOrCount("/x", "rules", "api", "backend", "local", "rule.api.limit", "2",
                "rule.api.window", "1h", "reload", "10s");
        assertThat(t).hasMessageContaining("reload");
    }

    // F6b: the failed init of aHugeReloadInterval... leaves the started Sluice registered in JMX (no destroy() follows
    // a failed init): the application's next deployment under the same name finds its name taken.
    @Test
    void aFailedInitLeavesNothingRegistered() throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        Files.writeString(file, "rules=api\nbackend=local\nrule.api.limit=2\nrule.api.window=1h\nreload=200000000000d\n");
        RateLimitFilter failed = new RateLimitFilter();
        catchThrowable(() -> failed.init(FakeServlet.filterConfig("leak", FakeServlet.params("config", "file:" + file))));
        javax.management.MBeanServer server = java.lang.management.ManagementFactory.getPlatformMBeanServer();
        assertThat(server.queryNames(new javax.management.ObjectName("dev.sluice:name=leak,*"), null))
                .as("MBeans left by a failed init").isEmpty();
    }
}
