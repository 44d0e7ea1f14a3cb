package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.ConfigLoader;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.metrics.SluiceMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Watches the properties file named by the {@code config} init-param ({@code reload}) and puts a
 * changed, valid file in force; an invalid one (a typo, a half-written file, a missing file, a key
 * that cannot change while running) changes nothing, is logged at ERROR naming the key, and counted.
 *
 * <p>A change is a change of content (a fingerprint of the bytes), so a file replaced by a rename
 * counts once, and an invalid content is reported once, not at every check. One daemon thread per
 * filter checks every {@code reload}; {@link #reloadNow()} (the JMX operation) checks at once.
 */
final class ConfigReloader implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ConfigReloader.class);

    private final String filterName;
    private final Map<String, String> initParams;
    private final ClassLoader loader;
    private final Function<SluiceConfig, String> apply;
    private final SluiceMetrics metrics;
    private ScheduledExecutorService timer;
    /** The fingerprint of the content last acted on (applied, or reported as invalid); guarded by this. */
    private String lastSeen;

    /**
     * @param apply puts a configuration in force and says what changed; throws {@link ConfigException}
     *              when it refuses (a key that cannot change while running)
     */
    ConfigReloader(String filterName, Map<String, String> initParams, ClassLoader loader,
                   Function<SluiceConfig, String> apply, SluiceMetrics metrics) {
        this.filterName = filterName;
        this.initParams = initParams;
        this.loader = loader;
        this.apply = apply;
        this.metrics = metrics;
        ConfigLoader.FileContent now = ConfigLoader.reread(initParams, loader);
        this.lastSeen = now == null ? null : now.fingerprint();
    }

    /** Checks the file every {@code interval}; zero: never (the JMX operation still works). */
    synchronized void start(Duration interval) {
        if (interval.isZero() || lastSeen == null) return;
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sluice-reload-" + filterName);
            t.setDaemon(true);
            return t;
        });
        long ms = interval.toMillis();
        timer.scheduleWithFixedDelay(this::check, ms, ms, TimeUnit.MILLISECONDS);
    }

    private void check() {
        try {
            reload(false);
        } catch (RuntimeException unexpected) {
            log.error("Sluice filter '{}': checking the configuration file failed", filterName, unexpected);
        }
    }

    /** Reads the file now and applies it if it changed; returns the outcome (the JMX operation). */
    String reloadNow() {
        return reload(true);
    }

    private synchronized String reload(boolean onDemand) {
        ConfigLoader.FileContent content = ConfigLoader.reread(initParams, loader);
        if (content == null) {
            return "nothing to reload: the filter has no " + RateLimitFilter.CONFIG_PARAM + " init-param";
        }
        if (content.fingerprint().equals(lastSeen)) {
            return onDemand ? "unchanged: the file's content is what was last read" : null;
        }
        lastSeen = content.fingerprint();
        if (content.problem() != null) {
            return refused(content.problem());
        }
        try {
            String changes = apply.apply(content.config());
            String outcome = "applied: " + changes;
            metrics.recordReload(true, outcome);
            log.info("Sluice filter '{}': configuration reloaded; {}", filterName, changes);
            return outcome;
        } catch (ConfigException refused) {
            return refused(refused);
        } catch (RuntimeException failed) {
            return refused(new ConfigException(RateLimitFilter.CONFIG_PARAM, initParams.get(RateLimitFilter.CONFIG_PARAM),
                    "the new configuration could not be put in force: " + failed.getMessage(), failed));
        }
    }

    private String refused(ConfigException problem) {
        String outcome = "refused, the running configuration stays in force: " + problem.getMessage();
        metrics.recordReload(false, outcome);
        log.error("Sluice filter '{}': configuration not reloaded, the running one stays in force: {}", filterName,
                problem.getMessage());
        return outcome;
    }

    @Override
    public synchronized void close() {
        if (timer != null) timer.shutdownNow();
    }
}
