package dev.sluice.internal.metrics;

import dev.sluice.config.SluiceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sluice's optional Micrometer integration, the way HikariCP does it: this class names no Micrometer
 * type, and {@link MicrometerMeters}, the only class that does, is loaded only after
 * {@link #onClassPath()} has found Micrometer through Sluice's own class loader (the one that will
 * link it). A web application without Micrometer loads nothing of it and sees no
 * {@code NoClassDefFoundError}.
 */
public final class Micrometer {

    private static final Logger LOG = LoggerFactory.getLogger(Micrometer.class);
    static final String METER_REGISTRY = "io.micrometer.core.instrument.MeterRegistry";

    private Micrometer() {
    }

    /** Whether {@code io.micrometer:micrometer-core} is visible to Sluice's class loader. Loads nothing. */
    public static boolean onClassPath() {
        return meterRegistryClass() != null;
    }

    /**
     * Checks that {@code registry} is a Micrometer {@code MeterRegistry} that Sluice can use.
     *
     * @throws IllegalArgumentException if Micrometer is not visible to Sluice's class loader, or
     *                                  {@code registry} is something else (or another loader's Micrometer)
     */
    public static void requireRegistry(Object registry) {
        Class<?> type = meterRegistryClass();
        if (type == null) {
            throw new IllegalArgumentException("a meter registry was given, but Micrometer (io.micrometer:micrometer-core)"
                    + " is not on Sluice's class path");
        }
        if (!type.isInstance(registry)) {
            throw new IllegalArgumentException("not a " + METER_REGISTRY + " of Sluice's class loader: "
                    + registry.getClass().getName());
        }
    }

    /**
     * Registers {@code metrics}' meters, unless {@code metrics.micrometer} is false: in {@code registry}
     * (checked by {@link #requireRegistry}), or, when it is null and Micrometer is on the class path, in
     * Micrometer's global registry. The meters go with {@link SluiceMetrics#unregister()}.
     */
    public static void bind(SluiceMetrics metrics, Object registry, SluiceConfig config) {
        if (!config.micrometer() || registry == null && !onClassPath()) return;
        try {
            metrics.meters(MicrometerMeters.bind(registry, metrics, config));
        } catch (LinkageError tooOld) {
            if (registry != null) throw tooOld;
            // an optional integration never stops the application: a Micrometer Sluice cannot use is said, not fatal
            LOG.warn("Sluice [{}]: the Micrometer on the class path cannot take Sluice's meters ({}); they are not"
                    + " registered (JMX still shows every figure). Sluice is built and tested with Micrometer 1.17;"
                    + " metrics.micrometer=false silences this", metrics.name(), tooOld.toString());
        }
    }

    private static Class<?> meterRegistryClass() {
        try {
            return Class.forName(METER_REGISTRY, false, Micrometer.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError absent) {
            return null;
        }
    }
}
