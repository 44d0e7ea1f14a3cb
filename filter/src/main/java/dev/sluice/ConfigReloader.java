package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.ConfigLoader;
import dev.sluice.config.Durations;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.metrics.SluiceMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Watches the properties file named by the {@code config} init-param ({@code reload}) and puts a
 * changed, valid file in force; an invalid one (a typo, a missing file, a key that cannot change
 * while running) changes nothing, is logged at ERROR naming the key, and counted.
 *
 * <p>A change is a change of content (a fingerprint of the bytes), so a file replaced by a rename
 * counts once, and an invalid content is reported once, not at every check. A new content is acted
 * on only when two consecutive checks read it: a file caught while it is being written in place
 * (a valid prefix of it, say {@code trusted-proxies = 10.0.0.0/1} of {@code /16}) is never applied.
 * The check after one that read a new content comes {@link #CONFIRM_AFTER} later (or after
 * {@code reload}, if shorter), so a change takes effect within {@code reload} and a second.
 *
 * <p>One daemon thread per filter checks every {@code reload}; {@link #reloadNow()} (the JMX
 * operation) checks at once, and again after the confirming pause if it read a new content.
 */
final class ConfigReloader implements AutoCloseable {

    /** The longest pause between the check that reads a new content and the one that confirms it. */
    static final Duration CONFIRM_AFTER = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(ConfigReloader.class);

    private final String instance;
    private final Map<String, String> initParams;
    private final ClassLoader loader;
    private final Function<SluiceConfig, String> apply;
    private final SluiceMetrics metrics;
    private final Duration confirmAfter;
    private volatile ScheduledExecutorService timer;
    /** The timer's one thread, once it has one: {@link #close()} waits for it to end. */
    private volatile Thread thread;
    private volatile boolean closed;
    /** The fingerprint of the content last acted on (started with, applied, or reported invalid); guarded by this. */
    private String acted;
    /** A content that differs from {@link #acted}, read by the last check and waiting for the next to read it too; guarded by this. */
    private String readOnce;

    /**
     * @param instance  the filter's JMX instance name, for the log and the thread's name
     * @param startedOn the fingerprint of the content the running configuration was parsed from, or
     *                  {@code null} without a {@code config} file (there is nothing to watch)
     * @param apply     puts a configuration in force and says what changed; throws {@link ConfigException}
     *                  when it refuses (a key that cannot change while running)
     */
    ConfigReloader(String instance, String startedOn, Map<String, String> initParams, ClassLoader loader,
                   Function<SluiceConfig, String> apply, SluiceMetrics metrics) {
        this(instance, startedOn, initParams, loader, apply, metrics, CONFIRM_AFTER);
    }

    /** For tests: with another confirming pause. */
    ConfigReloader(String instance, String startedOn, Map<String, String> initParams, ClassLoader loader,
                   Function<SluiceConfig, String> apply, SluiceMetrics metrics, Duration confirmAfter) {
        this.instance = instance;
        this.acted = startedOn;
        this.initParams = initParams;
        this.loader = loader;
        this.apply = apply;
        this.metrics = metrics;
        this.confirmAfter = confirmAfter;
    }

    /** Checks the file every {@code interval}; zero: never (the JMX operation still works). Called once. */
    void start(Duration interval) {
        synchronized (this) {
            if (interval.isZero() || acted == null) return;
        }
        Duration confirm = interval.compareTo(confirmAfter) < 0 ? interval : confirmAfter;
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sluice-reload-" + instance);
            t.setDaemon(true);
            thread = t;
            return t;
        });
        schedule(interval, interval, confirm);
    }

    private void schedule(Duration after, Duration interval, Duration confirm) {
        if (closed) return;
        try {
            timer.schedule(() -> {
                boolean confirming = false;
                try {
                    confirming = check().waiting();
                } catch (RuntimeException unexpected) {
                    log.error("Sluice [{}]: checking the configuration file failed", instance, unexpected);
                } finally {
                    schedule(confirming ? confirm : interval, interval, confirm);
                }
            }, after.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closing) {
            // close() shut the timer down: no more checks
        }
    }

    /**
     * Reads the file now and applies it if it changed (the JMX operation): a new content is read a
     * second time after the confirming pause, and applied only if it is still the same.
     */
    String reloadNow() {
        synchronized (this) {
            Check first = check();
            if (!first.waiting()) return first.outcome();
            try {
                Thread.sleep(confirmAfter.toMillis()); // holding the lock: the periodic check waits, it cannot take the content meanwhile
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "interrupted before the file could be read a second time; nothing changed";
            }
            Check second = check();
            if (!second.waiting()) return second.outcome();
            return "not applied: the file's content changed between two reads " + Durations.format(confirmAfter)
                    + " apart (is it being written?); the running configuration stays in force: call reload()"
                    + " again once the file is complete";
        }
    }

    /**
     * What one check found: an outcome for the JMX operation, or ({@code waiting}) a new content that
     * the next check must read too before it is acted on.
     */
    record Check(String outcome, boolean waiting) {
    }

    /** One check: reads the file and acts on a new content if the previous check read it too. */
    synchronized Check check() {
        ConfigLoader.FileContent content = ConfigLoader.reread(initParams, loader);
        // close() interrupts a read in progress: what it read then is no content to act on
        if (closed) return new Check("not reloaded: the filter is stopping", false);
        if (content == null) {
            return new Check("nothing to reload: the filter has no " + RateLimitFilter.CONFIG_PARAM + " init-param", false);
        }
        String read = content.fingerprint();
        if (read.equals(acted)) {
            readOnce = null;
            return new Check("unchanged: the file's content is what was last read", false);
        }
        if (!read.equals(readOnce)) {
            readOnce = read;
            return new Check(null, true);
        }
        readOnce = null;
        acted = read;
        if (content.problem() != null) {
            return new Check(refused(content.problem()), false);
        }
        try {
            String changes = apply.apply(content.config());
            String outcome = "applied: " + changes;
            metrics.recordReload(true, outcome);
            log.info("Sluice [{}]: configuration reloaded; {}", instance, changes);
            return new Check(outcome, false);
        } catch (ConfigException refused) {
            return new Check(refused(refused), false);
        } catch (RuntimeException failed) {
            return new Check(refused(new ConfigException(RateLimitFilter.CONFIG_PARAM,
                    initParams.get(RateLimitFilter.CONFIG_PARAM),
                    "the new configuration could not be put in force: " + failed.getMessage(), failed)), false);
        }
    }

    private String refused(ConfigException problem) {
        String outcome = "refused, the running configuration stays in force: " + problem.getMessage();
        metrics.recordReload(false, outcome);
        log.error("Sluice [{}]: configuration not reloaded, the running one stays in force: {}", instance,
                problem.getMessage());
        return outcome;
    }

    /** Stops the checks and waits (at most a second) for one in progress, so no thread of the application outlives it. */
    @Override
    public void close() {
        closed = true;
        ScheduledExecutorService t = timer;
        if (t == null) return;
        t.shutdownNow();
        Thread checking = thread;
        if (checking == null) return;
        try {
            // gone before the container looks for threads the application left running (Tomcat does)
            checking.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
