package dev.sluice.bench;

import dev.sluice.limiter.Algorithm;
import dev.sluice.internal.cache.DeniedClientCache;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;
import org.openjdk.jmh.util.Statistics;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Runs every JMH figure of BENCHMARKS.md, one JMH trial per (benchmark, parameters, threads),
 * {@code --rounds} times round-robin (so a busy minute on the machine hits every contender, not
 * one), then the Redis cost per decision, and writes {@code results.tsv} (every iteration) and
 * {@code summary.md} (medians with min..max) to {@code --out}.
 *
 * <pre>java -Dsluice.bench.redis=redis://127.0.0.1:PORT -cp benchmarks.jar dev.sluice.bench.Suite \
 *     --out DIR [--rounds 1] [--full] [--parts redis,local,filter,commands,flood,shapes]
 *     [--impls sluice,sluice-unshared,bucket4j,floor,batched-floor] [--threads 1,8,64]</pre>
 * {@code --threads} limits the limiter-API trials to those thread counts (the other algorithms run at 8).
 */
public final class Suite {

    static final String[] ALGORITHMS = {
            "token-bucket", "fixed-window", "sliding-window-counter", "sliding-window-log", "leaky-bucket", "gcra"};
    static final int[] THREADS = {1, 8, 64};
    /** By name: these need the engine and the filter, and the harness builds without them. */
    static final String LOCAL_BENCHMARK = "dev.sluice.bench.LocalEngineBenchmark";
    static final String FILTER_BENCHMARK = "dev.sluice.bench.FilterOverheadBenchmark";
    /** {@code FilterOverheadBenchmark}'s variants, see there. */
    static final String[] FILTER_VARIANTS = {"unmatched", "allowed", "allowed-no-headers", "denied"};

    /** One JMH trial: a benchmark method, its parameters, a thread count. */
    record Trial(String section, String benchmark, Map<String, String> params, int threads) {
        String label() {
            StringBuilder sb = new StringBuilder(section);
            params.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
            return sb.append(" t=").append(threads).toString();
        }
    }

    /** What the trials of one {@link Trial} measured, over all rounds. */
    static final class Samples {
        /** Decisions per second, one per measured iteration. */
        final List<Double> opsPerSecond = new ArrayList<>();
        /** Per round: p50, p99, p999 in microseconds (sample-time benchmarks only). */
        final List<double[]> percentilesUs = new ArrayList<>();
    }

    private final Path out;
    private final int rounds;
    private final boolean full;
    private final Set<String> parts;
    private final Set<String> impls;
    private final int[] threads;
    private final String redisUrl;
    final Map<Trial, Samples> samples = new LinkedHashMap<>();
    final List<CommandCount.Cost> costs = new ArrayList<>();
    final List<DeniedFlood.Flood> floods = new ArrayList<>();
    final List<KeyMemory.Usage> memory = new ArrayList<>();
    final List<RoundTripShapes.Shape> shapes = new ArrayList<>();

    private Suite(Path out, int rounds, boolean full, Set<String> parts, Set<String> impls, int[] threads) {
        this.out = out;
        this.rounds = rounds;
        this.full = full;
        this.parts = parts;
        this.impls = impls;
        this.threads = threads;
        this.redisUrl = BenchRedis.uri().toString();
    }

