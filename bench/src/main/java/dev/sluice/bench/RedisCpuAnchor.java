package dev.sluice.bench;

import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Issue 17, item 3: what Redis spends per exact decision, against an anchor measured in the same
 * run on the same server. The anchor is {@code redis-benchmark -c 64 -r 10000} with 16 pipelined
 * calls per connection ({@code -P 16}) of the least a limiter with Redis's clock can run
 * ({@link #MINIMAL}: {@code TIME}, {@code GET}, {@code SET ... PX}) and of {@code return 1} (the cost
 * of a script call itself), and the same without pipelining; against it, Sluice's engine at 64
 * threads over 10,000 keys ({@link CommandCount}: Redis CPU from {@code INFO cpu} deltas, round
 * trips on the client's sockets, commands from {@code INFO commandstats}), one rule, for every
 * algorithm. All of it {@code --rounds} times round-robin; medians with min..max. Writes
 * {@code anchor.md} and {@code anchor.tsv}.
 *
 * <pre>java -Dsluice.bench.redis=redis://127.0.0.1:PORT -cp benchmarks.jar dev.sluice.bench.RedisCpuAnchor --out DIR [--rounds 3]</pre>
 */
public final class RedisCpuAnchor {

    /** The least a limiter that reads Redis's clock runs per decision: read the clock, read the state, write it back with an expiry. */
    static final String MINIMAL = "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) "
            + "redis.call('SET', KEYS[1], 'T123456789:1764500000000', 'PX', 60000) return 1";
    static final String RETURN_1 = "return 1";
    private static final String ANCHOR = "redis-benchmark -P 16: the minimal limiter script (TIME, GET, SET PX)";
    static final int CONNECTIONS = 64;
    static final int KEYS = 10_000;
    static final int PIPELINE = 16;
    /** Sluice's decisions per measurement (after as many to open connections and create the keys). */
    static final int DECISIONS = 30_000;

    /** One measurement: Redis CPU per call (or decision), calls per second, and for Sluice its counts. */
    record Sample(String what, double redisCpuMicros, double perSecond, double roundTrips, double commands) {
    }

    private RedisCpuAnchor() {
    }

    public static void main(String[] args) throws Exception {
        OutAndRounds arguments = OutAndRounds.parse(args, 3);
        Path out = arguments.out();
        int rounds = arguments.rounds();
        Map<String, List<Sample>> samples = new LinkedHashMap<>();
        try (Jedis admin = BenchRedis.admin()) {
            String minimal = admin.scriptLoad(MINIMAL);
            String one = admin.scriptLoad(RETURN_1);
            for (int round = 1; round <= rounds; round++) {
                List<Sample> r = new ArrayList<>();
                // commands per call: the EVALSHA and what the script runs
                r.add(redisBenchmark(admin, ANCHOR, minimal, 4, PIPELINE, 400_000));
                r.add(redisBenchmark(admin, "redis-benchmark -P 16: `return 1`", one, 1, PIPELINE, 1_000_000));
                r.add(redisBenchmark(admin, "redis-benchmark, not pipelined: the minimal limiter script", minimal, 4, 1, 100_000));
                r.add(redisBenchmark(admin, "redis-benchmark, not pipelined: `return 1`", one, 1, 1, 100_000));
                for (String algorithm : Suite.ALGORITHMS) {
                    if (!Suite.implemented(algorithm)) continue;
                    try (Contender c = Contenders.create("sluice", Workload.KEYS_10K, algorithm, true)) {
                        CommandCount.Cost cost = CommandCount.measure("sluice " + algorithm, c, Workload.KEYS_10K, CONNECTIONS, DECISIONS);
                        if (cost.admitted() != cost.decisions()) {
                            throw new IllegalStateException(algorithm + ": " + cost.admitted() + " of " + cost.decisions() + " admitted");
                        }
                        r.add(new Sample("Sluice, " + algorithm, cost.redisCpuMicros(), cost.decisionsPerSecond(), cost.roundTrips(),
                                cost.commands()));
                    }
                }
                for (Sample s : r) {
                    samples.computeIfAbsent(s.what, k -> new ArrayList<>()).add(s);
                    System.out.printf(Locale.ROOT, "[anchor round %d/%d] %-75s Redis CPU %5.2f µs  %,10.0f /s%n", round, rounds,
                            s.what, s.redisCpuMicros, s.perSecond);
                }
            }
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("anchor.tsv")))) {
            w.println("what\tredis_cpu_us\tper_second\tround_trips\tcommands");
            samples.values().forEach(list -> list.forEach(s -> w.printf(Locale.ROOT, "%s\t%.3f\t%.1f\t%.4f\t%.3f%n",
                    s.what, s.redisCpuMicros, s.perSecond, s.roundTrips, s.commands)));
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("anchor.md")))) {
            report(w, samples, rounds);
        }
        System.out.println("wrote " + out.resolve("anchor.md"));
    }

    /** One redis-benchmark run of EVALSHA {@code sha} with one key out of 10,000; Redis's CPU from INFO around it. */
    private static Sample redisBenchmark(Jedis admin, String what, String sha, int commands, int pipeline, int calls)
            throws IOException, InterruptedException {
        List<String> cmd = List.of("redis-benchmark", "-h", BenchRedis.host(), "-p", Integer.toString(BenchRedis.port()),
                "-c", Integer.toString(CONNECTIONS), "-r", Integer.toString(KEYS), "-P", Integer.toString(pipeline),
                "-n", Integer.toString(calls), "-q", "evalsha", sha, "1", "anchor:__rand_int__");
        double cpu0 = BenchRedis.cpuSeconds(admin);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IOException("redis-benchmark failed: " + output);
        double cpu = BenchRedis.cpuSeconds(admin) - cpu0;
        double rps = Double.NaN;
        for (String line : output.split("[\r\n]")) {
            int at = line.indexOf(" requests per second");
            if (at > 0) rps = Double.parseDouble(line.substring(line.lastIndexOf(' ', at - 1) + 1, at));
        }
        if (Double.isNaN(rps)) throw new IOException("redis-benchmark printed no rate: " + output);
        return new Sample(what, cpu * 1e6 / calls, rps, 1.0 / pipeline, commands);
    }

    private static void report(PrintWriter w, Map<String, List<Sample>> samples, int rounds) {
        w.printf(Locale.ROOT, "### Redis CPU per decision against the anchor (issue 17, item 3): %d connections or threads, %,d keys, "
                + "median of %d rounds (min..max)%n%n", CONNECTIONS, KEYS, rounds);
        w.println("Redis CPU from `INFO cpu` deltas of the run's own `redis-server` over each measurement, divided by its calls "
                + "(redis-benchmark) or decisions (Sluice's engine, `CommandCount`: " + DECISIONS / 1000 + "k decisions after as many "
                + "to open the connections and create the keys, every one admitted). Round trips and commands per call or decision; "
                + "per Redis core: 10^6 / the CPU per decision.");
        w.println();
        List<Sample> anchor = samples.get(ANCHOR);
        double minimal = medianCpu(anchor);
        w.println("| what | Redis CPU per call or decision (µs) | calls or decisions/s | round trips per decision | Redis commands per decision | / the minimal script's CPU (-P 16) | decisions/s per Redis core |");
        w.println("|---|---:|---:|---:|---:|---:|---:|");
        for (Map.Entry<String, List<Sample>> e : samples.entrySet()) {
            List<Sample> s = e.getValue();
            double cpu = medianCpu(s);
            w.printf(Locale.ROOT, "| %s | %.2f (%.2f..%.2f) | %,.0f (%,.0f..%,.0f) | %.3f | %.2f | %.2fx | %,.0f |%n", e.getKey(), cpu,
                    s.stream().mapToDouble(Sample::redisCpuMicros).min().orElse(0), s.stream().mapToDouble(Sample::redisCpuMicros).max().orElse(0),
                    Suite.median(s.stream().map(Sample::perSecond).toList()), s.stream().mapToDouble(Sample::perSecond).min().orElse(0),
                    s.stream().mapToDouble(Sample::perSecond).max().orElse(0), Suite.median(s.stream().map(Sample::roundTrips).toList()),
                    Suite.median(s.stream().map(Sample::commands).toList()), cpu / minimal, 1e6 / cpu);
        }
        w.println();
        List<Sample> tb = samples.get("Sluice, token-bucket");
        if (tb != null) {
            double r = medianCpu(tb) / minimal;
            w.println("| target (issue 17) | measured | |");
            w.println("|---|---|---|");
            w.printf(Locale.ROOT, "| Sluice's Redis CPU per decision (token bucket, 64 threads, 10,000 keys) <= 0.5x the minimal script's (-P 16) "
                    + "| **%.2fx** (%.2f vs %.2f µs) | %s |%n", r, medianCpu(tb), minimal, r <= 0.5 ? "met" : "**not met**");
            w.println();
        }
    }

    private static double medianCpu(List<Sample> s) {
        return Suite.median(s.stream().map(Sample::redisCpuMicros).toList());
    }
}
