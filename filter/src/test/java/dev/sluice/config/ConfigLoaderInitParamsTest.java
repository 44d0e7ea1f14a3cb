package dev.sluice.config;

import dev.sluice.limiter.FailurePolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The {@code config} init-param: a properties file, overridden by the other init-params. */
class ConfigLoaderInitParamsTest {

    private static final String FILE = """
            # the example application's limits
            rules = api, login
            rule.api.limit = 100
            rule.api.window = 1m
            rule.login.limit = 5
            rule.login.window = 1m
            rule.login.match = POST /login
            rule.login.failure-policy = closed
            status-code = 429
            """;

    @TempDir
    Path dir;

    private final Map<String, String> environment = new HashMap<>();
    private final ConfigLoader loader = new ConfigLoader(new Placeholders(name -> null, environment::get));

    private Path write(String name, String content) throws IOException {
        Path file = dir.resolve(name);
        Files.createDirectories(file.getParent());
        Files.writeString(file, content, StandardCharsets.UTF_8);
        return file;
    }

    /** A class loader that sees only {@link #dir}: proves the given loader is the one asked. */
    private URLClassLoader classLoaderOfDir() throws IOException {
        return new URLClassLoader(new URL[] {dir.toUri().toURL()}, null);
    }

    @Test
    void aClasspathResourceIsReadThroughTheGivenClassLoaderWithOrWithoutLeadingSlash() throws IOException {
        write("ratelimit.properties", FILE);
        try (URLClassLoader cl = classLoaderOfDir()) {
            for (String location : new String[] {"classpath:/ratelimit.properties", "classpath:ratelimit.properties"}) {
                SluiceConfig config = loader.parseInitParams(Map.of("config", location), cl);
                assertThat(config.rules()).extracting(RuleConfig::name).containsExactly("api", "login");
                assertThat(config.rules().get(1).match().entries()).containsExactly("POST /login");
                assertThat(config.rules().get(1).rule().failurePolicy()).isEqualTo(FailurePolicy.CLOSED);
            }
        }
    }

    @Test
    void aResourceInAPackageDirectoryIsFound() throws IOException {
        write("conf/sluice/limits.properties", FILE);
        try (URLClassLoader cl = classLoaderOfDir()) {
            assertThat(loader.parseInitParams(Map.of("config", "classpath:/conf/sluice/limits.properties"), cl).rules())
                    .hasSize(2);
        }
    }

    @Test
    void aFileUrlIsRead() throws IOException {
        Path file = write("x.properties", FILE);
        SluiceConfig config = loader.parseInitParams(Map.of("config", file.toUri().toString()), null);
        assertThat(config.rules()).hasSize(2);
        assertThat(file.toUri().toString()).startsWith("file:/");
        SluiceConfig shortForm = loader.parseInitParams(Map.of("config", "file:" + file.toAbsolutePath()), null);
        assertThat(shortForm.rules()).hasSize(2);
    }

    @Test
    void aPlainPathIsRead() throws IOException {
        Path file = write("plain.properties", FILE);
        assertThat(loader.parseInitParams(Map.of("config", file.toString()), null).rules()).hasSize(2);
    }

    @Test
    void initParamsOverrideTheFilesValues() throws IOException {
        Path file = write("x.properties", FILE);
        SluiceConfig config = loader.parseInitParams(Map.of(
                "config", file.toString(),
                "rule.api.limit", "7",
                "status-code", "503",
                "mode", "dry-run"), null);
        assertThat(config.rules().get(0).rule().limit()).as("overridden").isEqualTo(7);
        assertThat(config.rules().get(0).rule().window().toMinutes()).as("from the file").isEqualTo(1);
        assertThat(config.statusCode()).isEqualTo(503);
        assertThat(config.mode()).isEqualTo(SluiceConfig.Mode.DRY_RUN);
        assertThat(config.source()).doesNotContainKey("config");
    }