    public static void main(String[] args) throws Exception {
        Path out = null;
        int rounds = 1;
        boolean full = false;
        Set<String> parts = Set.of("redis", "local", "filter", "commands", "flood", "shapes");
        Set<String> impls = Set.of("sluice", "sluice-unshared", "bucket4j", "floor");
        int[] threads = THREADS;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--full" -> full = true;
                case "--parts" -> parts = Set.of(args[++i].split(","));
                case "--impls" -> impls = Set.of(args[++i].split(","));
                case "--threads" -> threads = java.util.Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; usage: --out DIR [--rounds N] [--full] [--parts redis,local,filter,commands] [--impls ...] [--threads 1,8,64]");
            }
        }
        if (out == null) throw new IllegalArgumentException("--out DIR is required");
        Files.createDirectories(out);
        Suite suite = new Suite(out, rounds, full, parts, impls, threads);
        suite.run();
    }

    private void run() throws Exception {
        List<Trial> matrix = matrix();
        System.out.printf(Locale.ROOT, "%d trials x %d rounds%n", matrix.size(), rounds);
        for (int round = 1; round <= rounds; round++) {
            int n = 0;
            for (Trial trial : matrix) {
                long t0 = System.nanoTime();
                RunResult result = runTrial(trial);
                record(trial, result);
                Samples s = samples.get(trial);
                System.out.printf(Locale.ROOT, "[round %d/%d, %d/%d, %.0fs] %-90s %,12.0f ops/s%n", round, rounds,
                        ++n, matrix.size(), (System.nanoTime() - t0) / 1e9, trial.label(),
                        median(s.opsPerSecond.subList(s.opsPerSecond.size() - MEASURED_ITERATIONS, s.opsPerSecond.size())));
                writeTsv();
            }
        }
        if (parts.contains("commands")) {
            countCommands();
        }
        if (parts.contains("flood") && impls.contains("sluice")) {
            flood();
        }
        if (parts.contains("shapes")) {
            shapes();
        }
        if (parts.contains("commands") && impls.contains("sluice")) {
            sluiceCosts();
        }
        Report.write(this, out.resolve("summary.md"));
        System.out.println("wrote " + out.resolve("summary.md"));
    }

    /** The default matrix fits the ~10 minute budget on 2 cores; {@code --full} runs every algorithm at every thread count. */
    List<Trial> matrix() {
        List<Trial> m = new ArrayList<>();
        if (parts.contains("redis")) {
            for (int threads : this.threads) {
                for (Workload w : Workload.values()) {
                    if (impls.contains("floor") && w != Workload.EXHAUSTED) {
                        m.add(redis("floor", w, "-", true, threads));
                    }
                    if (impls.contains("batched-floor") && w != Workload.EXHAUSTED) {
                        m.add(redis("batched-floor", w, "-", true, threads));
                    }
                    if (impls.contains("bucket4j")) {
                        m.add(redis("bucket4j", w, "token-bucket", true, threads));
                    }
                    if (impls.contains("sluice")) {
                        m.add(redis("sluice", w, "token-bucket", true, threads));
                        if (w == Workload.EXHAUSTED) m.add(redis("sluice", w, "token-bucket", false, threads));
                    }
                    // the same engine, one round trip per decision: what shared round trips change
                    if (impls.contains("sluice-unshared") && w != Workload.EXHAUSTED) {
                        m.add(redis("sluice-unshared", w, "token-bucket", true, threads));
                    }
                }
            }
            if (impls.contains("sluice")) {
                for (String algorithm : ALGORITHMS) {
                    if (algorithm.equals("token-bucket") || !implemented(algorithm)) continue;
                    for (int threads : full ? this.threads : java.util.Arrays.stream(this.threads).filter(t -> t == 8).toArray()) {
                        for (Workload w : Workload.values()) {
                            // an exhausted key with the cache on is a local lookup whatever the algorithm
                            if (w == Workload.EXHAUSTED && !full) continue;
                            m.add(redis("sluice", w, algorithm, true, threads));
                        }
                    }
                }
            }
        }
        if (parts.contains("local")) {
            for (String algorithm : ALGORITHMS) {
                if (!implemented(algorithm)) continue;
                for (Workload w : Workload.values()) {
                    if (w == Workload.EXHAUSTED && !algorithm.equals("token-bucket") && !full) continue;
                    m.add(new Trial("local", LOCAL_BENCHMARK, ordered("workload", w.name(), "algorithm", algorithm), 1));
                }
            }
            m.add(new Trial("local", LOCAL_BENCHMARK, ordered("workload", "KEYS_10K", "algorithm", "token-bucket"), 2));
        }
        if (parts.contains("filter")) {
            for (String variant : FILTER_VARIANTS) {
                m.add(new Trial("filter", FILTER_BENCHMARK, ordered("variant", variant), 1));
            }
        }
        return m;
    }

    private static Trial redis(String impl, Workload w, String algorithm, boolean cache, int threads) {
        return new Trial("redis", RedisDecisionBenchmark.class.getName(), ordered("impl", impl, "workload", w.name(),
                "algorithm", algorithm, "deniedCache", Boolean.toString(cache)), threads);
    }

    private static Map<String, String> ordered(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    /** Measured iterations per trial (a trial's fork and set-up take about 3 s more: bench/run.sh's ~15 minute budget). */
    static final int MEASURED_ITERATIONS = 3;

    /**
     * A measured iteration of a trial where one thread decides locally (the local engine, the filter,
     * the approximate mode): decisions of tens of ns, millions of them in half a second.
     */
    static final TimeValue LOCAL_ITERATION = TimeValue.milliseconds(500);

    /** A measured iteration: 1 s on Redis (a round trip is tens of µs, 64 threads), else {@link #LOCAL_ITERATION}. */
    private static TimeValue measurementTime(Trial trial) {
        return trial.section().equals("redis") ? TimeValue.seconds(1) : LOCAL_ITERATION;
    }

    /**
     * Warm-up iterations of 1 s: {@value #BUSY_WARMUP_ITERATIONS} where 64 threads make round trips
     * to a Redis on the same 2 cores, else 1. There the JIT's compiler threads get little CPU: every contender, the bare
     * floor included, still ran about twice as fast after 5 s as after 1 s (2026-12-07, BENCHMARKS.md
     * "Run AP"), so a 1 s warm-up measured the compilers' progress as much as the contenders.
     */
    static int warmupIterations(Trial trial) {
        if (!trial.section().equals("redis") || trial.threads() < 64) return 1;
        Map<String, String> p = trial.params();
        // a client the denied-client cache refuses is decided in process: millions a second, no round trip
        boolean inProcess = p.get("impl").equals("sluice") && p.get("workload").equals(Workload.EXHAUSTED.name())
                && p.get("deniedCache").equals("true");
        return inProcess ? 1 : BUSY_WARMUP_ITERATIONS;
    }

    static final int BUSY_WARMUP_ITERATIONS = 5;

    private RunResult runTrial(Trial trial) throws RunnerException {
        ChainedOptionsBuilder o = new OptionsBuilder()
                .include(java.util.regex.Pattern.quote(trial.benchmark()) + "\\.")
                .threads(trial.threads())
                .forks(1)
                .warmupIterations(warmupIterations(trial))
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(MEASURED_ITERATIONS)
                .measurementTime(measurementTime(trial))
                .jvmArgsAppend("-Dsluice.bench.redis=" + redisUrl, "-Xms1g", "-Xmx1g", "-XX:+UseParallelGC")
                .shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT);
        trial.params().forEach((k, v) -> o.param(k, v.equals("-") ? "token-bucket" : v));
        return new Runner(o.build()).runSingle();
    }

    private void record(Trial trial, RunResult result) {
        Samples s = samples.computeIfAbsent(trial, k -> new Samples());
        Mode mode = result.getParams().getMode();
        double nanosPerUnit = result.getParams().getTimeUnit().toNanos(1);
        for (BenchmarkResult br : result.getBenchmarkResults()) {
            for (IterationResult ir : br.getIterationResults()) {
                double score = ir.getPrimaryResult().getScore();
                // throughput: ops per unit; sample time: mean time per op, and with a closed loop
                // (each thread waits for its answer) throughput = threads / mean latency
                s.opsPerSecond.add(mode == Mode.Throughput ? score * 1e9 / nanosPerUnit
                        : trial.threads() * 1e9 / (score * nanosPerUnit));
            }
        }
        if (mode == Mode.SampleTime) {
            Statistics st = result.getPrimaryResult().getStatistics();
            double us = nanosPerUnit / 1e3;
            s.percentilesUs.add(new double[]{st.getPercentile(50) * us, st.getPercentile(99) * us,
                    st.getPercentile(99.9) * us});
        }
    }

    private void countCommands() throws InterruptedException {
        int decisions = 5_000;
        for (String impl : new String[]{"floor", "bucket4j", "sluice", "sluice-unshared"}) {
            if (!impls.contains(impl)) continue;
            for (Workload w : Workload.values()) {
                if ((impl.equals("floor") || impl.equals("sluice-unshared")) && w == Workload.EXHAUSTED) continue;
                for (int threads : new int[]{1, 64}) {
                    for (boolean cache : impl.equals("sluice") && w == Workload.EXHAUSTED
                            ? new boolean[]{true, false} : new boolean[]{true}) {
                        try (Contender c = Contenders.create(impl, w, "token-bucket", cache)) {
                            String label = impl.equals("sluice-unshared") ? "sluice, unshared"
                                    : impl + (impl.equals("sluice") && !cache ? " (no denied cache)" : "");
                            CommandCount.Cost cost = CommandCount.measure(label, c, w, threads, decisions);
                            costs.add(cost);
                            System.out.printf(Locale.ROOT, "commands %-28s %-9s t=%-2d round trips/decision %.3f, commands %.3f, Redis CPU %.1f us %s%n",
                                    label, w, threads, cost.roundTrips(), cost.commands(), cost.redisCpuMicros(), cost.perCommand());
                        }
                    }
                }
            }
        }
    }

    /** Per algorithm: Redis CPU per admitted decision on 10,000 keys, and bytes per key; and requests of 3 rules. */
    private void sluiceCosts() throws InterruptedException {
        for (Workload w : new Workload[]{Workload.KEYS_10K, Workload.EXHAUSTED}) {
            try (Contender c = new SluiceContender(w, "token-bucket", false, 3, true)) {
                CommandCount.Cost cost = CommandCount.measure("sluice, 3 rules per request (no denied cache)", c, w, 8, 5_000);
                costs.add(cost);
                System.out.printf(Locale.ROOT, "commands 3 rules %-9s t=8 round trips/decision %.3f, commands %.3f, Redis CPU %.1f us %s%n",
                        w, cost.roundTrips(), cost.commands(), cost.redisCpuMicros(), cost.perCommand());
            }
        }
        for (String algorithm : ALGORITHMS) {
            if (!implemented(algorithm)) continue;
            try (Contender c = Contenders.create("sluice", Workload.KEYS_10K, algorithm, true)) {
                CommandCount.Cost cost = CommandCount.measure("sluice " + algorithm, c, Workload.KEYS_10K, 8, 10_000);
                costs.add(cost);
                System.out.printf(Locale.ROOT, "commands %-28s KEYS_10K t=8 round trips/decision %.3f, commands %.3f, Redis CPU %.1f us %s%n",
                        algorithm, cost.roundTrips(), cost.commands(), cost.redisCpuMicros(), cost.perCommand());
            }
            for (int requests : algorithm.equals("sliding-window-log") ? new int[]{3, 100} : new int[]{3}) {
                KeyMemory.Usage usage = KeyMemory.measure(algorithm, requests == 3 ? 2_000 : 200, requests);
                memory.add(usage);
                System.out.printf(Locale.ROOT, "memory %-22s %.0f bytes per key (%d requests of a limit of %d)%n", algorithm,
                        usage.bytesPerKey(), requests, usage.limit());
            }
        }
    }

    /** A denied flood from one client, cache off then on, for the algorithms whose denials are cached. */
    private void flood() throws InterruptedException {
        for (String algorithm : ALGORITHMS) {
            if (!DeniedClientCache.exactFor(Algorithm.fromId(algorithm)) || !implemented(algorithm)) continue;
            for (boolean cache : new boolean[]{false, true}) {
                DeniedFlood.Flood f = DeniedFlood.run(algorithm, cache, 8, java.time.Duration.ofSeconds(3));
                floods.add(f);
                System.out.printf(Locale.ROOT, "flood %-22s cache=%-5s %,d requests (%,.0f/s), %d admitted, %,d Redis round trips: %.3f per 100 requests%n",
                        algorithm, cache, f.requests(), f.requestsPerSecond(), f.admitted(), f.roundTrips(), f.callsPer100Requests());
            }
        }
    }

    /** Pipelined calls vs one script call deciding a batch: what Redis does with each. */
    private void shapes() throws Exception {
        for (RoundTripShapes.Shape s : RoundTripShapes.measure(java.time.Duration.ofSeconds(2))) {
            shapes.add(s);
            System.out.printf(Locale.ROOT, "shapes %-32s batch %3d: %,10.0f decisions/s, Redis CPU %.2f us per decision%n",
                    s.shape(), s.batch(), s.decisionsPerSecond(), s.redisCpuMicros());
        }
    }

    /** Whether the engine on the classpath implements {@code algorithm} yet (the suite runs against any stage of it). */
    static boolean implemented(String algorithm) {
        try {
            dev.sluice.internal.algorithm.RateAlgorithm.of(dev.sluice.limiter.Rule.of("probe", Algorithm.fromId(algorithm), 10,
                    java.time.Duration.ofSeconds(1)));
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private void writeTsv() throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("results.tsv")))) {
            w.println("section\tparams\tthreads\titeration\tops_per_s");
            for (Map.Entry<Trial, Samples> e : samples.entrySet()) {
                Trial t = e.getKey();
                List<Double> ops = e.getValue().opsPerSecond;
                for (int i = 0; i < ops.size(); i++) {
                    w.printf(Locale.ROOT, "%s\t%s\t%d\t%d\t%.1f%n", t.section(), t.params(), t.threads(), i, ops.get(i));
                }
            }
        }
    }

    static double median(List<Double> values) {
        if (values.isEmpty()) return Double.NaN;
        List<Double> v = new ArrayList<>(values);
        v.sort(null);
        int n = v.size();
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2;
    }

    int rounds() {
        return rounds;
    }
}
