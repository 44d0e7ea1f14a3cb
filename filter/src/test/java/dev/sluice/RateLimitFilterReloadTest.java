package dev.sluice;

import dev.sluice.key.KeySource;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.Poll;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** Live configuration through the filter's config file (backend=local; the HTTP fleet tests are in src-it). */
class RateLimitFilterReloadTest {

    @TempDir
    Path dir;
    private RateLimitFilter filter;

    @AfterEach
    void stop() {
        if (filter != null) filter.destroy();
    }

    private Path file(String limit) throws Exception {
        Path file = dir.resolve("ratelimit.properties");
        write(file, "rules = api\nbackend = local\nrule.api.algorithm = fixed-window\nrule.api.limit = " + limit
                + "\nrule.api.window = 1h\n");
        return file;
    }

    /** As a careful operator (or a config-management tool) does: write elsewhere, then rename over it. */
    private static void write(Path file, String content) throws Exception {
        Path tmp = Files.createTempFile(file.getParent(), "new-", ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private void start(Path file, String... extra) throws Exception {
        String[] params = new String[extra.length + 2];
        params[0] = "config";
        params[1] = "file:" + file;
        System.arraycopy(extra, 0, params, 2, extra.length);
        filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY)); // no hour of the rule's fixed window ends during a test
        filter.init(FakeServlet.filterConfig("reload", FakeServlet.params(params)));
    }

    private long admitted(int requests) throws Exception {
        CountingChain chain = new CountingChain();
        for (int i = 0; i < requests; i++) {
            filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
        }
        return chain.passed;
    }

    @Test
    void aRaisedLimitAppliesWithoutRestartAndTheClientsCountIsKept() throws Exception {
        Path file = file("3");
        start(file);
        assertThat(admitted(2)).isEqualTo(2);

        write(file, Files.readString(file).replace("limit = 3", "limit = 5"));
        assertThat(filter.reload()).startsWith("applied").contains("rule.api.limit: 3 -> 5");

        assertThat(admitted(5)).as("5 in all, 2 of them before the reload").isEqualTo(3);
        assertThat(filter.sluice().metrics().getReloads()).isEqualTo(1);
    }

    @Test
    void aBrokenFileChangesNothingIsNamedInTheOutcomeAndIsReportedOncePerContent() throws Exception {
        Path file = file("3");
        start(file);
        write(file, Files.readString(file).replace("limit = 3", "limit = three"));

        String outcome = filter.reload();
        assertThat(outcome).startsWith("refused").contains("rule.api.limit='three'");
        assertThat(filter.reload()).as("the same broken content again").startsWith("unchanged");
        assertThat(filter.sluice().metrics().getReloadFailures()).isEqualTo(1);
        assertThat(filter.sluice().metrics().getLastReloadOutcome()).isEqualTo(outcome);
        assertThat(admitted(4)).as("the running limit, 3, still in force").isEqualTo(3);
    }

    @Test
    void aHalfWrittenFileIsRefusedAndTheCompletedOneApplied() throws Exception {
        Path file = file("3");
        start(file);
        String whole = Files.readString(file).replace("limit = 3", "limit = 4");
        Files.writeString(file, whole.substring(0, whole.indexOf("rule.api.window"))); // written in place, not yet done
        assertThat(filter.reload()).startsWith("refused").contains("rule.api.window");

        Files.writeString(file, whole);
        assertThat(filter.reload()).startsWith("applied");
        assertThat(admitted(5)).isEqualTo(4);
    }

    @Test
    void aRemovedFileKeepsTheRunningConfiguration() throws Exception {
        Path file = file("3");
        start(file);
        Files.delete(file);
        assertThat(filter.reload()).startsWith("refused").contains("there is no file");
        assertThat(admitted(4)).isEqualTo(3);
    }

    @Test
    void aKeyThatCannotChangeWhileRunningIsRefusedNamingIt() throws Exception {
        Path file = file("3");
        start(file);
        write(file, Files.readString(file).replace("limit = 3", "limit = 9") + "key-prefix = other:\n");
        assertThat(filter.reload()).startsWith("refused").contains("key-prefix").contains("cannot change while running");
        assertThat(admitted(4)).as("never half-applied: the limit change waits too").isEqualTo(3);
    }

