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
 * Eclipse Jetty from its {@code jetty-home} tarball, as its documentation sets it up: a
 * {@code JETTY_BASE} made with {@code java -jar $JETTY_HOME/start.jar --add-modules=server,http,<env>-deploy},
 * then started with {@code java -jar $JETTY_HOME/start.jar} in that base, the HTTP connector on a free
 * port of 127.0.0.1. Applications are deployed by dropping WARs into the base's {@code webapps/},
 * which the deployer scans every second ({@code jetty.deploy.scanInterval=1}: hot deployment).
 */
final class JettyServer extends Server {

    private final Path home;
    private final String environment;
    private final int port;
    private final Map<String, String> env;

    private JettyServer(String name, Path home, Path base, String environment, int port, Map<String, String> env) {
        super(name, base);
        this.home = home;
        this.environment = environment;
        this.port = port;
        this.env = env;
    }

    /** An instance of the Jetty unpacked at {@code home} with {@code environment} ({@code ee10}, {@code ee11}), not yet started. */
    static JettyServer create(String name, Path home, String environment, Map<String, String> env) {
        if (!Files.exists(home.resolve("modules/" + environment + "-deploy.mod"))) {
            throw new IllegalStateException(home.getFileName() + " has no " + environment + " environment (Jetty 12.0 "
                    + "stops at ee10): the ee11 tests need jetty-home 12.1 (dist.jetty.version), not -Pjetty-12.0");
        }
        Path base = freshDir(serversDir().resolve(name));
        try {
            // Jetty unpacks WARs into ${jetty.base}/work when it exists (else into /tmp)
            Files.createDirectories(base.resolve("work"));
            ProcessBuilder pb = new ProcessBuilder(java(), "-jar", home.resolve("start.jar").toString(),
                    "--add-modules=server,http," + environment + "-deploy")
                    .directory(base.toFile()).redirectErrorStream(true).redirectOutput(base.resolve("add-modules.out").toFile());
            Process p = pb.start();
            if (p.waitFor() != 0) {
                throw new IllegalStateException("start.jar --add-modules failed in " + base + ":\n"
                        + Files.readString(base.resolve("add-modules.out")));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        return new JettyServer(name, home, base, environment, freePort(), env);
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    @Override
    String product() {
        return "Eclipse Jetty " + home.getFileName().toString().replace("jetty-home-", "") + " " + environment;
    }

    @Override
    Path deployDir() {
        return base.resolve("webapps");
    }

    @Override
    int httpPort() {
        return port;
    }

    @Override
    ServerProcess launch() {
        return ServerProcess.start(name, base, env, base.resolve("console.out"),
                List.of(java(), "-jar", home.resolve("start.jar").toString(),
                        "jetty.http.host=127.0.0.1", "jetty.http.port=" + port, "jetty.deploy.scanInterval=1"));
    }

    @Override
    boolean startedPerConsole(String console) {
        return console.contains(":oejs.Server:main: Started oejs.Server@");
    }

    /** How many times Jetty has logged that {@code context} failed to start. */
    @Override
    int deploymentsReported(String context) {
        return (int) console().lines()
                .filter(l -> l.contains("Failed startup of context") && l.contains(",/" + context + ","))
                .count();
    }

    @Override
    Deployment awaitDeployment(String context, int failuresBefore) {
        Deployment[] outcome = new Deployment[1];
        Poll.until(DEPLOY_TIMEOUT, name + " to deploy " + context + ".war", () -> {
            if (deploymentsReported(context) > failuresBefore) {
                outcome[0] = new Deployment(false, "console: Failed startup of context /" + context
                        + "; status " + Http.get(uri(context, "/health")).statusCode());
            } else if (Http.get(uri(context, "/health")).statusCode() == 200) {
                outcome[0] = new Deployment(true, "serving");
            }
            return outcome[0] != null;
        });
        return outcome[0];
    }

    /** Jetty's console: {@code java -jar start.jar} logs to standard error. */
    @Override
    String mainLog() {
        return console();
    }

    @Override
    List<Path> logFiles() {
        return List.of(process().consoleFile());
    }
}
