package dev.sluice.it;

import dev.sluice.testing.TestRedis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The example WAR under test ({@code examples/target/sluice-examples.war}) and the filter
 * init-params that point it at the test Redis, whatever the container ({@link WebApp} for Jetty,
 * {@link TomcatWebApp} for Tomcat). Free of any container class, so each container's tests can
 * load it without the other's.
 */
final class ExampleWar {

    private ExampleWar() {
    }

    /** The path of the WAR under test. */
    static Path path() {
        String path = System.getProperty("sluice.war", "../examples/target/sluice-examples.war");
        Path war = Path.of(path);
        if (!Files.isRegularFile(war)) {
            throw new IllegalStateException("example WAR not found at " + war.toAbsolutePath()
                    + ": run the integration tests through Maven (mvn verify) so the WAR is built first");
        }
        return war;
    }

    /** Init-params pointing the WAR's filter at the test Redis under a fresh key prefix, plus {@code overrides}. */
    static Map<String, String> params(String testName, String... overrides) {
        Map<String, String> params = new LinkedHashMap<>();
        params.put("redis.url", TestRedis.url());
        params.put("key-prefix", TestRedis.uniquePrefix(testName));
        params.put("redis.timeout", "2s"); // a shared, busy CI machine: the fleet test must not fall back
        for (int i = 0; i + 1 < overrides.length; i += 2) {
            params.put(overrides[i], overrides[i + 1]);
        }
        return params;
    }

    /** Removes a directory a container unpacked the WAR into, and everything in it. */
    static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
