package dev.sluice.bench;



/**
 * One limiter under test, set up for one {@link Workload}: Sluice's engine, Bucket4j, or the
 * bare-EVALSHA floor. Thread-safe; one instance per trial.
 */
public interface Contender extends AutoCloseable {

    /** Decides one request of client {@code key} (an index into the workload's keys). */
    boolean tryAcquire(int key);

    /** Brings the workload's keys to their starting state (for {@code EXHAUSTED}: nothing left). */
    default void prepare(Workload workload) {
        if (workload == Workload.EXHAUSTED) {
            for (int i = 0; i < 10 && tryAcquire(0); i++) {
                // take what is left
            }
            if (tryAcquire(0)) throw new IllegalStateException(this + ": the exhausted key still admits");
        }
    }

    @Override
    void close();
}
