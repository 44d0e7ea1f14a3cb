package dev.sluice.limiter;

/**
 * Where the limiter reads the time. Algorithms never call {@link System#currentTimeMillis()}
 * themselves, so tests drive them with a fake clock.
 */
@FunctionalInterface
public interface Clock {

    /** Milliseconds since the Unix epoch. */
    long millis();

    /** The instance's wall clock. */
    Clock SYSTEM = System::currentTimeMillis;
}
