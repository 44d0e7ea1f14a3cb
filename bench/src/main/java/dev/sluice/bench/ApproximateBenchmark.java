package dev.sluice.bench;

import dev.sluice.internal.LimiterStack;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
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
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The approximate mode's local path ({@code rule.<name>.sync}), as production runs it: Sluice's
 * composition ({@code LimiterStack}) over the benchmark Redis, whose approximate layer decides every
 * request on the instance while its sync thread exchanges the counts with Redis every {@code sync}.
 * Same workloads as {@link LocalEngineBenchmark}, to be compared with it at {@code algorithm=fixed-window}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ApproximateBenchmark {

    @Param({"HOT", "EXHAUSTED", "KEYS_10K"})
    public Workload workload;

    @Param({"fixed-window"})
    public String algorithm;

    @Param({"100ms"})
    public String sync;

    private UnifiedJedis jedis;
    private LimiterStack stack;
    private RateLimiter limiter;
    private List<Acquisition>[] requests;

    @Setup(Level.Trial)
    @SuppressWarnings("unchecked")
    public void setUp() {
        jedis = BenchRedis.pooled();
        Rule rule = Workload.rule(algorithm, workload).toBuilder()
                .sync(Duration.ofMillis(Long.parseLong(sync.replace("ms", "")))).build();
        stack = BenchRedis.stack(jedis, BenchRedis.prefix("approx"), rule, true);
        limiter = stack.limiter();
        String[] keys = workload.clientKeys();
        requests = new List[keys.length];
        for (int i = 0; i < keys.length; i++) {
            requests[i] = List.of(new Acquisition(rule, ClientKey.parse(keys[i])));
        }
        if (workload == Workload.EXHAUSTED) {
            limiter.decide(requests[0]);
            if (limiter.decide(requests[0]).allowed()) throw new IllegalStateException("not exhausted");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        stack.close();
        jedis.close();
    }

    @Benchmark
    public boolean decide(KeyCursor cursor) {
        return limiter.decide(requests[cursor.next()]).allowed();
    }
}
