package dev.sluice;

import dev.sluice.config.ConfigLoader;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.metrics.SluiceMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reloader's checks one by one: what it reads, when it acts on a new content, and that it
 * stops. The filter's reloads end to end are in {@link RateLimitFilterReloadTest} and {@code src-it}.
 */
class ConfigReloaderTest {

    private static final String RUNNING = "rules = api\nbackend = local\nrule.api.limit = 3\nrule.api.window = 1h\n";

    @TempDir
    Path dir;
    private final List<SluiceConfig> applied = new CopyOnWriteArrayList<>();
    private final SluiceMetrics metrics = new SluiceMetrics();
    private ConfigReloader reloader;

    @AfterEach
    void stop() {
        if (reloader != null) reloader.close();
    }

    /** A reloader as the filter makes one, started on the file's present content. */
    private ConfigReloader startedOn(String config, ClassLoader loader, Duration confirmAfter) {
        Map<String, String> params = Map.of("config", config);
        ConfigLoader.FileContent loaded = ConfigLoader.read(params, loader);
        reloader = new ConfigReloader("shop/sluice", loaded.fingerprint(), params, loader, next -> {
            applied.add(next);
            return "changed";
        }, metrics, confirmAfter);
        return reloader;
    }

    private Path file(String content) throws IOException {
        Path file = dir.resolve("ratelimit.properties");
        Files.writeString(file, content);
        return file;
    }

    /** As a careful operator does: written elsewhere, then renamed over the file. */
    private static void replace(Path file, String content) throws IOException {
        Path tmp = Files.createTempFile(file.getParent(), "new-", ".tmp");
        Files.writeString(tmp, content);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    @Test
    void aFileRewrittenInPlaceInTwoStepsIsAppliedOnlyOnceComplete() throws IOException {
        Path file = file(RUNNING);
        startedOn("file:" + file, null, Duration.ofMillis(10));
        String next = RUNNING + "trusted-proxies = 10.0.0.0/16\n";
        int cut = next.indexOf("/16") + 2;
        String firstStep = next.substring(0, cut);
        assertThat(ConfigLoader.load(Map.of("rules", "api", "rule.api.limit", "3", "rule.api.window", "1h",
                "trusted-proxies", "10.0.0.0/1")).trustedProxies().contains(InetAddress.getByName("100.1.2.3")))
                .as("what the first step leaves is valid, and trusts half of IPv4").isTrue();

        Files.writeString(file, firstStep); // in place: truncated, then written
        assertThat(reloader.check().waiting()).as("a new content, read once").isTrue();
        Files.writeString(file, next.substring(cut), StandardOpenOption.APPEND); // the writer's second step
        assertThat(reloader.check().waiting()).as("changed again since the last check: read once").isTrue();
        assertThat(reloader.check().outcome()).as("read twice alike").startsWith("applied");

        assertThat(applied).as("never the half-written file").singleElement()
                .satisfies(c -> assertThat(c.source()).containsEntry("trusted-proxies", "10.0.0.0/16"));
        assertThat(reloader.check().outcome()).startsWith("unchanged");
    }

    @Test
    void aBrokenFileIsReportedOnceItIsReadTwiceAndOnlyOnce() throws IOException {
        Path file = file(RUNNING);
        startedOn("file:" + file, null, Duration.ofMillis(10));
        replace(file, RUNNING.replace("limit = 3", "limit = three"));

        assertThat(reloader.check().waiting()).isTrue();
        assertThat(reloader.check().outcome()).startsWith("refused").contains("rule.api.limit='three'");
        assertThat(reloader.check().outcome()).startsWith("unchanged");
        assertThat(metrics.view().getReloadFailures()).isEqualTo(1);
        assertThat(applied).isEmpty();
    }

    @Test
    void aFileChangedBackBeforeTheSecondReadIsNoChange() throws IOException {
        Path file = file(RUNNING);
        startedOn("file:" + file, null, Duration.ofMillis(10));
        replace(file, RUNNING.replace("limit = 3", "limit = 30"));
        assertThat(reloader.check().waiting()).isTrue();
        replace(file, RUNNING);
        assertThat(reloader.check().outcome()).startsWith("unchanged");
        assertThat(applied).isEmpty();
    }

    @Test
    void theJmxOperationReadsTwiceAndAppliesAtOnce() throws IOException {
        Path file = file(RUNNING);
        startedOn("file:" + file, null, Duration.ofMillis(10));
        replace(file, RUNNING.replace("limit = 3", "limit = 5"));
        assertThat(reloader.reloadNow()).isEqualTo("applied: changed");
        assertThat(applied).singleElement().satisfies(c -> assertThat(c.rule("api").rule().limit()).isEqualTo(5));
        assertThat(reloader.reloadNow()).startsWith("unchanged");
    }

    @Test
    @Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void closeWaitsForACheckInProgress() throws Exception {
        Path file = file(RUNNING);
        CountDownLatch applying = new CountDownLatch(1);
        Map<String, String> params = Map.of("config", "file:" + file);
        reloader = new ConfigReloader("shop/sluice", ConfigLoader.read(params, null).fingerprint(), params, null,
                next -> {
                    applying.countDown();
                    try {
                        Thread.sleep(Long.MAX_VALUE); // until close() interrupts it
                    } catch (InterruptedException stopping) {
                        Thread.currentThread().interrupt();
                    }
                    return "changed";
                }, metrics, Duration.ofMillis(10));
        reloader.start(Duration.ofMillis(100));
        replace(file, RUNNING.replace("limit = 3", "limit = 4"));
        assertThat(applying.await(10, TimeUnit.SECONDS)).as("the watcher applies the change").isTrue();
        Thread watcher = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("sluice-reload-shop/sluice")).findFirst().orElseThrow();

        reloader.close();
        assertThat(watcher.isAlive()).as("the reload thread ended before close() returned").isFalse();
    }
}
