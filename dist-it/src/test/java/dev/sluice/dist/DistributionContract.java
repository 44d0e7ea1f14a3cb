package dev.sluice.dist;

import dev.sluice.it.support.Container;
import dev.sluice.it.support.Deployment;
import dev.sluice.it.support.EveryContainer;
import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.ExampleWar;
import dev.sluice.it.support.Http;
import dev.sluice.testing.Poll;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What Sluice promises on every supported container, checked in the distribution a user downloads:
 * instances of it started with its own scripts, sharing one Redis, the example WAR deployed as its
 * users deploy. Each subclass names a distribution; its servers ({@link Distribution}) start once
 * (in parallel) for all the tests of the class, and every test undeploys what it deployed. The
 * tests written once for every container ({@link EveryContainer}: src-it runs them on the embedded
 * containers) run here too; the tests below are the distributions' own: how each reports a failed
 * deployment, and what a redeploy leaves behind in a long-running server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class DistributionContract implements EveryContainer {

    private final Distribution distribution = new Distribution(serverName(), this::createServer);

    /** The name of the servers' base directories, e.g. {@code tomcat10}: {@code tomcat10-1}, ... */
    abstract String serverName();

    /** One server of the distribution, not yet started, named {@code name}, whose process gets {@code environment}. */
    abstract Server createServer(String name, Map<String, String> environment);

    /** What the container shows, besides its main log naming the key, when a deployment failed. */
    abstract void assertFailedDeployment(Server server, String context, Server.Deployment deployment);

    /** Container warnings of leaks after an undeployment (Tomcat's); none by default. */
    void assertNoLeakWarnings(Server server) {
    }

    @Override
    public Container container() {
        return distribution;
    }

    @BeforeAll
    void startServers() {
        System.out.printf("DIST %s: Redis %s (%s)%n", getClass().getSimpleName(), TestRedis.url(), TestRedis.how());
        distribution.servers(2); // the tests below use two; the third starts with the first fleet of three
    }

    @Test
    void badConfigurationFailsTheDeploymentAndTheMainLogNamesTheKey() {
        Server server = distribution.servers(1).get(0);
        Server.Deployment d = server.deploy("typo", war(ExampleApp.named("dist-typo").with("rule.api.windw", "1m")));
        try {
            System.out.printf("DIST %s bad configuration: %s%n", server, d);
            assertThat(d.deployed()).as("%s reports typo.war deployed (%s)", server, d.evidence()).isFalse();
            int status = Http.get(server.uri("typo", "/api/x")).statusCode();
            assertThat(status).as("the application is not there, nor serving errors").isIn(404, 503);
            Poll.until(Duration.ofSeconds(10), server + "'s main log to name the key",
                    () -> server.mainLog().contains("rule.api.windw"));
            assertFailedDeployment(server, "typo", d);
        } finally {
            server.undeploy("typo");
        }
    }

    @Test
    void redeployingThreeTimesLeaksNoThreadsConnectionsNorClassLoaders() {
        Server server = distribution.servers(2).get(1);
        long pid = server.process().jvmPid();
        // a leaky-bucket rule with max-delay: the filter's own timer thread runs too
        Path war = war(ExampleApp.named("dist-cycle").with("rule.api.algorithm", "leaky-bucket",
                "rule.api.limit", "100", "rule.api.window", "1s", "rule.api.burst", "5", "rule.api.max-delay", "100ms"));
        int threadsBefore = server.jmx().threadNames().size();
        cycle(server, war); // the first deployment also warms the container's own pools and caches
        server.jmx().gc();
        int threads = server.jmx().threadNames().size();
        int connections = RedisConnections.of(pid);
        int copies = server.jmx().loadedCopies("dev.sluice.RateLimitFilter");
        List<String> baseline = server.jmx().threadNames();
        List<Integer> after = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            cycle(server, war);
            try {
                Poll.until(Duration.ofSeconds(30), server + ": threads and Redis connections back after undeploy " + i,
                        () -> server.jmx().threadNames().size() <= threads && RedisConnections.of(pid) == connections);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + ": threads " + server.jmx().threadNames().size() + " vs "
                        + threads + " (" + diff(baseline, server.jmx().threadNames()) + "), Redis connections "
                        + RedisConnections.of(pid) + " vs " + connections, e);
            }
            after.add(server.jmx().threadNames().size());
        }
        Poll.until(Duration.ofSeconds(30), server + ": the undeployed applications' classes unloaded", () -> {
            server.jmx().gc();
            return server.jmx().loadedCopies("dev.sluice.RateLimitFilter") <= copies;
        });
        System.out.printf("DIST %s redeploy: JVM threads %d before, %d after a first deploy/undeploy, %s after each of 3 more;"
                        + " Redis connections %d; RateLimitFilter classes loaded %d%n",
                server, threadsBefore, threads, after, connections, copies);
        List<String> now = server.jmx().threadNames();
        assertThat(now).as("no Sluice thread outlives its application").noneMatch(n -> n.startsWith("sluice-"));
        // the container's pools may shrink meanwhile and hide a leaked thread in the total: no kind of thread may grow
        Map<String, Long> kinds = kinds(baseline);
        kinds(now).forEach((kind, n) -> {
            if (!GROWS_ON_DEMAND.contains(kind)) {
                assertThat(n).as("threads named like '%s'", kind).isLessThanOrEqualTo(kinds.getOrDefault(kind, 0L));
            }
        });
        assertNoLeakWarnings(server);
    }

    /**
     * The file the start-up line names is the one to edit: the WAR's own
     * {@code classpath:/ratelimit.properties}, with the Quick start's settings (no {@code reload}), where
     * the container unpacked it. {@code reload()}, run through the jar's command line on the server's
     * pid as an operator without a display runs it, applies an edit at once, whatever the container
     * caches (Tomcat serves a resource from a cache of about five seconds); the figures it prints
     * are the instance's. Nothing about Sluice is logged at WARN or ERROR, deployed or undeployed.
     */
    @Test
    void reloadAppliesAnEditOfTheFileTheStartUpLineNamesAtOnce() throws Exception {
        Server server = distribution.servers(1).get(0);
        Map<Path, Long> mark = server.logMark();
        String instance;
        try (Deployment d = container().deploy(ExampleApp.named("dist-edit"), 1)) {
            assertThat(d.get(0, "/api/x").headers().firstValue("RateLimit-Policy").orElse(""))
                    .contains("\"api\";q=10;");
            StartUpLine started = StartUpLine.in(d.log(0));
            assertThat(started.reloadEvery()).as("the Quick start's file: no reload").isNull();
            edit(started.file(), "rule.api.limit", "4");

            String answer = figures(server, started.instance(), "reload");
            assertThat(answer.trim()).isEqualTo("applied: rule.api.limit: 10 -> 4");
            assertThat(d.get(0, "/api/x").headers().firstValue("RateLimit-Policy").orElse("")).contains("\"api\";q=4;");
            String figures = figures(server, started.instance());
            assertThat(figures).contains("dev.sluice:type=RateLimiter,name=" + started.instance() + "\n")
                    .containsPattern("\n  Reloads +1\n").containsPattern("\n  Allowed +2\n")
                    .contains("dev.sluice:type=Rule,name=" + started.instance() + ",rule=api\n")
                    .containsPattern("\n  Limit +4\n");
            System.out.printf("DIST %s reload(): %s; the file %s%n", server, answer.trim(), started.file());
            instance = started.instance();
        }
        assertQuiet(server, server.logSince(mark), instance);
    }

    /**
     * With {@code reload}, an edit of the file is applied by the check after the one that read it
     * first (a file caught half-written never is): within {@code reload} and a second. The
     * reload thread carries the instance's name.
     */
    @Test
    void anEditIsAppliedWithinTheReloadIntervalAndASecond() throws Exception {
        Server server = distribution.servers(1).get(0);
        Map<Path, Long> mark = server.logMark();
        String instance;
        try (Deployment d = container().deploy(ExampleApp.named("dist-watch").with("reload", "2s"), 1)) {
            StartUpLine started = StartUpLine.in(d.log(0));
            assertThat(started.reloadEvery()).isEqualTo("2s");
            assertThat(server.jmx().threadNames()).contains("sluice-reload-" + started.instance());
            long edited = System.nanoTime();
            edit(started.file(), "rule.api.limit", "6");
            Poll.until(Duration.ofSeconds(3), "the edit applied within reload (2 s) and a second",
                    () -> d.mxbeanTotal("Reloads") == 1);
            System.out.printf("DIST %s reload=2s: the edit applied %d ms after it was made%n", server,
                    (System.nanoTime() - edited) / 1_000_000);
            assertThat(d.get(0, "/api/x").headers().firstValue("RateLimit-Policy").orElse("")).contains("\"api\";q=6;");
            instance = started.instance();
        }
        assertQuiet(server, server.logSince(mark), instance);
    }

    /** What a filter's start-up line says: its instance name, its file, how often that is checked. */
    record StartUpLine(String instance, Path file, String reloadEvery) {
        private static final Pattern LINE = Pattern.compile(
                "Sluice \\[([^\\]]+)\\] started: [^\\n]*?; config file ([^\\n]+?)(?:, checked for changes every (\\S+))?\\s*$",
                Pattern.MULTILINE);

        static StartUpLine in(String log) {
            Matcher m = LINE.matcher(log);
            assertThat(m.find()).as("the start-up line in:\n%s", log).isTrue();
            return new StartUpLine(m.group(1), Path.of(m.group(2)), m.group(3));
        }
    }

    /** Sets {@code key} in the properties file as an operator does: written beside it, renamed over it. */
    private static void edit(Path file, String key, String value) throws Exception {
        String text = Files.readString(file);
        String edited = text.replaceAll("(?m)^" + Pattern.quote(key) + "\\s*=.*$", key + " = " + value);
        assertThat(edited).as("%s sets %s", file, key).isNotEqualTo(text);
        Path tmp = Files.createTempFile(file.getParent(), "edit-", ".tmp");
        Files.writeString(tmp, edited);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** {@code java -jar sluice-filter.jar <pid> [args]}: the jar's command line, run against the server's JVM. */
    static String figures(Server server, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", Server.fileProperty("sluice.filter.jar").toString(), Long.toString(server.process().jvmPid())));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s ends", command).isTrue();
        assertThat(p.exitValue()).as("%s: %s", command, out).isZero();
        return out;
    }

    /**
     * A good deployment is quiet: no line at WARN or ERROR (WARNING, SEVERE) from or about Sluice or
     * the example application; the container's other warnings in that time are printed.
     */
    static void assertQuiet(Server server, String log, String instance) {
        String context = instance.substring(0, instance.lastIndexOf('/'));
        List<String> warnings = log.lines().filter(l -> WARNING.matcher(l).find()).toList();
        List<String> ours = warnings.stream().filter(l -> l.toLowerCase(Locale.ROOT).contains("sluice")
                || l.contains(context)).toList();
        warnings.stream().filter(l -> !ours.contains(l)).forEach(l -> System.out.printf("DIST %s warned: %s%n", server, l));
        assertThat(ours).as("%s's warnings and errors about Sluice", server).isEmpty();
    }

    private static final Pattern WARNING = Pattern.compile("\\b(WARN|WARNING|ERROR|SEVERE)\\b");

    /** The example WAR with {@code app}'s Sluice keys in its {@code web.xml}, to deploy by hand. */
    private static Path war(ExampleApp app) {
        return ExampleWar.withInitParams(app.sluice(), Server.serversDir().resolve("wars"));
    }

    /** Deploys, uses (every kind of Sluice thread and connection started), and undeploys the WAR once. */
    private static void cycle(Server server, Path war) {
        server.deployServing("cycle", war);
        for (int i = 0; i < 10; i++) {
            assertThat(Http.get(server.uri("cycle", "/api/x")).statusCode()).isIn(200, 429);
        }
        assertThat(server.jmx().threadNames()).as("the filter's delay timer runs while deployed")
                .anyMatch(n -> n.startsWith("sluice-delay-"));
        assertThat(RedisConnections.of(server.process().jvmPid())).as("the application holds Redis connections").isPositive();
        assertThat(server.jmx().loadedCopies("dev.sluice.RateLimitFilter")).as("the filter's class is seen loaded").isPositive();
        server.undeploy("cycle");
    }

    /** Thread names with their numbers blanked: a pool's threads are one kind. */
    /**
     * Container pools that start threads on demand for the container's own work, a deployment's
     * services among it, and keep them a while: WildFly's MSC pool grew from 15 to 18 across the
     * cycles once while the machine was loaded (the total stayed at or below its baseline). A thread
     * an application leaks is not one of these (it runs the application's code, under its own name:
     * {@code sluice-*}, commons-pool's evictor, Jedis's listeners).
     */
    private static final java.util.Set<String> GROWS_ON_DEMAND = java.util.Set.of("ServerService Thread Pool -- #");

    private static Map<String, Long> kinds(List<String> names) {
        return names.stream().collect(java.util.stream.Collectors.groupingBy(n -> n.replaceAll("[0-9]+", "#"),
                java.util.stream.Collectors.counting()));
    }

    private static String diff(List<String> before, List<String> now) {
        List<String> added = new ArrayList<>(now);
        before.forEach(added::remove);
        return "new " + added;
    }
}
