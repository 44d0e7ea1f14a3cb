package dev.sluice.dist;

import dev.sluice.testing.Poll;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's Quick start, followed literally: its snippets, read from README.md (so they cannot
 * drift), make a WAR of a project of its own, built by Maven against the library as installed in a
 * local repository (a private one under {@code target/}, never the shared {@code ~/.m2}), deployed
 * in a fresh Apache Tomcat 11; what the Quick start says the user sees is what the test sees: the
 * start-up line it quotes, and its loop's answers. The test's own part is the project's
 * {@code pom.xml} around the README's dependencies (a WAR project with plugin versions pinned, as
 * Maven resolves them here from the build's own local repository, without a network).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QuickStartDistIT {

    private static final Pattern BLOCK = Pattern.compile("```(\\w*)\\n(.*?)```", Pattern.DOTALL);

    private final Path dir = Server.freshDir(Server.serversDir().resolve("quickstart"));
    private TomcatServer tomcat;

    @AfterAll
    void stop() {
        if (tomcat != null) tomcat.close();
    }

    @Test
    void theQuickStartAsWrittenResolvesDeploysAndLimits() throws Exception {
        String quickStart = section(Files.readString(Server.fileProperty("sluice.readme")), "## Quick start\n");
        List<String[]> blocks = new ArrayList<>();
        for (Matcher m = BLOCK.matcher(quickStart); m.find(); ) blocks.add(new String[]{m.group(1), m.group(2)});
        String dependencies = block(blocks, "xml", "<dependency>");
        String filter = block(blocks, "xml", "<filter>");
        String properties = block(blocks, "properties", "rules");
        String startUpLine = block(blocks, "", "started: ").trim();
        String loop = block(blocks, "sh", "for i in");
        assertThat(dependencies).as("the Quick start's version is the project's")
                .contains("<version>" + System.getProperty("sluice.version") + "</version>");

        Path repository = installLibrary();
        Path war = buildWar(dependencies, filter, properties, repository);

        tomcat = TomcatServer.create("quickstart-tomcat", Server.dirProperty("dist.tomcat11.home"),
                Map.of("REDIS_URL", TestRedis.url()));
        Files.copy(war, tomcat.deployDir().resolve("shop.war"));
        tomcat.start(); // as a newcomer does: the WAR in webapps/, then Tomcat
        String expected = startUpLine.replace("redis://localhost:6379/0", TestRedis.url() + "/0")
                .replace("/opt/tomcat/webapps/", tomcat.deployDir() + "/");
        Poll.until(Duration.ofSeconds(30), "the Quick start's start-up line in catalina.out",
                () -> tomcat.console().contains(expected));

        Matcher answer = Pattern.compile("(?m)^# ((?:\\d{3} )+)").matcher(loop);
        assertThat(answer.find()).as("the loop's expected answers, in its comment: %s", loop).isTrue();
        String command = loop.lines().filter(l -> l.startsWith("for ")).findFirst().orElseThrow()
                .replace("http://localhost:8080/", "http://127.0.0.1:" + tomcat.httpPort() + "/");
        // The loop's login rule is a fixed window of a minute on Redis's clock: six POSTs across a
        // minute's end are five in one window and one in the next, all six passed (a CI run at
        // 16:41:59 to 16:42:00). Start them with 10 s or more of Redis's minute left, as the README's
        // note after the loop tells a user to run it again.
        WindowRoom.awaitOnRedis(Duration.ofMinutes(1), Duration.ofSeconds(10));
        assertThat(sh(command).trim()).as(command).isEqualTo(answer.group(1).trim());
        assertThat(tomcat.catalinaLog()).doesNotContain("SEVERE");
        DistributionContract.assertQuiet(tomcat, tomcat.mainLog(), "shop/sluice");
    }

    /**
     * The library as {@code mvn -pl filter -am install} puts it in a local repository: the parent
     * POM, the filter's POM and jar of this build, in a repository of this test's own.
     */
    private Path installLibrary() throws IOException {
        String version = System.getProperty("sluice.version");
        Path repository = Files.createDirectories(dir.resolve("repository"));
        Path root = Server.fileProperty("sluice.readme").getParent();
        install(root.resolve("pom.xml"), repository, "sluice-parent", version, "pom");
        install(root.resolve("filter/pom.xml"), repository, "sluice-filter", version, "pom");
        install(Server.fileProperty("sluice.filter.jar"), repository, "sluice-filter", version, "jar");
        return repository;
    }

    private static void install(Path file, Path repository, String artifact, String version, String extension)
            throws IOException {
        Path target = Files.createDirectories(repository.resolve("dev/sluice/" + artifact + "/" + version))
                .resolve(artifact + "-" + version + "." + extension);
        Files.copy(file, target, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * {@code mvn package} of a WAR project made of the README's snippets, resolving the library from
     * {@code repository} and everything else from the build's own local repository as a mirror.
     */
    private Path buildWar(String dependencies, String filter, String properties, Path repository) throws Exception {
        Path project = Files.createDirectories(dir.resolve("shop"));
        Files.writeString(project.resolve("pom.xml"), """
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>com.example</groupId>
                  <artifactId>shop</artifactId>
                  <version>1.0</version>
                  <packaging>war</packaging>
                  <properties>
                    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
                  </properties>
                  <dependencies>
                %s  </dependencies>
                  <build>
                    <finalName>shop</finalName>
                    <plugins>
                %s    </plugins>
                  </build>
                </project>
                """.formatted(dependencies, plugins()));
        Path webInf = Files.createDirectories(project.resolve("src/main/webapp/WEB-INF"));
        Files.writeString(webInf.resolve("web.xml"), """
                <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
                %s</web-app>
                """.formatted(filter));
        Files.writeString(Files.createDirectories(project.resolve("src/main/resources")).resolve("ratelimit.properties"),
                properties);
        Path settings = dir.resolve("settings.xml");
        Files.writeString(settings, """
                <settings>
                  <mirrors>
                    <mirror>
                      <id>the-build-s-own-local-repository</id>
                      <mirrorOf>*</mirrorOf>
                      <url>%s</url>
                    </mirror>
                  </mirrors>
                </settings>
                """.formatted(Path.of(System.getProperty("maven.repo.outer")).toUri()));
        Path mvn = Path.of(System.getProperty("maven.home"), "bin", "mvn");
        Process p = new ProcessBuilder(mvn.toString(), "-B", "-ntp", "-s", settings.toString(),
                "-Dmaven.repo.local=" + repository, "package")
                .directory(project.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("mvn.out").toFile()).start();
        assertThat(p.waitFor(5, TimeUnit.MINUTES)).as("mvn package ends").isTrue();
        assertThat(p.exitValue()).as("mvn package of the Quick start's WAR:\n%s",
                Server.tail(Files.readString(dir.resolve("mvn.out")))).isZero();
        return project.resolve("target/shop.war");
    }

    /** The build's plugins at the versions the project uses: what Maven resolves here without a network. */
    private static String plugins() {
        StringBuilder xml = new StringBuilder();
        for (String plugin : List.of("resources", "compiler", "surefire", "war")) {
            xml.append("      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-").append(plugin)
                    .append("-plugin</artifactId><version>").append(System.getProperty(plugin + "-plugin.version"))
                    .append("</version></plugin>\n");
        }
        return xml.toString();
    }

    private static String section(String readme, String heading) {
        int start = readme.indexOf(heading);
        assertThat(start).as("README.md has %s", heading.trim()).isNotNegative();
        int end = readme.indexOf("\n## ", start + heading.length());
        return readme.substring(start, end < 0 ? readme.length() : end);
    }

    private static String block(List<String[]> blocks, String language, String containing) {
        return blocks.stream().filter(b -> b[0].equals(language) && b[1].contains(containing)).map(b -> b[1])
                .findFirst().orElseThrow(() -> new AssertionError("the Quick start has no ```" + language
                        + " block with " + containing));
    }

    private static String sh(String line) throws Exception {
        Process p = new ProcessBuilder("sh", "-c", line).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(line).isTrue();
        return out;
    }
}
