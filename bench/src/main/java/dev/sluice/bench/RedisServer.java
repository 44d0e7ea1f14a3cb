package dev.sluice.bench;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} of the tool's own on a free loopback port, nothing on disk, optionally
 * under valgrind's callgrind ({@link #callgrind}): {@link #dump} then writes the instructions Redis
 * ran since the previous dump, through {@code callgrind_control}. Stopped by pid on {@link #close}
 * (and by a shutdown hook if the tool dies first). Never the shared server on 6379.
 */
final class RedisServer implements AutoCloseable {

    private final Process process;
    private final int port;
    private final Path dir;
    private final boolean callgrind;
    private int dumps;

    private RedisServer(Process process, int port, Path dir, boolean callgrind) {
        this.process = process;
        this.port = port;
        this.dir = dir;
        this.callgrind = callgrind;
    }

    static RedisServer start() {
        return launch(false);
    }

    /** Under {@code valgrind --tool=callgrind}, counting every instruction Redis runs. */
    static RedisServer callgrind() {
        return launch(true);
    }

    private static RedisServer launch(boolean callgrind) {
        try {
            int port;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = s.getLocalPort();
            }
            Path dir = Files.createTempDirectory("sluice-bench-redis-" + port);
            List<String> cmd = new ArrayList<>();
            if (callgrind) {
                cmd.addAll(List.of("valgrind", "--tool=callgrind", "--callgrind-out-file=" + dir.resolve("callgrind.out")));
            }
            cmd.addAll(List.of("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", dir.toString(), "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning"));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("console.log").toFile()).start();
            RedisServer server = new RedisServer(p, port, dir, callgrind);
            Runtime.getRuntime().addShutdownHook(new Thread(server::close));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try (Jedis j = new Jedis(server.hostAndPort())) {
                    if ("PONG".equals(j.ping())) return server;
                } catch (RuntimeException notYet) {
                    if (!p.isAlive() || System.nanoTime() > deadline) {
                        server.close();
                        throw new IllegalStateException(String.join(" ", cmd) + " did not start: "
                                + Files.readString(dir.resolve("console.log")), notYet);
                    }
                    Thread.sleep(100);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start redis-server" + (callgrind ? " under valgrind" : "")
                    + " (apt-get install redis-server" + (callgrind ? " valgrind" : "") + ")", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    HostAndPort hostAndPort() {
        return new HostAndPort("127.0.0.1", port);
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /**
     * Has callgrind write what it counted since the previous dump (or the start) and returns that
     * file: {@code summary:} holds the instructions, {@code callgrind_annotate} the functions'.
     */
    Path dump() throws IOException, InterruptedException {
        if (!callgrind) throw new IllegalStateException("not under callgrind");
        Process p = new ProcessBuilder("callgrind_control", "-d", Long.toString(process.pid())).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new IOException("callgrind_control -d failed: " + out);
        Path file = dir.resolve("callgrind.out." + ++dumps);
        if (!Files.exists(file)) throw new IOException("callgrind wrote no " + file + ": " + out);
        return file;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) Files.deleteIfExists(f);
            Files.deleteIfExists(dir);
        } catch (IOException ignored) {
            // a temporary directory left behind
        }
    }
}
