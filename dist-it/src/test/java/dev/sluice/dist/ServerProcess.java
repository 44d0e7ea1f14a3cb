package dev.sluice.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A server started as its users start it (a shell script or {@code java -jar}), with its console
 * (stdout and stderr) in a file. Closing it ends the whole process tree by pid, children first
 * (WildFly's {@code standalone.sh} and Tomcat's {@code catalina.sh} run the JVM as a child); a
 * shutdown hook closes whatever a failed test left running.
 */
final class ServerProcess implements AutoCloseable {

    private static final Set<ServerProcess> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        // every tree gets its SIGTERM first, then each is awaited (and killed): 10 s at most in all
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            List<ServerProcess> left = List.copyOf(RUNNING);
            left.forEach(ServerProcess::terminate);
            left.forEach(ServerProcess::close);
        }, "dist-it-server-killer"));
    }

    /** Variables a developer's shell may carry that would change how the servers start. */
    private static final List<String> INHERITED_NOT = List.of("JAVA_OPTS", "CATALINA_OPTS", "CATALINA_BASE",
            "CATALINA_HOME", "CATALINA_PID", "JETTY_HOME", "JETTY_BASE", "JBOSS_HOME", "JAVA_TOOL_OPTIONS", "REDIS_URL");

    private final String name;
    private final Process process;
    private final Path console;
    private List<ProcessHandle> tree; // as it was when it was told to stop: an orphaned child is still found

    private ServerProcess(String name, Process process, Path console) {
        this.name = name;
        this.process = process;
        this.console = console;
    }

    /** Starts {@code command} in {@code dir} with the user's environment plus {@code env}; console to {@code console}. */
    static ServerProcess start(String name, Path dir, Map<String, String> env, Path console, List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(console.toFile()).redirectInput(ProcessBuilder.Redirect.from(nullDevice()));
        INHERITED_NOT.forEach(pb.environment()::remove);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().putAll(env);
        try {
            ServerProcess p = new ServerProcess(name, pb.start(), console);
            RUNNING.add(p);
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + name + ": " + command, e);
        }
    }

    private static java.io.File nullDevice() {
        return new java.io.File("/dev/null");
    }

    long pid() {
        return process.pid();
    }

    boolean alive() {
        return process.isAlive();
    }

    /** The server's JVM: the process itself if it is {@code java}, else its {@code java} descendant. */
    long jvmPid() {
        if (isJava(process.toHandle())) return process.pid();
        return process.toHandle().descendants().filter(ServerProcess::isJava).findFirst()
                .map(ProcessHandle::pid)
                .orElseThrow(() -> new IllegalStateException(name + ": no java process under pid " + process.pid()));
    }

    private static boolean isJava(ProcessHandle h) {
        return h.info().command().map(c -> c.endsWith("/java")).orElse(false);
    }

    /**
     * Ends the server's JVM at once with SIGKILL, as a crash or the kernel's OOM killer does: no
     * shutdown hook, no undeploy, nothing released. Returns once it is gone.
     */
    void killJvm() {
        ProcessHandle jvm = ProcessHandle.of(jvmPid())
                .orElseThrow(() -> new IllegalStateException(name + " is not running"));
        jvm.destroyForcibly();
        try {
            jvm.onExit().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(name + ": pid " + jvm.pid() + " still there 10 s after SIGKILL", e);
        }
    }

    /** Everything the server printed so far. */
    String console() {
        try {
            return Files.readString(console, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Path consoleFile() {
        return console;
    }

    private List<ProcessHandle> tree() {
        List<ProcessHandle> tree = new ArrayList<>(process.toHandle().descendants().toList());
        tree.add(process.toHandle());
        return tree;
    }

    /** SIGTERM to every process of the tree, children first. */
    private synchronized void terminate() {
        if (tree == null) tree = tree();
        tree.forEach(ProcessHandle::destroy);
    }

    /** Ends the process tree: SIGTERM to every process, then SIGKILL to what is left after 10 s. */
    @Override
    public void close() {
        if (!RUNNING.remove(this)) return;
        terminate();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle h : tree) {
            long left = deadline - System.nanoTime();
            try {
                if (left > 0) h.onExit().get(left, TimeUnit.NANOSECONDS);
            } catch (Exception timedOutOrInterrupted) {
                // killed below
            }
            if (h.isAlive()) h.destroyForcibly();
        }
    }

    @Override
    public String toString() {
        return name + " (pid " + process.pid() + ")";
    }
}
