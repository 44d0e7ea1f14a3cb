package dev.sluice.example.demo;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The Redis the demo's fleet shares, found or started much as the filter's tests find theirs, in
 * this order: {@code REDIS_URL}; a {@code redis-server} from PATH, started on a free port of
 * 127.0.0.1 with nothing saved to disk (a Redis of its own, empty, whatever else runs here); one
 * answering on localhost:6379; a {@code redis:7} container where {@code docker} answers (slowest:
 * the first time, the image is pulled). {@link #stop()} stops what it started and nothing else.
 */
final class DemoRedis {

    private static final String LOCAL = "redis://localhost:6379";
    private static final List<String> TRIED = new ArrayList<>();

    private final String url;
    private final String how;
    private final Runnable stop;

    private DemoRedis(String url, String how, Runnable stop) {
        this.url = url;
        this.how = how;
        this.stop = stop;
    }

    String url() {
        return url;
    }

    /** How it was found, for the demo's first line. */
    String how() {
        return how;
    }

    void stop() {
        stop.run();
    }

    /** What was tried, for the message when nothing answered. */
    static String tried() {
        return String.join("; ", TRIED);
    }

    /** A Redis that answers, or {@code null}. */
    static DemoRedis find() {
        String fromEnv = System.getenv("REDIS_URL");
        if (fromEnv != null && !fromEnv.isBlank()) {
            if (answers(fromEnv.trim())) return new DemoRedis(fromEnv.trim(), "REDIS_URL", () -> { });
            TRIED.add("REDIS_URL=" + fromEnv.trim() + " does not answer");
            return null; // the user named one: no other is what they meant
        }
        DemoRedis own = redisServer();
        if (own != null) return own;
        if (answers(LOCAL)) return new DemoRedis(LOCAL, "the one on localhost:6379", () -> { });
        TRIED.add("nothing on localhost:6379");
        return dockerContainer();
    }

    /** A {@code redis-server} from PATH on a free port, its data in a temporary directory. */
    private static DemoRedis redisServer() {
        Path binary = onPath("redis-server");
        if (binary == null) {
            TRIED.add("no redis-server on PATH");
            return null;
        }
        try {
            int port = freePort();
            Path dir = Files.createTempDirectory("sluice-demo-redis-");
            Process process = new ProcessBuilder(binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--protected-mode", "no")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
            String url = "redis://127.0.0.1:" + port;
            Runnable stop = () -> {
                process.destroy();
                try {
                    if (!process.waitFor(5, TimeUnit.SECONDS)) process.destroyForcibly();
                } catch (InterruptedException e) {
                    process.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
                deleteTree(dir);
            };
            if (awaitAnswer(url, 5_000, process)) {
                return new DemoRedis(url, binary + " started on a free port, pid " + process.pid()
                        + ", stopped with the demo", stop);
            }
            stop.run();
            TRIED.add(binary + " did not start (see " + dir.resolve("redis.log") + ")");
        } catch (IOException e) {
            TRIED.add(binary + " could not be started: " + e.getMessage());
        }
        return null;
    }

    /** A {@code redis:7} container, where the {@code docker} command reaches an engine. */
    private static DemoRedis dockerContainer() {
        if (onPath("docker") == null || run(15, "docker", "info").isEmpty()) {
            TRIED.add("no Docker engine answers");
            return null;
        }
        System.out.println("Starting a Redis container (docker run redis:7; the first time, the image is pulled)...");
        String id = run(300, "docker", "run", "-d", "--rm", "-p", "127.0.0.1::6379", "redis:7")
                .map(String::trim).orElse("");
        if (id.isEmpty()) {
            TRIED.add("docker run redis:7 failed");
            return null;
        }
        Runnable stop = () -> run(30, "docker", "rm", "-f", id);
        String mapped = run(15, "docker", "port", id, "6379/tcp").map(s -> s.lines().findFirst().orElse("")).orElse("");
        String url = "redis://" + mapped.trim();
        if (!mapped.isBlank() && awaitAnswer(url, 30_000, null)) {
            return new DemoRedis(url, "a redis:7 container, " + id.substring(0, Math.min(12, id.length()))
                    + ", removed with the demo", stop);
        }
        stop.run();
        TRIED.add("the redis:7 container did not answer");
        return null;
    }

    private static boolean awaitAnswer(String url, long timeoutMillis, Process process) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (System.nanoTime() < deadline) {
            if (answers(url)) return true;
            if (process != null && !process.isAlive()) return false;
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    /** A bare RESP PING with a short timeout: the demo needs no Redis client of its own. */
    static boolean answers(String url) {
        try {
            URI uri = URI.create(url);
            String host = uri.getHost() == null ? "localhost" : uri.getHost();
            int port = uri.getPort() < 0 ? 6379 : uri.getPort();
            if ("rediss".equals(uri.getScheme())) return true; // TLS: let the filter connect and report
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 500);
                s.setSoTimeout(500);
                OutputStream out = s.getOutputStream();
                out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                byte[] buf = new byte[64];
                int n = in.read(buf);
                // +PONG, or -NOAUTH when a password is needed: either way a Redis answers
                return n > 0 && (buf[0] == '+' || buf[0] == '-');
            }
        } catch (IOException | IllegalArgumentException e) {
            return false;
        }
    }

    /** The command's standard output if it ended with status 0 within {@code seconds}. */
    private static Optional<String> run(int seconds, String... command) {
        try {
            Path out = Files.createTempFile("sluice-demo-", ".out");
            try {
                Process p = new ProcessBuilder(command).redirectErrorStream(false)
                        .redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
                if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    return Optional.empty();
                }
                return p.exitValue() == 0 ? Optional.of(Files.readString(out)) : Optional.empty();
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    private static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) continue;
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) return candidate;
        }
        return null;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // a temporary directory: the system cleans it up eventually
        }
    }
}
