package dev.sluice.testing;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} process of the test's own, on a free loopback port, with nothing on disk.
 * Tests that kill, pause or restart Redis use one of these, never the shared server. Closed (by
 * pid) when done, and by a shutdown hook if a test forgets.
 */
public final class RedisProcess implements AutoCloseable {

    private final int port;
    private final List<String> extraArgs;
    private final Path dir;
    private final Path configFile;
    private Process process;
    private volatile boolean paused;

    private RedisProcess(int port, List<String> extraArgs, String configText) throws IOException {
        this.port = port;
        this.extraArgs = extraArgs;
        this.dir = Files.createTempDirectory("sluice-redis-" + port);
        // Sentinel requires a config file it can rewrite; it keeps it across restarts
        this.configFile = configText == null ? null : Files.writeString(dir.resolve("sentinel.conf"), configText);
    }

    /** Starts a server on a free port. {@code extraArgs} are passed to {@code redis-server}, e.g. {@code --maxmemory 1mb}. */
    public static RedisProcess start(String... extraArgs) {
        return startOn(freePort(), extraArgs);
    }

    /** Starts a server on the given port. */
    public static RedisProcess startOn(int port, String... extraArgs) {
        return launchNew(port, null, extraArgs);
    }

    /**
     * Starts a Redis Sentinel on a free port with {@code sentinelConfig} as its {@code sentinel.conf}
     * (e.g. {@code sentinel monitor mymaster 127.0.0.1 6380 2}).
     */
    public static RedisProcess startSentinel(String sentinelConfig, String... extraArgs) {
        return launchNew(freePort(), sentinelConfig, extraArgs);
    }

    private static RedisProcess launchNew(int port, String configText, String... extraArgs) {
        String binary = binary();
        if (binary == null) {
            throw new IllegalStateException("redis-server is not on PATH: install it (apt-get install redis-server) "
                    + "or set REDIS_URL to a Redis the tests may use");
        }
        try {
            RedisProcess p = new RedisProcess(port, List.of(extraArgs), configText);
            p.launch();
            return p;
        } catch (IOException e) {
            throw new IllegalStateException("could not start redis-server on port " + port, e);
        }
    }

    /** The {@code redis-server} binary on PATH, or null. */
    public static String binary() {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String d : path.split(File.pathSeparator)) {
            File f = new File(d, "redis-server");
            if (f.canExecute()) return f.getAbsolutePath();
        }
        return null;
    }

    private void launch() throws IOException {
        List<String> cmd = new ArrayList<>(List.of(binary()));
        if (configFile != null) {
            cmd.addAll(List.of(configFile.toString(), "--sentinel"));
        }
        cmd.addAll(Arrays.asList("--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning"));
        cmd.addAll(extraArgs);
        process = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("redis.log").toFile())
                .start();
        Runtime.getRuntime().addShutdownHook(new Thread(this::kill));
        awaitListening(10_000);
    }

    private void awaitListening(long timeoutMs) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException("redis-server exited with " + process.exitValue() + ": "
                        + Files.readString(dir.resolve("redis.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                try {
                    Thread.sleep(20); // polling a process we do not control; there is nothing to wait on
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted", e);
                }
            }
        }
        throw new IOException("redis-server did not listen on " + port + " within " + timeoutMs + "ms");
    }

    public int port() {
        return port;
    }

    public long pid() {
        return process.pid();
    }

    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** The directory the server runs in (its log is {@code redis.log} there). */
    public Path dir() {
        return dir;
    }

    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    /** SIGKILL: the server vanishes mid-flight, as after a crash. */
    public void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts the server again on the same port, empty (no data, no script cache). */
    public void restart() {
        kill();
        try {
            launch();
        } catch (IOException e) {
            throw new IllegalStateException("could not restart redis-server on port " + port, e);
        }
    }

    /** SIGSTOP: the server is alive but answers nothing, like a Redis stuck in a slow command. */
    public void pause() {
        signal("STOP");
        paused = true;
    }

    /** Whether {@link #pause()} stopped it and nothing resumed it since. */
    public boolean isPaused() {
        return paused;
    }

    /** SIGCONT after {@link #pause()}. */
    public void resume() {
        signal("CONT");
        paused = false;
    }

    private void signal(String sig) {
        try {
            Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
            if (p.waitFor() != 0) throw new IllegalStateException("kill -" + sig + " failed");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            resume(); // a paused process must be woken to die cleanly; harmless otherwise
        }
        kill();
    }

    /** A free TCP port on the loopback interface. */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port", e);
        }
    }
}
