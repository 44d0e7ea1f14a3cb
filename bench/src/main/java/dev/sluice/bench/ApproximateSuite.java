package dev.sluice.bench;

import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The approximate mode's figures of BENCHMARKS.md: its local path against the local engine (JMH,
 * {@link ApproximateBenchmark} and {@link LocalEngineBenchmark} at {@code fixed-window}, the same
 * workloads, round-robin {@code --rounds} times), then three instances at 1,000 requests a second each
 * on one key ({@link ApproximateFleet}): Redis round trips per request and the overshoot per window.
 * Writes {@code approx.md} to {@code --out}.
 *
 * <pre>java -Dsluice.bench.redis=redis://127.0.0.1:PORT -cp benchmarks.jar dev.sluice.bench.ApproximateSuite \
 *     --out DIR [--rounds 1]</pre>
 */
public final class ApproximateSuite {

    private static final String[] WORKLOADS = {"HOT", "EXHAUSTED", "KEYS_10K"};
    private static final int[] THREADS = {1, 2};

    private ApproximateSuite() {
    }

    public static void main(String[] args) throws Exception {
        OutAndRounds arguments = OutAndRounds.parse(args, 1);
        Path out = arguments.out();
        int rounds = arguments.rounds();
        String redisUrl = BenchRedis.uri().toString();

        Map<String, List<Double>> ops = new LinkedHashMap<>();
        for (int round = 1; round <= rounds; round++) {
            for (String workload : WORKLOADS) {
                for (int threads : THREADS) {
                    for (String benchmark : new String[]{"dev.sluice.bench.LocalEngineBenchmark", ApproximateBenchmark.class.getName()}) {
                        RunResult r = trial(benchmark, workload, threads, redisUrl);
                        String key = benchmark + " " + workload + " " + threads;
                        List<Double> samples = ops.computeIfAbsent(key, k -> new ArrayList<>());
                        for (BenchmarkResult br : r.getBenchmarkResults()) {
                            for (IterationResult ir : br.getIterationResults()) samples.add(ir.getPrimaryResult().getScore());
                        }
                        System.out.printf(Locale.ROOT, "[round %d] %-60s %,14.0f ops/s%n", round, key,
                                Suite.median(samples.subList(samples.size() - Suite.MEASURED_ITERATIONS, samples.size())));
                    }
                }
            }
        }

        List<ApproximateFleet.Run> runs = new ArrayList<>();
        for (long syncMs : new long[]{50, 100}) {
            ApproximateFleet.Run run = ApproximateFleet.run(3, 1_000, 1_500, Duration.ofMillis(syncMs), 8);
            runs.add(run);
            System.out.printf(Locale.ROOT, "fleet sync=%dms: %,d requests, %d round trips (%.4f per request), %d EVALSHA/EVAL,"
                            + " largest overshoot %d, bound %d, sizing rule %d, longest unsynced %d ms, admitted per window %s%n",
                    syncMs, run.requests(), run.roundTrips(), run.roundTripsPerRequest(), run.evalCalls(),
                    run.largestOvershoot(), run.bound(), run.sizingRule(), run.longestUnsyncedMs(), run.perWindow());
        }

        double perKey = ApproximateFleet.redisMicrosPerKey(10_000, 20);
        System.out.printf(Locale.ROOT, "sync of 10,000 keys: %.2f us of Redis CPU per key%n", perKey);

        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("approx.md")))) {
            w.printf("### Approximate mode: the local path (JMH, fixed-window, median of %d x 3 iterations, min..max)%n%n", rounds);
            w.println("| workload | threads | local engine (ops/s) | approximate mode (ops/s) | approximate / local |");
            w.println("|---|---:|---:|---:|---:|");
            for (String workload : WORKLOADS) {
                for (int threads : THREADS) {
                    List<Double> local = ops.get("dev.sluice.bench.LocalEngineBenchmark " + workload + " " + threads);
                    List<Double> approx = ops.get(ApproximateBenchmark.class.getName() + " " + workload + " " + threads);
                    w.printf(Locale.ROOT, "| %s | %d | %s | %s | %.2f |%n", workload, threads, spread(local), spread(approx),
                            Suite.median(approx) / Suite.median(local));
                }
            }
            w.println();
            w.println("### Approximate mode: three instances, one key, 1,000 requests/s each, limit 1,500 per 1 s window, 8 windows");
            w.println();
            w.println("| sync | requests | Redis round trips (per request) | EVALSHA/EVAL in Redis | Redis CPU (ms) | largest overshoot in a window | bound (sum of u but the smallest) | sizing rule 2 x 1,000/s x longest interval | longest interval (ms) | admitted per window |");
            w.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
            for (ApproximateFleet.Run r : runs) {
                w.printf(Locale.ROOT, "| %d ms | %,d | %d (%.4f) | %d | %.0f | %d | %d | %d | %d | %s |%n", r.syncMs(), r.requests(),
                        r.roundTrips(), r.roundTripsPerRequest(), r.evalCalls(), r.redisCpuMs(), r.largestOvershoot(), r.bound(),
                        r.sizingRule(), r.longestUnsyncedMs(), r.perWindow());
            }
            w.println();
            w.printf(Locale.ROOT, "A sync of 10,000 keys (each with a count to add; 79 calls of up to 128 keys, pipelined), 20 times:"
                    + " %.2f µs of Redis CPU per key.%n%n", perKey);
        }
        System.out.println(Files.readString(out.resolve("approx.md")));
    }

    private static RunResult trial(String benchmark, String workload, int threads, String redisUrl) throws Exception {
        ChainedOptionsBuilder o = new OptionsBuilder()
                .include(java.util.regex.Pattern.quote(benchmark) + "\\.")
                .threads(threads)
                .forks(1)
                .warmupIterations(1)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(Suite.MEASURED_ITERATIONS)
                .measurementTime(Suite.LOCAL_ITERATION)
                .jvmArgsAppend("-Dsluice.bench.redis=" + redisUrl, "-Xms1g", "-Xmx1g", "-XX:+UseParallelGC")
                .param("workload", workload)
                .param("algorithm", "fixed-window")
                .shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT);
        return new Runner(o.build()).runSingle();
    }

    private static String spread(List<Double> samples) {
        double lo = samples.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
        double hi = samples.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
        return String.format(Locale.ROOT, "%,.0f (%,.0f..%,.0f)", Suite.median(samples), lo, hi);
    }
}
