package dev.sluice.dist;

import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * One instance of a real distribution, in a base directory of its own under
 * {@code dist-it/target/servers}, listening on 127.0.0.1 only. Web applications are deployed and
 * undeployed the way the distribution's users do it: a WAR moved into (or deleted from) the
 * directory the server scans. Subclasses know how each server starts and how it reports what
 * became of a deployment.
 */
abstract class Server implements AutoCloseable {

    static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    static final Duration DEPLOY_TIMEOUT = Duration.ofSeconds(60);

    final String name;
    final Path base;
    private ServerProcess process;
    private long startupMillis;
    private Jmx jmx;

    Server(String name, Path base) {
        this.name = name;
        this.base = base;
    }

    /** What became of a deployment, by the container's own account: deployed (and serving), or failed. */
    record Deployment(boolean deployed, String evidence) {
    }

    /** The container and version, e.g. {@code Apache Tomcat 11.0.24}. */
    abstract String product();

    /** Where WARs are dropped to be deployed. */
    abstract Path deployDir();

    abstract int httpPort();

    /** Starts the process (its own script), returning when it has said it started. */
    abstract ServerProcess launch();

    /** True once the console says the server finished starting. */
    abstract boolean startedPerConsole(String console);

    /** Waits until the container has deployed {@code context}, or failed to, and says which. */
    abstract Deployment awaitDeployment(String context, int deploymentsBefore);

    /** How many times the container has so far reported finishing a deployment of {@code context}. */
    abstract int deploymentsReported(String context);

    /** The container's main log: where an operator looks first (console, or {@code server.log}). */
    abstract String mainLog();

    /** Every file the server logs to now: its console, and its log files (Tomcat's dated logs appear as they roll). */
    abstract List<Path> logFiles();

    /** How long each of the server's log files is now: where {@link #logSince} starts. */
    Map<Path, Long> logMark() {
        Map<Path, Long> mark = new HashMap<>();
        for (Path file : logFiles()) mark.put(file, size(file));
        return mark;
    }

    /** What the server logged since {@code mark}, file after file, each headed with its name. */
    String logSince(Map<Path, Long> mark) {
        StringBuilder all = new StringBuilder();
        for (Path file : logFiles()) {
            try (java.io.RandomAccessFile in = new java.io.RandomAccessFile(file.toFile(), "r")) {
                long from = Math.min(mark.getOrDefault(file, 0L), in.length());
                byte[] added = new byte[(int) (in.length() - from)];
                in.seek(from);
                in.readFully(added);
                all.append("==> ").append(file.getFileName()).append(" <==\n")
                        .append(new String(added, java.nio.charset.StandardCharsets.UTF_8)).append('\n');
            } catch (java.io.FileNotFoundException notYet) {
                // a log the server has not written yet
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return all.toString();
    }

    private static long size(Path file) {
        try {
            return Files.exists(file) ? Files.size(file) : 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts the server and waits for it; prints and remembers the start-up time. */
    final Server start() {
        long t0 = System.nanoTime();
        process = launch();
        try {
            Poll.until(START_TIMEOUT, name + " to start (console " + process.consoleFile() + ")", () -> {
                if (!process.alive()) {
                    throw new AssertionError(name + " exited while starting:\n" + tail(process.console()));
                }
                return startedPerConsole(process.console()) && Http.answers(uri("/"));
            });
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
        startupMillis = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("DIST %s started in %d ms (%s, pid %d)%n", name, startupMillis, product(), process.jvmPid());
        return this;
    }

    long startupMillis() {
        return startupMillis;
    }

    ServerProcess process() {
        return process;
    }

    String console() {
        return process.console();
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + httpPort() + path);
    }

    /** A path inside a deployed context, e.g. {@code uri("fleet", "/api/x")}. */
    URI uri(String context, String path) {
        return uri("/" + context + path);
    }

    /** Deploys {@code war} as {@code context}: moved into the deployment directory in one step, as a careful user copies it. */
    Deployment deploy(String context, Path war) {
        int before = deploymentsReported(context);
        try {
            Path staged = Files.createDirectories(base.resolve("staging")).resolve(context + ".war");
            Files.copy(war, staged, StandardCopyOption.REPLACE_EXISTING);
            Files.move(staged, deployDir().resolve(context + ".war"), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return awaitDeployment(context, before);
    }

    /** Deploys and insists that the application serves. */
    void deployServing(String context, Path war) {
        Deployment d = deploy(context, war);
        if (!d.deployed() || Http.get(uri(context, "/health")).statusCode() != 200) {
            throw new AssertionError(name + ": " + context + ".war did not deploy: " + d.evidence());
        }
    }

    /** Deletes the WAR from the deployment directory and waits until the context is gone. */
    void undeploy(String context) {
        try {
            Files.deleteIfExists(deployDir().resolve(context + ".war"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        awaitUndeployed(context);
    }

    /** Waits until requests to {@code context} find nothing there. */
    void awaitUndeployed(String context) {
        Poll.until(DEPLOY_TIMEOUT, name + " to undeploy " + context,
                () -> Http.get(uri(context, "/health")).statusCode() == 404);
    }

    /** A JMX connection to the server's JVM (the JDK's attach mechanism, as jconsole uses). */
    synchronized Jmx jmx() {
        if (jmx == null) jmx = Jmx.attach(process.jvmPid());
        return jmx;
    }

    @Override
    public synchronized void close() {
        if (jmx != null) jmx.close();
        jmx = null;
        if (process != null) process.close();
    }

    @Override
    public String toString() {
        return name;
    }

    static String tail(String text) {
        return text.length() <= 4000 ? text : "..." + text.substring(text.length() - 4000);
    }

    static int count(String text, String what) {
        int n = 0;
        for (int i = text.indexOf(what); i >= 0; i = text.indexOf(what, i + what.length())) n++;
        return n;
    }

    /** A port no one listens on now, on 127.0.0.1. */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static boolean portFree(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** A fresh, empty directory (what an earlier run left there is deleted). */
    static Path freshDir(Path dir) {
        try {
            if (Files.exists(dir)) {
                try (Stream<Path> paths = Files.walk(dir)) {
                    for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
                }
            }
            return Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Path copyTree(Path from, Path to) {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : paths.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(target);
                else Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
            }
            return to;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A directory named by a system property that failsafe sets (see dist-it/pom.xml). */
    static Path dirProperty(String property) {
        String value = System.getProperty(property);
        if (value == null) {
            throw new IllegalStateException("system property " + property + " is not set: run the distribution "
                    + "tests through Maven (mvn verify), which fetches and unpacks the distributions first");
        }
        Path dir = Path.of(value);
        if (!Files.isDirectory(dir)) {
            throw new IllegalStateException(property + "=" + dir + " does not exist: the distribution was not "
                    + "unpacked (mvn verify runs maven-dependency-plugin's unpack in pre-integration-test)");
        }
        return dir;
    }

    /** A file named by a system property that failsafe sets (see dist-it/pom.xml). */
    static Path fileProperty(String property) {
        String value = System.getProperty(property);
        if (value == null || !Files.isRegularFile(Path.of(value))) {
            throw new IllegalStateException("system property " + property + "=" + value + " names no file: run the"
                    + " distribution tests through Maven (mvn verify), which builds it first");
        }
        return Path.of(value);
    }

    static Path serversDir() {
        String value = System.getProperty("dist.servers.dir", "target/servers");
        return Path.of(value);
    }
}