    @Test
    void rulesAreAddedAndRemovedLive() throws Exception {
        Path file = file("3");
        start(file);
        write(file, "rules = other\nbackend = local\nrule.other.limit = 1\nrule.other.window = 1h\n");
        assertThat(filter.reload()).startsWith("applied");
        assertThat(admitted(3)).as("only the new rule, 1 an hour").isEqualTo(1);
        assertThat(filter.config().rules()).extracting(r -> r.name()).containsExactly("other");
    }

    @Test
    void initParamsStillOverrideTheReloadedFile() throws Exception {
        Path file = file("3");
        start(file, "rule.api.limit", "2");
        write(file, Files.readString(file).replace("limit = 3", "limit = 50"));
        filter.reload();
        assertThat(admitted(5)).isEqualTo(2);
    }

    /**
     * Tomcat's class loader serves {@code getResourceAsStream} from a resource cache that keeps a
     * resource about five seconds; {@code reload()} must read the file as it is now.
     */
    @Test
    void aClasspathFileIsReadAsItIsNowWhateverTheClassLoaderCaches() throws Exception {
        Path classes = Files.createDirectories(dir.resolve("WEB-INF/classes"));
        Path file = classes.resolve("ratelimit.properties");
        write(file, "rules = api\nbackend = local\nrule.api.algorithm = fixed-window\nrule.api.limit = 3\n"
                + "rule.api.window = 1h\n");
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        thread.setContextClassLoader(new CachingClassLoader(classes)); // the web application's, as init sees it
        try {
            filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY));
            filter.init(FakeServlet.filterConfig("reload", FakeServlet.params("config", "classpath:/ratelimit.properties")));
        } finally {
            thread.setContextClassLoader(before);
        }
        write(file, Files.readString(file).replace("limit = 3", "limit = 5"));
        assertThat(filter.reload()).startsWith("applied").contains("rule.api.limit: 3 -> 5");
        assertThat(admitted(6)).isEqualTo(5);
    }

    /**
     * An edit made while the filter starts (after it read the file, before it is ready) is a change
     * like any other: the content the running configuration came from is the one compared with.
     */
    @Test
    void anEditWhileTheFilterStartsIsNotLost() throws Exception {
        Path file = file("3");
        write(file, Files.readString(file) + "rule.api.key = class:" + EditsTheFileWhenCreated.class.getName() + "|ip\n");
        String edited = Files.readString(file).replace("limit = 3", "limit = 5");
        EditsTheFileWhenCreated.edit.set(() -> write(file, edited));
        start(file);
        assertThat(EditsTheFileWhenCreated.edit.get()).as("the edit was made during init").isNull();
        assertThat(filter.config().rule("api").rule().limit()).as("started with what it read").isEqualTo(3);

        assertThat(filter.reload()).startsWith("applied").contains("rule.api.limit: 3 -> 5");
        assertThat(admitted(6)).isEqualTo(5);
    }

    /** A key source the filter creates during init, after it has read its file: the moment an operator edits it. */
    public static final class EditsTheFileWhenCreated implements KeySource {
        static final AtomicReference<Edit> edit = new AtomicReference<>();

        interface Edit {
            void run() throws Exception;
        }

        public EditsTheFileWhenCreated() throws Exception {
            Edit e = edit.getAndSet(null);
            if (e != null) e.run();
        }

        @Override
        public String resolve(HttpServletRequest request) {
            return null;
        }
    }

    @Test
    void theFileIsCheckedEveryReloadInterval() throws Exception {
        Path file = file("3");
        write(file, Files.readString(file) + "reload = 100ms\n");
        start(file);
        write(file, Files.readString(file).replace("limit = 3", "limit = 6"));
        Poll.until(Duration.ofSeconds(5), "the change applied by the watcher",
                () -> filter.sluice().metrics().getReloads() == 1);
        assertThat(admitted(7)).isEqualTo(6);
    }

    /** A web application class loader that, like Tomcat's, answers {@code getResourceAsStream} from a cache. */
    private static final class CachingClassLoader extends ClassLoader {
        private final Path classes;
        private final Map<String, byte[]> cache = new ConcurrentHashMap<>();

        CachingClassLoader(Path classes) {
            super(null);
            this.classes = classes;
        }

        @Override
        protected URL findResource(String name) {
            Path p = classes.resolve(name);
            try {
                return Files.exists(p) ? p.toUri().toURL() : null;
            } catch (MalformedURLException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public InputStream getResourceAsStream(String name) {
            byte[] bytes = cache.computeIfAbsent(name, n -> {
                try {
                    return Files.readAllBytes(classes.resolve(n));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            return new ByteArrayInputStream(bytes);
        }
    }
}
