package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
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

    /**
     * Each: a configuration that was accepted, then misbehaved (the limit never enforced: a match of no pattern,
     * a pattern with a query; or init dying on a bare "long overflow" naming no key), and the key its error names.
     * Nothing listens on 127.0.0.1:1: no Redis is touched.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "a match of placeholders all empty | rule.api.match | rule.api.match=${SLUICE_REVIEW_UNSET_A:}, ${SLUICE_REVIEW_UNSET_B:}",
            "a match of only a comma | rule.api.match | rule.api.match=,",
            "a pattern with a query string | rule.api.match | rule.api.match=GET /api/x?q=*",
            "a class: key source not found | rule.api.key | rule.api.key=class:com.example.NoSuchKeySource",
            "a huge denied-cache.revalidate | denied-cache.revalidate | denied-cache.revalidate=200000d",
            "a huge redis.breaker.open-base | redis.breaker.open-base | redis.breaker.open-base=200000000000d"})
    void aConfigurationThatWouldMisbehaveFailsInitNamingTheKey(String what, String key, String setting) throws Exception {
        int eq = setting.indexOf('=');
        Throwable t = initOrCount("/api/x", "rules", "api", "redis.url", "redis://127.0.0.1:1", "rule.api.limit", "2",
                "rule.api.window", "1h", setting.substring(0, eq), setting.substring(eq + 1));
        assertThat(t).hasMessageContaining(key);
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
