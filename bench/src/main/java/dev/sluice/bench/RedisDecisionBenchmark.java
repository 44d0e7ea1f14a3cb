package dev.sluice.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.concurrent.TimeUnit;

/**
 * One decision through the limiter API against Redis: latency distribution per call (sample
 * mode; throughput follows from it as threads / mean latency, the loop being closed). Threads
 * (1, 8, 64) are set by the runner ({@link Suite} or {@code -t}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class RedisDecisionBenchmark {

    @Param({"sluice", "sluice-unshared", "bucket4j", "floor", "batched-floor"})
    public String impl;

    @Param({"HOT", "EXHAUSTED", "KEYS_10K"})
    public Workload workload;

    @Param({"token-bucket"})
    public String algorithm;

    @Param({"true"})
    public boolean deniedCache;

    private Contender contender;

    @Setup(Level.Trial)
    public void setUp() {
        contender = Contenders.create(impl, workload, algorithm, deniedCache);
        contender.prepare(workload);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        contender.close();
    }

    @Benchmark
    public boolean decide(KeyCursor cursor) {
        return contender.tryAcquire(cursor.next());
    }
}
