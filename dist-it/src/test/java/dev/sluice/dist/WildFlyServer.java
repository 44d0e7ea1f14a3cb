package dev.sluice.dist;

import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * WildFly from its distribution zip, started with {@code bin/standalone.sh} on a copy of
 * {@code standalone/} as its own {@code jboss.server.base.dir}, every socket moved by a port offset
 * ({@code jboss.socket.binding.port-offset}) and bound to 127.0.0.1 ({@code -b}, {@code -bmanagement}).
 * Applications are deployed by dropping WARs into {@code deployments/}; the deployment scanner
 * reports each outcome with a marker file ({@code .deployed}, {@code .failed}, {@code .undeployed}).
 */
final class WildFlyServer extends Server {

    /** The sockets of the stock standalone.xml, all moved by the offset. */
    private static final int[] STOCK_PORTS = {8080, 8443, 9990, 9993, 4712, 4713};

    private final Path home;
    private final int offset;
    private final Map<String, String> env;

    private WildFlyServer(String name, Path home, Path base, int offset, Map<String, String> env) {
        super(name, base);
        this.home = home;
        this.offset = offset;
        this.env = env;
    }

    /** An instance of the WildFly unpacked at {@code home}, not yet started. */
    static WildFlyServer create(String name, Path home, Map<String, String> env) {
        Path base = copyTree(home.resolve("standalone"), freshDir(serversDir().resolve(name)));
        try {
            Path config = base.resolve("configuration/standalone.xml");
            String xml = Files.readString(config);
            // the scanner looks at deployments/ every 5 s by default; hot deployment in these tests every second
            String edited = xml.replace("scan-interval=\"5000\"", "scan-interval=\"1000\"");
            if (edited.equals(xml)) {
                throw new IllegalStateException(config + " is not the stock standalone.xml this test edits");
            }
            Files.writeString(config, edited);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new WildFlyServer(name, home, base, freeOffset(), env);
    }

    private static int freeOffset() {
        for (int attempt = 0; attempt < 100; attempt++) {
            int offset = 10_000 + java.util.concurrent.ThreadLocalRandom.current().nextInt(40_000);
            boolean free = true;
            for (int port : STOCK_PORTS) free &= portFree(port + offset);
            if (free) return offset;
        }
        throw new IllegalStateException("no free port offset for WildFly");
    }

    @Override
    String product() {
        return "WildFly " + home.getFileName().toString().replace("wildfly-", "");
    }

    @Override
    Path deployDir() {
        return base.resolve("deployments");
    }

    @Override
    int httpPort() {
        return 8080 + offset;
    }

    @Override
    ServerProcess launch() {
        return ServerProcess.start(name, base, env, base.resolve("console.out"),
                List.of("bash", home.resolve("bin/standalone.sh").toString(),
                        "-Djboss.server.base.dir=" + base,
                        "-Djboss.socket.binding.port-offset=" + offset,
                        "-b", "127.0.0.1", "-bmanagement", "127.0.0.1"));
    }

    @Override
    boolean startedPerConsole(String console) {
        return console.contains("WFLYSRV0025") || console.contains("WFLYSRV0026");
    }

    @Override
    Deployment deploy(String context, Path war) {
        try {
            // what an earlier deployment of the same name left; an operator deletes these too
            for (String marker : List.of(".failed", ".undeployed", ".deployed")) {
                Files.deleteIfExists(deployDir().resolve(context + ".war" + marker));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return super.deploy(context, war);
    }

    @Override
    int deploymentsReported(String context) {
        return 0;
    }

    /** The deployment scanner's verdict: {@code <context>.war.deployed} or {@code .failed}. */
    @Override
    Deployment awaitDeployment(String context, int ignored) {
        Path deployed = deployDir().resolve(context + ".war.deployed");
        Path failed = deployDir().resolve(context + ".war.failed");
        Poll.until(DEPLOY_TIMEOUT, name + " to deploy " + context + ".war (a .deployed or .failed marker)",
                () -> Files.exists(deployed) || Files.exists(failed));
        if (Files.exists(failed)) {
            return new Deployment(false, "marker " + failed.getFileName() + ": " + read(failed));
        }
        // the scanner's word, whatever the application then answers
        return new Deployment(true, "marker " + deployed.getFileName() + "; /health answers "
                + Http.get(uri(context, "/health")).statusCode());
    }

    @Override
    void awaitUndeployed(String context) {
        Poll.until(DEPLOY_TIMEOUT, name + " to undeploy " + context + ".war",
                () -> !Files.exists(deployDir().resolve(context + ".war.deployed")));
        super.awaitUndeployed(context);
    }

    /** {@code standalone/log/server.log} of this instance's base. */
    @Override
    String mainLog() {
        return read(base.resolve("log/server.log"));
    }

    /** {@code server.log} (the console repeats it). */
    @Override
    List<Path> logFiles() {
        return List.of(base.resolve("log/server.log"));
    }

    private static String read(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
