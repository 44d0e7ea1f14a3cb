package dev.sluice.dist;

import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Apache Tomcat from its distribution zip, started with {@code bin/catalina.sh run} with a
 * {@code CATALINA_BASE} of its own (the stock {@code conf/}, the connector on a free port of
 * 127.0.0.1, no shutdown port), the console captured as {@code catalina.sh start} would write
 * {@code logs/catalina.out}. Applications are deployed by dropping WARs into {@code webapps/}
 * (the stock {@code autoDeploy="true"}).
 */
final class TomcatServer extends Server {

    private final Path home;
    private final int port;
    private final Map<String, String> env;

    private TomcatServer(String name, Path home, Path base, int port, Map<String, String> env) {
        super(name, base);
        this.home = home;
        this.port = port;
        this.env = env;
    }

    /** An instance of the Tomcat unpacked at {@code home}, not yet started. */
    static TomcatServer create(String name, Path home, Map<String, String> env) {
        Path base = freshDir(serversDir().resolve(name));
        try {
            for (String dir : List.of("logs", "temp", "webapps", "work")) Files.createDirectories(base.resolve(dir));
            copyTree(home.resolve("conf"), base.resolve("conf"));
            int port = freePort();
            Path serverXml = base.resolve("conf/server.xml");
            String xml = Files.readString(serverXml);
            String edited = xml
                    // catalina.sh run is stopped by a signal: no shutdown port to collide with other instances
                    .replace("<Server port=\"8005\"", "<Server port=\"-1\"")
                    .replace("<Connector port=\"8080\"", "<Connector port=\"" + port + "\" address=\"127.0.0.1\"")
                    // autoDeploy checks webapps/ on the engine's background thread, every 10 s by default
                    .replace("<Engine name=\"Catalina\" defaultHost=\"localhost\">",
                            "<Engine name=\"Catalina\" defaultHost=\"localhost\" backgroundProcessorDelay=\"1\">");
            if (edited.equals(xml) || !edited.contains("address=\"127.0.0.1\"") || !edited.contains("port=\"-1\"")
                    || !edited.contains("backgroundProcessorDelay")) {
                throw new IllegalStateException("conf/server.xml of " + home + " is not the stock one this test edits");
            }
            Files.writeString(serverXml, edited);
            return new TomcatServer(name, home, base, port, env);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    String product() {
        return "Apache Tomcat " + home.getFileName().toString().replace("apache-tomcat-", "");
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
        Map<String, String> vars = new java.util.HashMap<>(env);
        vars.put("CATALINA_HOME", home.toString());
        vars.put("CATALINA_BASE", base.toString());
        // the zip does not keep the scripts' execute bits: run them with the shell, as its README says for Windows users
        return ServerProcess.start(name, base, vars, base.resolve("logs/console.out"),
                List.of("bash", home.resolve("bin/catalina.sh").toString(), "run"));
    }

    @Override
    boolean startedPerConsole(String console) {
        return console.contains("org.apache.catalina.startup.Catalina.start Server startup in");
    }

    @Override
    int deploymentsReported(String context) {
        return count(console(), "Deployment of web application archive [" + deployDir().resolve(context + ".war") + "] has finished");
    }

    @Override
    Deployment awaitDeployment(String context, int deploymentsBefore) {
        Poll.until(DEPLOY_TIMEOUT, name + " to finish deploying " + context + ".war",
                () -> deploymentsReported(context) > deploymentsBefore);
        String failed = "Context [/" + context + "] startup failed";
        int status = Http.get(uri(context, "/health")).statusCode();
        if (status == 200) return new Deployment(true, "serving");
        return new Deployment(false, "status " + status + (console().contains(failed) ? "; console: " + failed : ""));
    }

    /** Waits, besides the context being gone, until Tomcat has deleted the expanded directory. */
    @Override
    void awaitUndeployed(String context) {
        super.awaitUndeployed(context);
        Poll.until(DEPLOY_TIMEOUT, name + " to delete webapps/" + context, () -> !Files.exists(deployDir().resolve(context)));
    }

    /** The console ({@code catalina.out}) and the {@code catalina} and {@code localhost} logs of {@code logs/}. */
    @Override
    String mainLog() {
        StringBuilder all = new StringBuilder(console());
        for (Path log : logFiles().subList(1, logFiles().size())) {
            all.append("\n==> ").append(log.getFileName()).append(" <==\n").append(read(log));
        }
        return all.toString();
    }

    /** The console, then the {@code catalina} and {@code localhost} logs of {@code logs/}. */
    @Override
    List<Path> logFiles() {
        List<Path> files = new java.util.ArrayList<>(List.of(process().consoleFile()));
        try (Stream<Path> logs = Files.list(base.resolve("logs"))) {
            logs.filter(p -> p.getFileName().toString().matches("(catalina|localhost)\\..*\\.log")).sorted().forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Tomcat's {@code catalina.<date>.log} alone. */
    String catalinaLog() {
        return logFile("catalina.");
    }

    /** Tomcat's {@code localhost.<date>.log}: where a context logs the exceptions of its start. */
    String localhostLog() {
        return logFile("localhost.");
    }

    private String logFile(String prefix) {
        StringBuilder all = new StringBuilder();
        try (Stream<Path> logs = Files.list(base.resolve("logs"))) {
            for (Path log : logs.filter(p -> p.getFileName().toString().startsWith(prefix)
                    && p.getFileName().toString().endsWith(".log")).sorted().toList()) {
                all.append(Files.readString(log));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return all.toString();
    }
}
