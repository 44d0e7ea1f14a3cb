package dev.sluice.it.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * The example WAR under test ({@code examples/target/sluice-examples.war}, path in the system
 * property {@code sluice.war} that failsafe sets), as is or with init-params added to its
 * {@code sluice} filter in {@code WEB-INF/web.xml}. Init-params win over the WAR's
 * {@code ratelimit.properties}.
 */
public final class ExampleWar {

    /** The system property naming the WAR under test (failsafe sets it). */
    public static final String PROPERTY = "sluice.war";

    private static final AtomicInteger VARIANTS = new AtomicInteger();

    private ExampleWar() {
    }

    /** The path of the WAR under test. */
    public static Path path() {
        Path war = Path.of(System.getProperty(PROPERTY, "../examples/target/sluice-examples.war"));
        if (!Files.isRegularFile(war)) {
            throw new IllegalStateException("example WAR not found at " + war.toAbsolutePath()
                    + ": run the integration tests through Maven (mvn verify) so the WAR is built first");
        }
        return war;
    }

    /**
     * A copy of the example WAR in {@code dir} whose filter has {@code initParams} besides its
     * {@code config}: what a user who configures the filter in {@code web.xml} ships.
     */
    public static Path withInitParams(Map<String, String> initParams, Path dir) {
        return variant(initParams, null, dir);
    }

    /** A copy of the example WAR in {@code dir} for {@code app}: its Sluice keys as init-params, its filter mapping. */
    public static Path of(ExampleApp app, Path dir) {
        return variant(app.sluice(), app.dispatchers(), dir);
    }

    /**
     * A copy of the example WAR in {@code dir} whose {@code sluice} filter has {@code initParams}
     * besides its {@code config} and, unless {@code dispatchers} is null, a mapping that lists only
     * those dispatcher types (none: the {@code web.xml} default, REQUEST only).
     */
    public static Path variant(Map<String, String> initParams, List<String> dispatchers, Path dir) {
        StringBuilder params = new StringBuilder();
        initParams.forEach((k, v) -> params.append("    <init-param><param-name>").append(escape(k))
                .append("</param-name><param-value>").append(escape(v)).append("</param-value></init-param>\n"));
        try {
            Path out = Files.createDirectories(dir).resolve("variant-" + VARIANTS.incrementAndGet() + ".war");
            try (ZipInputStream in = new ZipInputStream(Files.newInputStream(path()));
                 ZipOutputStream zip = new ZipOutputStream(Files.newOutputStream(out))) {
                boolean edited = false;
                for (ZipEntry e; (e = in.getNextEntry()) != null; ) {
                    zip.putNextEntry(new ZipEntry(e.getName()));
                    if (e.getName().equals("WEB-INF/web.xml")) {
                        String xml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                        int sluice = xml.indexOf("<filter-name>sluice</filter-name>");
                        int end = sluice < 0 ? -1 : xml.indexOf("  </filter>", sluice);
                        if (end < 0) throw new IllegalStateException("the example web.xml declares no filter 'sluice'");
                        xml = xml.substring(0, end) + params + xml.substring(end);
                        if (dispatchers != null) xml = mappedFor(xml, dispatchers);
                        zip.write(xml.getBytes(StandardCharsets.UTF_8));
                        edited = true;
                    } else {
                        in.transferTo(zip);
                    }
                    zip.closeEntry();
                }
                if (!edited) throw new IllegalStateException("the example WAR has no WEB-INF/web.xml");
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code xml} with the {@code sluice} filter-mapping's dispatcher types replaced by {@code dispatchers}. */
    private static String mappedFor(String xml, List<String> dispatchers) {
        Matcher mapping = Pattern.compile("<filter-mapping>\\s*<filter-name>sluice</filter-name>.*?</filter-mapping>",
                Pattern.DOTALL).matcher(xml);
        if (!mapping.find()) throw new IllegalStateException("the example web.xml maps no filter 'sluice'");
        StringBuilder types = new StringBuilder();
        for (String d : dispatchers) types.append("<dispatcher>").append(d).append("</dispatcher>");
        String edited = mapping.group().replaceAll("(?s)<!--.*?-->", "").replaceAll("\\s*<dispatcher>[A-Z]+</dispatcher>", "")
                .replace("</filter-mapping>", types + "</filter-mapping>");
        return xml.substring(0, mapping.start()) + edited + xml.substring(mapping.end());
    }

    /** {@code s} as XML character data. */
    public static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    /** Removes a directory (a container's unpacked WAR, a test's files) and everything in it. */
    public static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
