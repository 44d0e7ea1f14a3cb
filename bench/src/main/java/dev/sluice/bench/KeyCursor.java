package dev.sluice.bench;

import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.BenchmarkParams;

import java.util.concurrent.ThreadLocalRandom;

/**
 * Which key a benchmark thread decides next: each thread walks the trial's {@link Workload} keys
 * from its own random start, so 10,000 keys are spread evenly over the threads. Shared by every
 * benchmark with a {@code workload} parameter.
 */
@State(Scope.Thread)
public class KeyCursor {
    private int next;
    private int keys;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) {
        keys = Workload.valueOf(params.getParam("workload")).keys;
        next = ThreadLocalRandom.current().nextInt(keys);
    }

    int next() {
        int k = next;
        next = k + 1 == keys ? 0 : k + 1;
        return k;
    }
}
