package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two web applications on one server, each with a filter named {@code sluice}: every line of their
 * logs and every thread they start says whose it is (the JMX instance name: context path and
 * filter name), and the start-up line reads as the configuration was written.
 */
class RateLimitFilterLogLinesTest {

    @TempDir
    Path dir;
    private final List<RateLimitFilter> filters = new ArrayList<>();

    @AfterEach
    void stop() {
        filters.forEach(RateLimitFilter::destroy);
    }

    private RateLimitFilter start(String contextPath, Path file) throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("sluice", contextPath, FakeServlet.params("config", "file:" + file)));
        filters.add(filter);
        return filter;
    }

    private Path file(String name, String content) throws Exception {
        Path file = dir.resolve(name);
        Files.writeString(file, content);
        return file;
    }

    @Test
    void twoApplicationsLinesAndThreadsSayWhoseTheyAre() throws Exception {
        Path shopFile = file("shop.properties", "rules = api\nbackend = local\nreload = 2s\nrule.api.limit = 5\n"
                + "rule.api.window = 1m\n");
        Path adminFile = file("admin.properties", "rules = api, login\nbackend = local\nrule.api.limit = 5\n"
                + "rule.api.window = 1m\nrule.login.limit = 3\nrule.login.window = 1m\nrule.login.mode = dry-run\n");

        String startUp = StandardError.capture(() -> {
            try {
                start("/shop", shopFile);
                start("/admin", adminFile);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        assertThat(startUp).contains("INFO dev.sluice.RateLimitFilter - Sluice [shop/sluice] started: 1 rule (api),"
                + " backend=local: limits are per instance; config file " + shopFile + ", checked for changes every 2s\n");
        assertThat(startUp).contains("INFO dev.sluice.RateLimitFilter - Sluice [admin/sluice] started: 2 rules (api,"
                + " login (dry-run)), backend=local: limits are per instance; config file " + adminFile + "\n");
        assertThat(startUp.lines().filter(l -> l.contains("dev.sluice")))
                .as("one start-up line each, and each says whose").hasSize(2)
                .allMatch(l -> l.contains("Sluice [shop/sluice]") || l.contains("Sluice [admin/sluice]"));
        assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                .contains("sluice-reload-shop/sluice").doesNotContain("sluice-reload-admin/sluice", "sluice-reload-sluice");

        Files.writeString(adminFile, Files.readString(adminFile).replace("rule.login.limit = 3", "rule.login.limit = 4"));
        String reloaded = StandardError.capture(() -> filters.get(1).reload());
        assertThat(reloaded).contains("INFO dev.sluice.ConfigReloader - Sluice [admin/sluice]: configuration reloaded;"
                + " rule.login.limit: 3 -> 4");
    }

    /**
     * WildFly's class loader serves {@code WEB-INF/classes} from its virtual file system
     * ({@code vfs:/content/shop.war/...}); the file behind it, the one to edit, is what
     * {@code ServletContext.getRealPath} gives, and reloads read the content through the URL.
     */
    @Test
    void aFileBehindAVirtualFileSystemIsNamedByItsRealPathAndReloaded() throws Exception {
        Path real = file("ratelimit.properties", "rules = api\nbackend = local\nrule.api.limit = 5\n"
                + "rule.api.window = 1m\n");
        URLStreamHandler vfs = new URLStreamHandler() {
            @Override
            protected URLConnection openConnection(URL url) throws IOException {
                return real.toUri().toURL().openConnection();
            }
        };
        URL virtual = new URL(null, "vfs:/content/shop.war/WEB-INF/classes/ratelimit.properties", vfs);
        ClassLoader wildFly = new ClassLoader(null) {
            @Override
            protected URL findResource(String name) {
                return name.equals("ratelimit.properties") ? virtual : null;
            }
        };
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        thread.setContextClassLoader(wildFly);
        String startUp;
        try {
            startUp = StandardError.capture(() -> {
                RateLimitFilter filter = new RateLimitFilter();
                try {
                    filter.init(FakeServlet.filterConfig("sluice", "/shop",
                            path -> path.equals("/WEB-INF/classes/ratelimit.properties") ? real.toString() : null,
                            FakeServlet.params("config", "classpath:/ratelimit.properties")));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                filters.add(filter);
            });
        } finally {
            thread.setContextClassLoader(before);
        }
        assertThat(startUp).contains("Sluice [shop/sluice] started: 1 rule (api), backend=local: limits are per"
                + " instance; config file " + real + "\n");

        Files.writeString(real, Files.readString(real).replace("limit = 5", "limit = 6"));
        assertThat(filters.get(0).reload()).isEqualTo("applied: rule.api.limit: 5 -> 6");
    }

    @Test
    void theRootApplicationsLinesCarryTheFilterName() throws Exception {
        Path file = file("root.properties", "rules = api\nbackend = local\nrule.api.limit = 5\nrule.api.window = 1m\n");
        String startUp = StandardError.capture(() -> {
            try {
                start("", file);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(startUp).contains("Sluice [sluice] started: 1 rule (api)");
    }
}