    @Test
    void aBlankInitParamUnsetsAFileValue() throws IOException {
        Path file = write("x.properties", FILE + "redis.url = redis://cache:6379\n");
        SluiceConfig config = loader.parseInitParams(Map.of("config", file.toString(), "redis.url", "",
                "redis.cluster.nodes", "c1:7000"), null);
        assertThat(config.redis().cluster()).isTrue();
    }

    @Test
    void withoutConfigTheInitParamsAreTheWholeConfiguration() {
        SluiceConfig config = loader.parseInitParams(Map.of("rules", "api", "rule.api.limit", "1",
                "rule.api.window", "1s"), null);
        assertThat(config.rules()).hasSize(1);
    }

    @Test
    void theLocationAndTheFilesValuesMayUsePlaceholders() throws IOException {
        Path file = write("x.properties", FILE.replace("rule.api.limit = 100", "rule.api.limit = ${API_LIMIT:100}"));
        environment.put("SLUICE_CONFIG", file.toString());
        environment.put("API_LIMIT", "33");
        SluiceConfig config = loader.parseInitParams(Map.of("config", "${SLUICE_CONFIG:classpath:/ratelimit.properties}"),
                null);
        assertThat(config.rules().get(0).rule().limit()).isEqualTo(33);
    }

    @Test
    void aFileInUtf8OrInIso88591IsRead() throws IOException {
        Path utf8 = write("utf8.properties", FILE + "redis.password = pässwörd\n");
        assertThat(loader.parseInitParams(Map.of("config", utf8.toString()), null).redis().password())
                .isEqualTo("pässwörd");
        Path latin1 = dir.resolve("latin1.properties");
        Files.writeString(latin1, FILE + "redis.password = pässwörd\n", StandardCharsets.ISO_8859_1);
        assertThat(loader.parseInitParams(Map.of("config", latin1.toString()), null).redis().password())
                .isEqualTo("pässwörd");
    }

    @Test
    void aMissingClasspathResourceNamesConfig() throws IOException {
        try (URLClassLoader cl = classLoaderOfDir()) {
            assertThatThrownBy(() -> loader.parseInitParams(Map.of("config", "classpath:/missing.properties"), cl))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("config='classpath:/missing.properties'")
                    .hasMessageContaining("there is no resource missing.properties on the web application's class path")
                    .hasMessageContaining("classpath:/path/in/the/application.properties, file:/absolute/path.properties,"
                            + " or a file path");
        }
    }

    @Test
    void aMissingFileNamesConfig() {
        Path missing = dir.resolve("nope.properties");
        for (String location : new String[] {missing.toString(), missing.toUri().toString()}) {
            assertThatThrownBy(() -> loader.parseInitParams(Map.of("config", location), null))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("config='" + location + "'")
                    .hasMessageContaining("there is no file " + missing.toAbsolutePath());
        }
    }

    @Test
    void anUnreadableFileNamesConfig() {
        assertThatThrownBy(() -> loader.parseInitParams(Map.of("config", dir.toString()), null))
                .as("a directory cannot be read as a file")
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("config='" + dir + "'")
                .hasMessageContaining("cannot be read");
    }

    @Test
    void aFileCannotNameAnotherFile() throws IOException {
        Path file = write("x.properties", FILE + "config = other.properties\n");
        assertThatThrownBy(() -> loader.parseInitParams(Map.of("config", file.toString()), null))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("config='other.properties'")
                .hasMessageContaining("only an init-param");
    }

    @Test
    void aBadValueInTheFileIsReportedLikeAnyOther() throws IOException {
        Path file = write("x.properties", FILE.replace("rule.api.window = 1m", "rule.api.window = 60"));
        assertThatThrownBy(() -> loader.parseInitParams(Map.of("config", file.toString()), null))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rule.api.window='60'")
                .hasMessageContaining("add one, e.g. 60s");
    }

    @Test
    void thePublicEntryPointUsesTheRealEnvironment() throws IOException {
        Path file = write("x.properties", FILE);
        SluiceConfig config = ConfigLoader.fromInitParams(Map.of(" config ", " " + file + " "), null);
        assertThat(config.rules()).hasSize(2);
    }
}
