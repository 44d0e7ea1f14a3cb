package dev.sluice.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * The example WAR under test ({@code examples/target/sluice-examples.war}, path in the system
 * property {@code sluice.war}), as is or with init-params added to its {@code sluice} filter in
 * {@code WEB-INF/web.xml}: what a user who configures the filter in {@code web.xml} ships.
 * Init-params win over {@code ratelimit.properties}.
 */
final class ExampleWar {

    private static final AtomicInteger VARIANTS = new AtomicInteger();

    private ExampleWar() {
    }

    static Path path() {
        Path war = Path.of(System.getProperty("sluice.war", "../examples/target/sluice-examples.war"));
        if (!Files.isRegularFile(war)) {
            throw new IllegalStateException("example WAR not found at " + war.toAbsolutePath()
                    + ": run the tests through Maven (mvn verify) so the WAR is built first");
        }
        return war;
    }

    /** A copy of the example WAR whose filter has {@code initParams} besides its {@code config}. */
    static Path withInitParams(Map<String, String> initParams) {
        StringBuilder params = new StringBuilder();
        initParams.forEach((k, v) -> params.append("    <init-param><param-name>").append(escape(k))
                .append("</param-name><param-value>").append(escape(v)).append("</param-value></init-param>\n"));
        try {
            Path dir = Files.createDirectories(Server.serversDir().resolve("wars"));
            Path out = dir.resolve("variant-" + VARIANTS.incrementAndGet() + ".war");
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
                        zip.write((xml.substring(0, end) + params + xml.substring(end)).getBytes(StandardCharsets.UTF_8));
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

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
