package dev.sluice.bench;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Rule;
import dev.sluice.internal.local.LocalEngine;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link LocalEngine#decide} alone (backend=local, and the backstop while Redis is away): one
 * rule per request, the instance's real clock, the default {@code local.max-keys}-sized engine.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class LocalEngineBenchmark {

    @Param({"HOT", "EXHAUSTED", "KEYS_10K"})
    public Workload workload;

    @Param({"token-bucket"})
    public String algorithm;

    private LocalEngine engine;
    private List<Acquisition>[] requests;

    @Setup(Level.Trial)
    @SuppressWarnings("unchecked")
    public void setUp() {
        engine = new LocalEngine(Clock.SYSTEM, 100_000);
        Rule rule = Workload.rule(algorithm, workload);
        String[] keys = workload.clientKeys();
        requests = new List[keys.length];
        for (int i = 0; i < keys.length; i++) {
            requests[i] = List.of(new Acquisition(rule, ClientKey.parse(keys[i])));
        }
        if (workload == Workload.EXHAUSTED) {
            engine.decide(requests[0]);
            if (engine.decide(requests[0]).allowed()) throw new IllegalStateException("not exhausted");
        }
    }

    @Benchmark
    public boolean decide(KeyCursor cursor) {
        return engine.decide(requests[cursor.next()]).allowed();
    }
}
