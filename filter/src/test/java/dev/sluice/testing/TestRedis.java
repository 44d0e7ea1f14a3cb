package dev.sluice.testing;

import org.slf4j.LoggerFactory;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.util.SafeEncoder;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Redis that tests share, chosen once per JVM, in this order:
 * <ol>
 *   <li>{@code REDIS_URL} (environment) or {@code -Dredis.url}, if set;</li>
 *   <li>a Testcontainers {@code redis:7} container, if a Docker engine is configured and answers;</li>
 *   <li>a {@code redis-server} from PATH on a free port.</li>
 * </ol>
 * If none is available the first test that asks fails with a message saying how to provide one:
 * tests never skip silently for want of Redis. The choice is logged once, at INFO.
 *
 * <p>Testcontainers is asked only where a Docker engine is configured (a socket, {@code DOCKER_HOST},
 * a Docker or Testcontainers configuration file): without one it would log an ERROR before giving
 * up, on every machine without Docker. Where one is configured and fails, its ERROR stays.
 *
 * <p>The chosen server may be a shared one, so tests never flush it: each test writes under its
 * own {@link #uniquePrefix(String) key prefix}.
 */
public final class TestRedis {

    private static final AtomicLong PREFIXES = new AtomicLong();
    private static volatile String url;
    private static volatile String how;

    private TestRedis() {
    }

    /** The URL of the shared test Redis, starting it on first use. */
    public static synchronized String url() {
        if (url != null) return url;
        String fromEnv = System.getenv("REDIS_URL");
        if (fromEnv == null || fromEnv.isBlank()) fromEnv = System.getProperty("redis.url");
        if (fromEnv != null && !fromEnv.isBlank()) {
            return chosen(fromEnv.trim(), "from REDIS_URL");
        }
        List<String> docker = Containers.dockerConfiguration();
        String fromContainer = docker.isEmpty() ? null : Containers.tryStart();
        if (fromContainer != null) {
            return chosen(fromContainer, "a Testcontainers redis:7 container (Docker at " + docker + ")");
        }
        if (RedisProcess.binary() != null) {
            RedisProcess p = RedisProcess.start();
            return chosen(p.url(), RedisProcess.binary() + " on a free port, pid " + p.pid()
                    + (docker.isEmpty() ? "; no Docker engine configured" : "; Docker did not answer"));
        }
        throw new IllegalStateException("No Redis for the tests: set REDIS_URL (e.g. redis://127.0.0.1:6379), "
                + "start a Docker engine for Testcontainers, or put redis-server on PATH");
    }

    private static String chosen(String chosenUrl, String chosenHow) {
        how = chosenHow;
        url = chosenUrl;
        LoggerFactory.getLogger(TestRedis.class).info("The tests use Redis at {}: {}", chosenUrl, chosenHow);
        return chosenUrl;
    }

    /** How the test Redis was found, for test logs. */
    public static String how() {
        url();
        return how;
    }

    public static String host() {
        return java.net.URI.create(url()).getHost();
    }

    public static int port() {
        int p = java.net.URI.create(url()).getPort();
        return p < 0 ? 6379 : p;
    }

    /** A key prefix no other test in this JVM (or earlier run) uses, e.g. {@code t:fleet:17:1a2b:}. */
    public static String uniquePrefix(String name) {
        return "t:" + name + ":" + Long.toString(System.nanoTime() & 0xffffff, 36) + PREFIXES.incrementAndGet() + ":";
    }

    /** Redis's {@code TIME} in ms since the epoch, as Sluice's script reads it ({@code clock=redis}). */
    public static long timeMillis(UnifiedJedis jedis) {
        List<?> t = (List<?>) jedis.sendCommand(Protocol.Command.TIME);
        return Long.parseLong(SafeEncoder.encode((byte[]) t.get(0))) * 1000
                + Long.parseLong(SafeEncoder.encode((byte[]) t.get(1))) / 1000;
    }

    /** Testcontainers is loaded reflectively only when wanted, so its absence or Docker's never breaks the fallback. */
    private static final class Containers {

        /**
         * Where a Docker engine is configured, as Testcontainers looks for one (its environment
         * variables and files, the usual sockets); empty if nowhere, or if turned off with
         * {@code -Dsluice.testcontainers=false}.
         */
        static List<String> dockerConfiguration() {
            List<String> found = new ArrayList<>();
            if ("false".equalsIgnoreCase(System.getProperty("sluice.testcontainers"))) return found;
            for (String variable : List.of("DOCKER_HOST", "DOCKER_CONTEXT", "TESTCONTAINERS_HOST_OVERRIDE")) {
                if (System.getenv(variable) != null) found.add(variable);
            }
            if (System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("win")) {
                found.add("Windows named pipe"); // not a file to look for: let Testcontainers try
            }
            Path home = Path.of(System.getProperty("user.home", "/"));
            List<Path> files = new ArrayList<>(List.of(Path.of("/var/run/docker.sock"),
                    home.resolve(".testcontainers.properties"), home.resolve(".docker/run/docker.sock"),
                    home.resolve(".docker/desktop/docker.sock"), home.resolve(".colima/default/docker.sock"),
                    home.resolve(".rd/docker.sock")));
            String runtimeDir = System.getenv("XDG_RUNTIME_DIR");
            if (runtimeDir != null) files.add(Path.of(runtimeDir, "docker.sock"));
            for (Path file : files) {
                if (Files.exists(file)) found.add(file.toString());
            }
            Path dockerConfig = home.resolve(".docker/config.json");
            try {
                if (Files.isReadable(dockerConfig) && Files.readString(dockerConfig).contains("\"currentContext\"")) {
                    found.add(dockerConfig + " (a Docker context)");
                }
            } catch (java.io.IOException unreadable) {
                // then it names no context for Testcontainers either
            }
            return found;
        }

        static String tryStart() {
            try {
                Class<?> factory = Class.forName("org.testcontainers.DockerClientFactory");
                Object instance = factory.getMethod("instance").invoke(null);
                boolean docker = (boolean) factory.getMethod("isDockerAvailable").invoke(instance);
                if (!docker) return null;
                Class<?> gc = Class.forName("org.testcontainers.containers.GenericContainer");
                Object c = gc.getConstructor(String.class).newInstance("redis:7-alpine");
                gc.getMethod("withExposedPorts", Integer[].class).invoke(c, (Object) new Integer[]{6379});
                gc.getMethod("start").invoke(c);
                String host = (String) gc.getMethod("getHost").invoke(c);
                Integer port = (Integer) gc.getMethod("getMappedPort", int.class).invoke(c, 6379);
                return "redis://" + host + ":" + port;
            } catch (ClassNotFoundException e) {
                return null;
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                return null;
            }
        }
    }
}
