package dev.sluice.bench;

import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

/**
 * Issue 17, item 1: the HTTP benchmark on the Apache Tomcat distribution users download (the zip
 * from Maven Central, unpacked by bench's build), started with its own {@code bin/catalina.sh run},
 * its stock {@code conf/} with only the ports changed in {@code server.xml} (the HTTP connector on a
 * free port, bound to 127.0.0.1; no shutdown port). Each variant is one Tomcat, its own
 * {@code CATALINA_BASE} and JVM (Tomcat's defaults: no heap or GC option), serving one web
 * application at {@code /}: {@link dev.sluice.bench.webapp.Hello} (200, two bytes) behind
 * <ul>
 *   <li>{@code none}: no filter;</li>
 *   <li>{@code unmatched}: Sluice mapped to {@code /*} on Redis with one rule whose {@code match}
 *       is a path no request has: what a filter that decides nothing costs;</li>
 *   <li>{@code local}: Sluice, {@code backend=local}, a token-bucket rule that always allows, key
 *       {@code ip}, the default headers;</li>
 *   <li>{@code redis}: the same rule on Redis (the run's private {@code redis-server});</li>
 *   <li>{@code floor}: {@link dev.sluice.bench.webapp.FloorFilter}, one EVALSHA of {@code return 1}
 *       per request on a socket of the request thread's own, RESP written and read directly;</li>
 *   <li>{@code fields}: {@link dev.sluice.bench.webapp.FieldsFilter}, which decides nothing and writes the five
 *       rate-limit fields of {@code headers=both}: what Tomcat's writing of them costs by itself;</li>
 *   <li>{@code local-no-fields}: {@code local} with {@code headers=none};</li>
 *   <li>{@code floor-fields}: the floor filter, writing the five fields too;</li>
 *   <li>{@code empty}: {@link dev.sluice.bench.webapp.EmptyFilter}, which only passes the request on:
 *       what a mapped filter costs by itself (Tomcat's filter chain);</li>
 *   <li>{@code empty-wrapping}: the same, setting one request attribute and passing a request
 *       wrapper on, as any filter that gates later dispatches does (Sluice on every request).</li>
 * </ul>
 * The last five are not in the default runs: they tell the filter's own cost from the fields' and
 * from the container's cost of any filter.
 * The web application's {@code WEB-INF/lib} is Sluice's jar and its runtime dependencies as a user's
 * WAR holds them (the same in every variant), plus slf4j-simple at {@code warn}.
 *
 * <p>All Tomcats start first; then {@code wrk -t2 -cN -dS} runs go round-robin over the
 * variants and concurrencies ({@code --rounds} times), so a busy minute on the machine hits all of
 * them. Around each run: the Tomcat JVM's CPU time ({@code /proc/PID/stat}), Redis's
 * ({@code INFO cpu}), the machine's ({@code /proc/stat}), and from a statistics context in the
 * same Tomcat ({@link dev.sluice.bench.webapp.StatsServlet}) the bytes its threads allocated and
 * Sluice's fallback and timeout counts. Writes {@code tomcat.tsv} (every run) and
 * {@code tomcat.md} (medians, spreads, the issue's ratios).
 *
 * <p>{@code --profile LIB} (async-profiler's {@code libasyncProfiler.so}) then starts each profiled
 * variant once more with the agent loaded ({@code -agentpath}, which turns on
 * {@code DebugNonSafepoints} for accurate inlined frames; the measured runs never carry it), warms
 * it up and, driving the agent through the JDK's attach API, takes a CPU profile ({@code itimer})
 * and an allocation profile (bytes) under {@code wrk -c64}: flame graphs {@code profile-*.html}
 * and {@link ProfileSummary}'s tables ({@code tomcat-profile.md}).
 *
 * <p>{@code --allocation N} first measures the bytes each variant allocates per request under a load
 * whose shape does not depend on the machine's speed ({@link SequentialClient}: one request at a time
 * on a kept-alive connection; {@code --allocation-warmup} requests first, for the JIT), so it can be
 * measured while other work runs on the machine: {@code --allocation-rounds} times N requests per
 * variant round-robin, HotSpot's per-thread counters of Tomcat's request threads and of all its
 * threads; with {@code --profile}, then an allocation profile of each variant under the same load (the
 * agent attached to the measured JVM afterwards): where the bytes go. Writes {@code tomcat-alloc.md}.
 * {@code --rounds 0} runs no measured {@code wrk} run: only the allocation figures, or without
 * {@code --allocation} only the profiles of {@code --profile} (CPU shares need a load that keeps the
 * JVM busy, so these are taken under {@code wrk}).
 *
 * <pre>java -Dsluice.bench.redis=redis://127.0.0.1:PORT -cp benchmarks.jar dev.sluice.bench.TomcatDistribution \
 *     --home bench/target/dist/apache-tomcat-11.0.24 --lib bench/target/tomcat-webapp-lib --out DIR \
 *     [--variants none,unmatched,local,redis,floor] [--connections 32,64] [--rounds 3] [--seconds 5] \
 *     [--warmup 4] [--warmup-rounds 4] [--warmup-within 0.10] [--wrk-script bench/wrk/report.lua] [--profile libasyncProfiler.so] [--profile-seconds 10] \
 *     [--profile-variants unmatched,local,redis,floor] [--allocation 20000] [--allocation-warmup 60000] \
 *     [--allocation-rounds 3] [--keep]</pre>
 * {@code --keep} leaves each Tomcat's {@code CATALINA_BASE} (its logs) under {@code DIR/tomcat/}; a
 * failed run always does.
 */
public final class TomcatDistribution {

    static final List<String> VARIANTS = List.of("none", "unmatched", "local", "redis", "floor", "fields",
            "local-no-fields", "floor-fields", "empty", "empty-wrapping");
    private static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    /** async-profiler's allocation sampling interval, bytes: a sample per 8 KB allocated (its default, 512 KB, gives a few hundred). */
    private static final String ALLOC_INTERVAL = "8k";
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** One measured wrk run with what the server side spent on it. */
    record Run(String variant, int connections, int round, Wrk.Result wrk, double tomcatCpuUs, double redisCpuUs,
               double allocatedBytes, double requestThreadBytes, long gcs, long fallbacks, long redisTimeouts,
               long redisDecisions, double machineBusy, String load) {
    }

    private final Path home;
    private final Path lib;
    private final Path out;
    private final List<String> variants;
    private final List<Integer> connections;
    private final int rounds;
    private final int seconds;
    private final int warmup;
    private final int warmupRounds;
    private final double warmupWithin;
    private final List<String> warmupRates = new ArrayList<>();
    private final Path wrkScript;
    private final Path profiler;
    private final int profileSeconds;
    private final List<String> profileVariants;
    private final boolean keep;
    private final int allocationRequests;
    private final int allocationWarmup;
    private final int allocationRounds;
    private final List<Run> runs = new ArrayList<>();
    private String loadBefore;
    private String loadAfter;

    private TomcatDistribution(Map<String, String> a) {
        home = Path.of(required(a, "--home")).toAbsolutePath();
        lib = Path.of(required(a, "--lib")).toAbsolutePath();
        out = Path.of(required(a, "--out")).toAbsolutePath();
        variants = List.of(a.getOrDefault("--variants", String.join(",", VARIANTS)).split(","));
        for (String v : variants) {
            if (!VARIANTS.contains(v)) throw new IllegalArgumentException("--variants: one of " + VARIANTS + ", not " + v);
        }
        connections = new ArrayList<>();
        for (String c : a.getOrDefault("--connections", "32,64").split(",")) connections.add(Integer.parseInt(c.trim()));
        rounds = Integer.parseInt(a.getOrDefault("--rounds", "3"));
        seconds = Integer.parseInt(a.getOrDefault("--seconds", "5"));
        warmup = Integer.parseInt(a.getOrDefault("--warmup", "4"));
        warmupRounds = Integer.parseInt(a.getOrDefault("--warmup-rounds", "4"));
        warmupWithin = Double.parseDouble(a.getOrDefault("--warmup-within", "0.10"));
        if (warmupRounds < 1) throw new IllegalArgumentException("--warmup-rounds: at least 1");
        wrkScript = Path.of(a.getOrDefault("--wrk-script", "bench/wrk/report.lua")).toAbsolutePath();
        profiler = a.containsKey("--profile") ? Path.of(a.get("--profile")).toAbsolutePath() : null;
        profileSeconds = Integer.parseInt(a.getOrDefault("--profile-seconds", "10"));
        keep = a.containsKey("--keep");
        allocationRequests = Integer.parseInt(a.getOrDefault("--allocation", "0"));
        allocationWarmup = Integer.parseInt(a.getOrDefault("--allocation-warmup", "60000"));
        allocationRounds = Integer.parseInt(a.getOrDefault("--allocation-rounds", "3"));
        // the wrk profiles are of the filters; one request at a time no filter's too (Tomcat's own share)
        profileVariants = a.containsKey("--profile-variants") ? List.of(a.get("--profile-variants").split(","))
                : variants.stream().filter(v -> allocationRequests > 0 || !v.equals("none")).toList();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + args[i]);
            a.put(args[i], i + 1 < args.length && !args[i + 1].startsWith("--") ? args[++i] : "");
        }
        new TomcatDistribution(a).run();
    }

    private static String required(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null || v.isEmpty()) throw new IllegalArgumentException(key + " is required");
        return v;
    }

    private void run() throws Exception {
        Files.createDirectories(out);
        if (!Files.isRegularFile(home.resolve("bin/catalina.sh"))) throw new IllegalArgumentException("no bin/catalina.sh in " + home);
        Map<String, Instance> instances = new LinkedHashMap<>();
        try {
            for (String v : variants) instances.put(v, Instance.create(this, v, "tomcat-" + v, null));
            for (Instance i : instances.values()) i.start();
            for (Instance i : instances.values()) {
                i.awaitReady();
                log("%s: %s on 127.0.0.1:%d (pid %d)", i.variant, product(), i.port, i.pid);
            }
            if (allocationRequests > 0) allocation(instances.values());
            if (rounds > 0) warmUp(instances.values());
            loadBefore = ProcCpu.loadAverage();
            try (Jedis admin = rounds == 0 ? null : BenchRedis.admin()) {
                for (int round = 1; round <= rounds; round++) {
                    for (int c : connections) {
                        for (Instance i : instances.values()) {
                            Run r = measure(admin, i, c, round);
                            runs.add(r);
                            log("round %d/%d -c%d %-9s %,8.0f req/s  Tomcat %5.1f µs/req  Redis %4.1f µs/req  %,7.0f B/req  machine %3.0f%% busy",
                                    round, rounds, c, i.variant, r.wrk.rps(), r.tomcatCpuUs, r.redisCpuUs, r.allocatedBytes,
                                    100 * r.machineBusy);
                            writeTsv();
                        }
                    }
                }
            }
            loadAfter = ProcCpu.loadAverage();
        } finally {
            for (Instance i : instances.values()) i.stop();
            // a run leaves each Tomcat's logs/ (its access log: a line per request, 100+ MB in all) only when asked to
            if (!keep) for (Instance i : instances.values()) deleteTree(i.base);
        }
        if (rounds == 0) {
            // no wrk runs: with --profile and without --allocation, the profiles under wrk alone
            if (profiler != null && allocationRequests == 0) profile();
            return;
        }
        Path md = out.resolve("tomcat.md");
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(md))) {
            report(w);
        }
        log("wrote %s", md);
        if (profiler != null) profile();
    }

    /**
     * Warms every variant up round-robin, {@code --warmup} seconds of {@code wrk -c64} each per round,
     * until one round finds every variant's rate within {@code --warmup-within} of its rate in the
     * round before (at least two rounds, at most {@code --warmup-rounds}), the machine let go quiet after
     * each round. The Tomcats start at once and compile their hot paths while the others run: a fixed few
     * seconds each left the first measured round's rates 20-50% low (BENCHMARKS.md), which a median of
     * three then carried.
     */
    private void warmUp(Collection<Instance> instances) throws IOException, InterruptedException {
        Map<String, Double> last = new LinkedHashMap<>();
        for (int round = 1; round <= warmupRounds; round++) {
            boolean steady = round > 1;
            List<String> rates = new ArrayList<>();
            for (Instance i : instances) {
                double rps = Wrk.run(wrkScript, i.url(), 64, warmup).rps();
                Double before = last.put(i.variant, rps);
                steady &= before != null && Math.abs(rps / before - 1) <= warmupWithin;
                rates.add(String.format(Locale.ROOT, "%s %,.0f", i.variant, rps));
            }
            long quietMs = awaitQuiet();
            warmupRates.add(String.join(", ", rates));
            log("warm-up round %d: %s req/s; the machine quiet %.1f s later", round, String.join(", ", rates), quietMs / 1e3);
            if (steady) return;
        }
        log("warm-up: rates still moving by more than %.0f%% after %d rounds; measuring anyway", 100 * warmupWithin, warmupRounds);
    }

    /**
     * Waits until the machine is quiet (under 15% of its cores busy for a second; 60 s at most) and says how
     * long that took: each JVM goes on compiling what its load made hot after the load stops, which would
     * slow the next variant's run, a JIT's backlog being seconds of CPU.
     */
    private static long awaitQuiet() throws IOException, InterruptedException {
        long start = System.nanoTime();
        ProcCpu.Machine before = ProcCpu.machine();
        while (System.nanoTime() - start < 60_000_000_000L) {
            Thread.sleep(1000);
            ProcCpu.Machine now = ProcCpu.machine();
            if (now.busySince(before) < 0.15) break;
            before = now;
        }
        return (System.nanoTime() - start) / 1_000_000;
    }

    private Run measure(Jedis admin, Instance i, int c, int round) throws IOException, InterruptedException {
        Map<String, Long> s0 = i.stats();
        double tomcat0 = ProcCpu.processSeconds(i.pid);
        double redis0 = BenchRedis.cpuSeconds(admin);
        ProcCpu.Machine m0 = ProcCpu.machine();
        Wrk.Result r = Wrk.run(wrkScript, i.url(), c, seconds);
        ProcCpu.Machine m1 = ProcCpu.machine();
        double redis1 = BenchRedis.cpuSeconds(admin);
        double tomcat1 = ProcCpu.processSeconds(i.pid);
        Map<String, Long> s1 = i.stats();
        double n = r.requests();
        return new Run(i.variant, c, round, r, (tomcat1 - tomcat0) * 1e6 / n, (redis1 - redis0) * 1e6 / n,
                s1.get("allocated_bytes") / n, s1.get("request_thread_allocated_bytes") / n,
                s1.get("gc_count") - s0.get("gc_count"), s1.get("sluice_fallback") - s0.get("sluice_fallback"),
                s1.get("sluice_redis_timeouts") - s0.get("sluice_redis_timeouts"),
                s1.get("sluice_redis_decisions") - s0.get("sluice_redis_decisions"), m1.busySince(m0), ProcCpu.loadAverage());
    }

    // ---------------------------------------------------------------- bytes per request, one request at a time

    /**
     * Bytes allocated per request by each variant under {@link SequentialClient}'s load: see the class
     * comment. A failed Tomcat stops the run (a failed web application answers 404 or 500, not 200).
     */
    private void allocation(java.util.Collection<Instance> instances) throws Exception {
        Map<String, List<double[]>> perVariant = new LinkedHashMap<>();
        Map<String, SequentialClient> clients = new LinkedHashMap<>();
        try {
            for (Instance i : instances) {
                SequentialClient c = new SequentialClient(i.port);
                clients.put(i.variant, c);
                log("%s: warming up with %,d requests one at a time", i.variant, allocationWarmup);
                c.get(allocationWarmup);
                perVariant.put(i.variant, new ArrayList<>());
            }
            String load = ProcCpu.loadAverage();
            for (int round = 1; round <= allocationRounds; round++) {
                for (Instance i : instances) {
                    i.stats(); // the counters' starting point
                    clients.get(i.variant).get(allocationRequests);
                    Map<String, Long> s = i.stats();
                    double requestThreads = s.get("request_thread_allocated_bytes") / (double) allocationRequests;
                    double all = s.get("allocated_bytes") / (double) allocationRequests;
                    perVariant.get(i.variant).add(new double[] {requestThreads, all});
                    log("allocation round %d/%d %-9s %,7.0f B/req (request threads), %,7.0f B/req (all threads)", round,
                            allocationRounds, i.variant, requestThreads, all);
                }
            }
            Path md = out.resolve("tomcat-alloc.md");
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(md))) {
                w.printf(Locale.ROOT, "### Bytes allocated per request on the %s distribution, one request at a time: median of %d runs of "
                        + "%,d requests (min..max), round-robin%n%n", product(), allocationRounds, allocationRequests);
                w.printf(Locale.ROOT, "Each variant its own Tomcat as in the wrk runs; %,d requests first (the JIT), then per run `GET /` "
                        + "one request at a time on a kept-alive connection (Tomcat closes it every 100 requests: a new one), so the "
                        + "figures do not depend on the machine's speed or load (load average when the runs began: %s). Bytes from "
                        + "HotSpot's per-thread counters over the run divided by its requests: Tomcat's request threads "
                        + "(`*-exec-*`: the filter, the servlet, the response), and all of the JVM's threads.%n%n",
                        allocationWarmup, load);
                w.println("| variant | bytes per request, request threads | above no filter | bytes per request, all threads | above no filter |");
                w.println("|---|---:|---:|---:|---:|");
                List<double[]> none = perVariant.get("none");
                for (Map.Entry<String, List<double[]>> e : perVariant.entrySet()) {
                    List<double[]> rs = e.getValue();
                    w.printf(Locale.ROOT, "| %s | %s | %s | %s | %s |%n", e.getKey(), withRange(rs, 0),
                            none == null || e.getKey().equals("none") ? "-" : String.format(Locale.ROOT, "%+,.0f", medianOf(rs, 0) - medianOf(none, 0)),
                            withRange(rs, 1),
                            none == null || e.getKey().equals("none") ? "-" : String.format(Locale.ROOT, "%+,.0f", medianOf(rs, 1) - medianOf(none, 1)));
                }
                w.println();
                if (profiler != null) {
                    StringBuilder details = new StringBuilder();
                    Map<String, double[]> split = new LinkedHashMap<>();
                    for (Instance i : instances) {
                        if (!profileVariants.contains(i.variant)) continue;
                        SequentialClient c = clients.get(i.variant);
                        Path alloc = out.resolve("alloc-" + i.variant + "-alloc.collapsed");
                        AsyncProfiler.command(i.pid, profiler, "start,event=alloc,alloc=" + ALLOC_INTERVAL);
                        i.stats();
                        c.get(allocationRequests);
                        double bytes = i.stats().get("allocated_bytes") / (double) allocationRequests;
                        AsyncProfiler.command(i.pid, profiler, "stop,file=" + alloc + ",collapsed,total");
                        log("profiled %s one request at a time", i.variant);
                        double[] parts = ProfileSummary.allocationSplit(alloc, bytes);
                        split.put(i.variant, new double[]{bytes, parts[0], parts[1]});
                        if (!i.variant.equals("none")) details.append(ProfileSummary.allocation(i.variant, alloc, bytes));
                    }
                    splitTable(w, split);
                    w.print(details);
                }
            }
            log("wrote %s", md);
        } finally {
            for (SequentialClient c : clients.values()) c.close();
        }
    }

    /**
     * Where each profiled variant's bytes go: the filter's own code, Tomcat 11 encoding the response
     * headers (a new {@code CharsetEncoder} per header name and value: what the filter's fields cost in
     * the container, which varies with the JIT's work on it from one JVM to another), and the rest.
     */
    private static void splitTable(PrintWriter w, Map<String, double[]> split) {
        w.println("Where the bytes go (allocation profiles of one more run each, async-profiler `event=alloc`: a stack's share of the"
                + " sampled bytes x the bytes per request of that run). Tomcat 11.0.24 encodes every response header's name and"
                + " value with a new `CharsetEncoder` (`MessageBytes.toBytes`): what the filter's five fields cost in the container,"
                + " and a figure that moves by hundreds of bytes from one JVM to another with the JIT's work on that code, which is"
                + " why the counters' differences above move too; the rest is steady.");
        w.println();
        w.println("| variant | bytes per request | the filter's own code | Tomcat encoding the response headers | the rest | the rest above no filter |");
        w.println("|---|---:|---:|---:|---:|---:|");
        double[] none = split.get("none");
        for (Map.Entry<String, double[]> e : split.entrySet()) {
            double[] v = e.getValue();
            double rest = v[0] - v[1] - v[2];
            w.printf(Locale.ROOT, "| %s | %,.0f | %,.0f | %,.0f | %,.0f | %s |%n", e.getKey(), v[0], v[1], v[2], rest,
                    none == null || e.getKey().equals("none") ? "-" : String.format(Locale.ROOT, "%+,.0f", rest - (none[0] - none[1] - none[2])));
        }
        w.println();
    }

    private static double medianOf(List<double[]> runs, int column) {
        List<Double> v = new ArrayList<>();
        for (double[] r : runs) v.add(r[column]);
        return Suite.median(v);
    }

    private static String withRange(List<double[]> runs, int column) {
        double lo = runs.stream().mapToDouble(r -> r[column]).min().orElse(0);
        double hi = runs.stream().mapToDouble(r -> r[column]).max().orElse(0);
        return String.format(Locale.ROOT, "%,.0f (%,.0f..%,.0f)", medianOf(runs, column), lo, hi);
    }

    // ---------------------------------------------------------------- the report

    private void writeTsv() throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("tomcat.tsv")))) {
            w.println("variant\tconnections\tround\trps\tp50_us\tp90_us\tp99_us\tp999_us\trequests\tnon2xx\tsocket_errors"
                    + "\ttomcat_cpu_us\tredis_cpu_us\tallocated_bytes\trequest_thread_bytes\tgcs\tfallbacks\tredis_timeouts"
                    + "\tredis_decisions\tmachine_busy\tload");
            for (Run r : runs) {
                Wrk.Result x = r.wrk;
                w.printf(Locale.ROOT, "%s\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.0f\t%.0f\t%d\t%d\t%d\t%d\t%.3f\t%s%n",
                        r.variant, r.connections, r.round, x.rps(), x.p50(), x.p90(), x.p99(), x.p999(), x.requests(), x.non2xx(),
                        x.socketErrors(), r.tomcatCpuUs, r.redisCpuUs, r.allocatedBytes, r.requestThreadBytes, r.gcs, r.fallbacks,
                        r.redisTimeouts, r.redisDecisions, r.machineBusy, r.load);
            }
        }
    }

    private List<Run> runsOf(String variant, int c) {
        return runs.stream().filter(r -> r.variant.equals(variant) && r.connections == c).toList();
    }

    private double median(String variant, int c, ToDoubleFunction<Run> f) {
        List<Double> v = new ArrayList<>();
        for (Run r : runsOf(variant, c)) v.add(f.applyAsDouble(r));
        return Suite.median(v);
    }

    private String product() {
        return "Apache Tomcat " + home.getFileName().toString().replace("apache-tomcat-", "");
    }

    private void report(PrintWriter w) {
        w.printf(Locale.ROOT, "### HTTP on the %s distribution: `wrk -t2 -cN -d%ds`, median of %d runs (min..max), round-robin%n%n",
                product(), seconds, rounds);
        w.printf(Locale.ROOT, "Each variant its own Tomcat (`bin/catalina.sh run`, the stock `conf/`, `server.xml` changed in its ports "
                + "only, Tomcat's default JVM options), all started first, then warmed up round-robin, %d s of `wrk -c64` each "
                + "per round and the machine left to go quiet after each (the JVMs compile after their load), until every "
                + "variant's rate was within %.0f%% of its rate in the round before (%d rounds at most; "
                + "the rates, req/s: %s), then the runs round-robin over concurrencies and variants. wrk, Tomcat and Redis share the machine's cores. Load average "
                + "when the runs began: %s; when they ended: %s. CPU per request: the Tomcat JVM's (`/proc/PID/stat`) and "
                + "Redis's (`INFO cpu`) over the run divided by wrk's requests; bytes: allocated by all of the Tomcat JVM's "
                + "threads per request (HotSpot's per-thread counters); machine: the share of all cores busy during the run.%n%n",
                warmup, 100 * warmupWithin, warmupRounds, String.join("; ", warmupRates), loadBefore, loadAfter);
        w.println("| variant | connections | requests/s | spread | p50 (µs) | p99 (µs) | Tomcat CPU per request (µs) | Redis CPU per request (µs) | bytes allocated per request | non-2xx, socket errors | Sluice fallbacks, Redis timeouts | machine busy |");
        w.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int c : connections) {
            for (String v : variants) {
                List<Run> rs = runsOf(v, c);
                if (rs.isEmpty()) continue;
                double med = median(v, c, r -> r.wrk.rps());
                double lo = rs.stream().mapToDouble(r -> r.wrk.rps()).min().orElse(0);
                double hi = rs.stream().mapToDouble(r -> r.wrk.rps()).max().orElse(0);
                w.printf(Locale.ROOT, "| %s | %d | %,.0f (%,.0f..%,.0f) | %.0f%% | %.0f | %.0f | %s | %s | %s | %d, %d | %s | %.0f%% |%n",
                        v, c, med, lo, hi, 100 * (hi - lo) / med, median(v, c, r -> r.wrk.p50()), median(v, c, r -> r.wrk.p99()),
                        withRange(v, c, r -> r.tomcatCpuUs, "%.1f"), withRange(v, c, r -> r.redisCpuUs, "%.1f"),
                        withRange(v, c, r -> r.allocatedBytes, "%,.0f"),
                        rs.stream().mapToLong(r -> r.wrk.non2xx()).sum(), rs.stream().mapToLong(r -> r.wrk.socketErrors()).sum(),
                        v.equals("none") || v.equals("floor") ? "-" : rs.stream().mapToLong(r -> r.fallbacks).sum() + ", "
                                + rs.stream().mapToLong(r -> r.redisTimeouts).sum(),
                        100 * median(v, c, r -> r.machineBusy));
            }
        }
        w.println();
        if (variants.contains("none")) {
            w.println("What each filter adds to a request, medians over no filter's (the filter's own share: what an optimisation cuts):");
            w.println();
            w.println("| variant | connections | Tomcat CPU (µs) | Tomcat + Redis CPU (µs) | bytes allocated |");
            w.println("|---|---:|---:|---:|---:|");
            for (int c : connections) {
                double cpu0 = median("none", c, r -> r.tomcatCpuUs);
                double both0 = median("none", c, r -> r.tomcatCpuUs + r.redisCpuUs);
                double b0 = median("none", c, r -> r.allocatedBytes);
                for (String v : variants) {
                    if (v.equals("none") || runsOf(v, c).isEmpty()) continue;
                    w.printf(Locale.ROOT, "| %s | %d | %+.1f | %+.1f | %+,.0f |%n", v, c, median(v, c, r -> r.tomcatCpuUs) - cpu0,
                            median(v, c, r -> r.tomcatCpuUs + r.redisCpuUs) - both0, median(v, c, r -> r.allocatedBytes) - b0);
                }
            }
            w.println();
        }
        w.println("| target (issue 17), ratio of median requests/s | " + String.join(" | ", connections.stream().map(c -> "-c" + c).toList()) + " |");
        w.println("|---|" + "---|".repeat(connections.size()));
        target(w, "Sluice on Redis >= 1.0x the floor filter (one EVALSHA of `return 1` on a raw socket per request thread)", "redis", "floor", 1.0);
        target(w, "Sluice local >= 0.95x no filter", "local", "none", 0.95);
        target(w, "Sluice with no matching rule >= 0.98x no filter", "unmatched", "none", 0.98);
        // where the five rate-limit fields are measured apart: the filter's own cost, without Tomcat's writing of them
        target(w, "(beside them) Sluice local >= 0.95x a filter writing the same five fields, deciding nothing", "local",
                "fields", 0.95);
        target(w, "(beside them) Sluice local with `headers=none` >= 0.95x no filter", "local-no-fields", "none", 0.95);
        target(w, "(beside them) the five fields alone, a filter writing them / no filter", "fields", "none", 0);
        target(w, "(beside them) Sluice on Redis >= 1.0x the floor filter writing the same five fields", "redis",
                "floor-fields", 1.0);
        // where a filter that only passes the request on is measured: the container's cost of any mapped filter
        target(w, "(beside them) a filter that only passes the request on / no filter", "empty", "none", 0);
        target(w, "(beside them) the same, with one attribute and a request wrapper / no filter", "empty-wrapping", "none", 0);
        target(w, "(beside them) Sluice with no matching rule >= 0.98x a filter that only passes the request on",
                "unmatched", "empty", 0.98);
        target(w, "(beside them) Sluice with no matching rule >= 0.98x the same with an attribute and a wrapper",
                "unmatched", "empty-wrapping", 0.98);
        if (variants.contains("redis") && variants.contains("floor")) {
            w.print("| (beside it) Tomcat + Redis CPU per request, Sluice on Redis / the floor filter |");
            for (int c : connections) {
                w.printf(Locale.ROOT, " %.2fx (%.1f vs %.1f µs) |", median("redis", c, r -> r.tomcatCpuUs + r.redisCpuUs)
                                / median("floor", c, r -> r.tomcatCpuUs + r.redisCpuUs),
                        median("redis", c, r -> r.tomcatCpuUs + r.redisCpuUs), median("floor", c, r -> r.tomcatCpuUs + r.redisCpuUs));
            }
            w.println();
        }
        w.println();
    }

    private String withRange(String v, int c, ToDoubleFunction<Run> f, String format) {
        List<Run> rs = runsOf(v, c);
        double lo = rs.stream().mapToDouble(f).min().orElse(0);
        double hi = rs.stream().mapToDouble(f).max().orElse(0);
        return String.format(Locale.ROOT, format + " (" + format + ".." + format + ")", median(v, c, f), lo, hi);
    }

    private void target(PrintWriter w, String what, String a, String b, double atLeast) {
        if (!variants.contains(a) || !variants.contains(b)) return;
        w.print("| " + what + " |");
        for (int c : connections) {
            double ra = median(a, c, r -> r.wrk.rps());
            double rb = median(b, c, r -> r.wrk.rps());
            w.printf(Locale.ROOT, " **%.2fx** (%,.0f vs %,.0f) %s |", ra / rb, ra, rb,
                    atLeast <= 0 ? "" : ra / rb >= atLeast ? "met" : "**not met**");
        }
        w.println();
    }

    // ---------------------------------------------------------------- profiles

    private void profile() throws Exception {
        Path md = out.resolve("tomcat-profile.md");
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(md))) {
            w.printf(Locale.ROOT, "### Where the filter's CPU and allocations go on the %s distribution (async-profiler, `wrk -t2 -c64 -d%ds` each)%n%n",
                    product(), profileSeconds);
            for (String v : profileVariants) {
                if (!VARIANTS.contains(v)) continue;
                Instance i = Instance.create(this, v, "profile-" + v, "-agentpath:" + profiler);
                try {
                    i.start();
                    i.awaitReady();
                    log("profile %s: warming up %d s", v, warmup);
                    Wrk.run(null, i.url(), 64, warmup);
                    Path cpu = out.resolve("profile-" + v + "-cpu.collapsed");
                    AsyncProfiler.command(i.pid, profiler, "start,event=itimer,interval=1ms");
                    double t0 = ProcCpu.processSeconds(i.pid);
                    Wrk.Result r = Wrk.run(wrkScript, i.url(), 64, profileSeconds);
                    double cpuUs = (ProcCpu.processSeconds(i.pid) - t0) * 1e6 / r.requests();
                    AsyncProfiler.command(i.pid, profiler, "stop,file=" + cpu + ",collapsed");
                    log("profile %s: cpu %,.0f req/s, %.1f µs/req", v, r.rps(), cpuUs);
                    Path alloc = out.resolve("profile-" + v + "-alloc.collapsed");
                    AsyncProfiler.command(i.pid, profiler, "start,event=alloc,alloc=" + ALLOC_INTERVAL);
                    i.stats(); // the allocation counters' starting point
                    Wrk.Result ra = Wrk.run(wrkScript, i.url(), 64, profileSeconds);
                    double bytes = i.stats().get("allocated_bytes") / (double) ra.requests();
                    AsyncProfiler.command(i.pid, profiler, "stop,file=" + alloc + ",collapsed,total");
                    log("profile %s: alloc %,.0f req/s, %,.0f B/req", v, ra.rps(), bytes);
                    // the flame graphs, from a third short session each (async-profiler 3.0 writes one format per session)
                    flameGraph(i, "itimer", "start,event=itimer,interval=1ms", out.resolve("profile-" + v + "-cpu.html"), "");
                    flameGraph(i, "alloc", "start,event=alloc,alloc=" + ALLOC_INTERVAL, out.resolve("profile-" + v + "-alloc.html"), ",total");
                    w.print(ProfileSummary.cpu(v, cpu, cpuUs, r.rps()));
                    w.print(ProfileSummary.allocation(v, alloc, bytes));
                } finally {
                    i.stop();
                }
                if (!keep) deleteTree(i.base);
                w.flush();
            }
        }
        log("wrote %s", md);
    }

    private void flameGraph(Instance i, String what, String start, Path file, String options) throws Exception {
        AsyncProfiler.command(i.pid, profiler, start);
        Wrk.run(null, i.url(), 64, Math.max(2, profileSeconds / 2));
        AsyncProfiler.command(i.pid, profiler, "stop,file=" + file + ",flamegraph" + options + ",title=" + i.variant + " " + what);
    }

    private static void log(String format, Object... args) {
        System.out.printf(Locale.ROOT, "[tomcat] " + format + "%n", args);
    }

    // ---------------------------------------------------------------- one Tomcat

    /** One Tomcat of the distribution: its {@code CATALINA_BASE} under the output directory, its process. */
    private static final class Instance {
        final String variant;
        final Path base;
        final int port;
        final String catalinaOpts;
        final Path home;
        Process process;
        long pid;

        private Instance(String variant, Path base, int port, String catalinaOpts, Path home) {
            this.variant = variant;
            this.base = base;
            this.port = port;
            this.catalinaOpts = catalinaOpts;
            this.home = home;
        }

        static Instance create(TomcatDistribution bench, String variant, String name, String catalinaOpts) throws IOException {
            Path base = bench.out.resolve("tomcat").resolve(name);
            deleteTree(base);
            for (String d : List.of("logs", "temp", "work", "webapps/ROOT/WEB-INF/lib", "webapps/_stats/WEB-INF")) {
                Files.createDirectories(base.resolve(d));
            }
            copyTree(bench.home.resolve("conf"), base.resolve("conf"));
            int port = freePort();
            Path serverXml = base.resolve("conf/server.xml");
            String xml = Files.readString(serverXml);
            // the ports alone: the HTTP connector on a free port of the loopback (only 127.0.0.1 receives
            // load; the address keeps it off the other interfaces), no shutdown port (catalina.sh run is
            // stopped by a signal, and instances must not collide on 8005)
            String edited = xml.replace("<Server port=\"8005\"", "<Server port=\"-1\"")
                    .replace("<Connector port=\"8080\"", "<Connector port=\"" + port + "\" address=\"127.0.0.1\"");
            if (count(xml, "<Server port=\"8005\"") != 1 || count(xml, "<Connector port=\"8080\"") != 1) {
                throw new IllegalStateException(serverXml + " is not the stock server.xml this harness edits");
            }
            Files.writeString(serverXml, edited);
            Path root = base.resolve("webapps/ROOT/WEB-INF");
            try (var jars = Files.list(bench.lib)) {
                for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
                    Files.copy(jar, root.resolve("lib").resolve(jar.getFileName()));
                }
            }
            copyWebappClasses(root.resolve("classes"));
            Files.writeString(root.resolve("classes/simplelogger.properties"),
                    "org.slf4j.simpleLogger.defaultLogLevel=warn\norg.slf4j.simpleLogger.showDateTime=true\n");
            Files.writeString(root.resolve("web.xml"), webXml(variant));
            Path stats = base.resolve("webapps/_stats/WEB-INF");
            copyWebappClasses(stats.resolve("classes"));
            Files.writeString(stats.resolve("web.xml"), webXml(null));
            return new Instance(variant, base, port, catalinaOpts, bench.home);
        }

        String url() {
            return "http://127.0.0.1:" + port + "/";
        }

        void start() throws IOException {
            ProcessBuilder pb = new ProcessBuilder("bash", home.resolve("bin/catalina.sh").toString(), "run")
                    .directory(base.toFile()).redirectErrorStream(true)
                    .redirectOutput(base.resolve("logs/console.out").toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            for (String v : List.of("JAVA_OPTS", "CATALINA_OPTS", "CATALINA_BASE", "CATALINA_HOME", "CATALINA_PID",
                    "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")) {
                pb.environment().remove(v);
            }
            pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
            pb.environment().put("CATALINA_HOME", home.toString());
            pb.environment().put("CATALINA_BASE", base.toString());
            if (catalinaOpts != null) pb.environment().put("CATALINA_OPTS", catalinaOpts);
            process = pb.start();
            pid = process.pid(); // catalina.sh run execs the JVM: same pid
        }

        void awaitReady() throws IOException, InterruptedException {
            long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
            while (true) {
                if (!process.isAlive()) {
                    throw new IllegalStateException(variant + ": Tomcat exited (" + process.exitValue() + "); see "
                            + base.resolve("logs"));
                }
                try {
                    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url())).timeout(Duration.ofSeconds(5)).build(),
                            HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 200 && r.body().equals("ok")) break;
                    if (r.statusCode() != 404) throw new IllegalStateException(variant + ": GET / answered " + r.statusCode() + " " + r.body());
                } catch (IOException notYet) {
                    // not listening yet
                }
                if (System.nanoTime() > deadline) throw new IllegalStateException(variant + ": Tomcat not serving after " + START_TIMEOUT);
                Thread.sleep(200);
            }
            String java = ProcessHandle.of(pid).flatMap(h -> h.info().command()).orElse("?");
            if (!java.endsWith("/java")) throw new IllegalStateException(variant + ": pid " + pid + " is " + java + ", not the JVM");
        }

        /** The statistics servlet's figures (see {@link dev.sluice.bench.webapp.StatsServlet}). */
        Map<String, Long> stats() throws IOException, InterruptedException {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/_stats/"))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) throw new IOException(variant + ": /_stats/ answered " + r.statusCode());
            Map<String, Long> m = new LinkedHashMap<>();
            for (String line : r.body().split("\n")) {
                String[] kv = line.trim().split(" ");
                if (kv.length == 2) m.put(kv[0], Long.parseLong(kv[1]));
            }
            return m;
        }

        /** SIGTERM (Tomcat's orderly shutdown), SIGKILL after 30 s. */
        void stop() throws InterruptedException {
            if (process == null || !process.isAlive()) return;
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }

        @Override
        public String toString() {
            return variant + " (pid " + pid + ")";
        }
    }

    /** The web application's {@code web.xml} for a variant, or (null) the statistics context's. */
    static String webXml(String variant) {
        StringBuilder x = new StringBuilder("""
                <?xml version="1.0" encoding="UTF-8"?>
                <web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0" metadata-complete="true">
                  <absolute-ordering/>
                """);
        if (variant == null) {
            x.append(servlet("stats", "dev.sluice.bench.webapp.StatsServlet"));
            return x.append("</web-app>\n").toString();
        }
        Map<String, String> params = new LinkedHashMap<>();
        String filterClass = "dev.sluice.RateLimitFilter";
        switch (variant) {
            case "none" -> filterClass = null;
            case "floor", "floor-fields" -> {
                filterClass = "dev.sluice.bench.webapp.FloorFilter";
                params.put("redis.host", BenchRedis.host());
                params.put("redis.port", Integer.toString(BenchRedis.port()));
                if (variant.equals("floor-fields")) params.put("fields", "true");
            }
            case "fields" -> filterClass = "dev.sluice.bench.webapp.FieldsFilter";
            case "empty", "empty-wrapping" -> {
                filterClass = "dev.sluice.bench.webapp.EmptyFilter";
                if (variant.equals("empty-wrapping")) params.put("wrap", "true");
            }
            case "unmatched", "local", "redis", "local-no-fields" -> {
                params.put("rules", "api");
                params.put("rule.api.algorithm", "token-bucket");
                // a limit no run exhausts (a billion tokens refilling a million a second)
                params.put("rule.api.limit", Long.toString(Workload.HOT.limit));
                params.put("rule.api.window", Workload.HOT.window.toSeconds() + "s");
                if (variant.startsWith("local")) {
                    params.put("backend", "local");
                    if (variant.equals("local-no-fields")) params.put("headers", "none");
                } else {
                    params.put("redis.url", BenchRedis.uri().toString());
                    // as generous as the JMH contenders': a decision that waits longer falls back to the
                    // local backstop, which a benchmark of the Redis path must not measure (counted anyway)
                    params.put("redis.timeout", BenchRedis.TIMEOUT_MS + "ms");
                }
                if (variant.equals("unmatched")) params.put("rule.api.match", "/no-request-has-this-path/**");
            }
            default -> throw new IllegalArgumentException("variant: " + VARIANTS + ", not " + variant);
        }
        if (filterClass != null) {
            x.append("  <filter>\n    <filter-name>limit</filter-name>\n    <filter-class>").append(filterClass)
                    .append("</filter-class>\n    <async-supported>true</async-supported>\n");
            params.forEach((k, v) -> x.append("    <init-param><param-name>").append(k).append("</param-name><param-value>")
                    .append(v).append("</param-value></init-param>\n"));
            x.append("  </filter>\n  <filter-mapping>\n    <filter-name>limit</filter-name>\n    <url-pattern>/*</url-pattern>\n"
                    + "    <dispatcher>REQUEST</dispatcher>\n  </filter-mapping>\n");
        }
        x.append(servlet("hello", "dev.sluice.bench.webapp.Hello"));
        return x.append("</web-app>\n").toString();
    }

    private static String servlet(String name, String cls) {
        return "  <servlet>\n    <servlet-name>" + name + "</servlet-name>\n    <servlet-class>" + cls + "</servlet-class>\n"
                + "    <async-supported>true</async-supported>\n  </servlet>\n  <servlet-mapping>\n    <servlet-name>" + name
                + "</servlet-name>\n    <url-pattern>/*</url-pattern>\n  </servlet-mapping>\n";
    }

    /** Copies the classes of {@code dev.sluice.bench.webapp} from wherever this class was loaded (the jar, or target/classes). */
    private static void copyWebappClasses(Path classes) throws IOException {
        String pkg = "dev/sluice/bench/webapp/";
        URL source = TomcatDistribution.class.getProtectionDomain().getCodeSource().getLocation();
        Path from;
        try {
            from = Path.of(source.toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IOException(e);
        }
        int copied = 0;
        if (Files.isDirectory(from)) {
            try (var files = Files.list(from.resolve(pkg))) {
                for (Path f : files.filter(p -> p.toString().endsWith(".class")).toList()) {
                    Files.createDirectories(classes.resolve(pkg));
                    Files.copy(f, classes.resolve(pkg).resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                    copied++;
                }
            }
        } else {
            try (JarFile jar = new JarFile(from.toFile())) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                    JarEntry entry = e.nextElement();
                    String n = entry.getName();
                    if (!n.startsWith(pkg) || !n.endsWith(".class") || n.indexOf('/', pkg.length()) >= 0) continue;
                    Path target = classes.resolve(n);
                    Files.createDirectories(target.getParent());
                    try (InputStream in = jar.getInputStream(entry)) {
                        Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                    }
                    copied++;
                }
            }
        }
        if (copied == 0) throw new IllegalStateException("no classes of " + pkg + " in " + from);
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int at = s.indexOf(what); at >= 0; at = s.indexOf(what, at + 1)) n++;
        return n;
    }

    private static int freePort() throws IOException {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Files.createDirectories(to.resolve(from.relativize(dir).toString()));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.copy(file, to.resolve(from.relativize(file).toString()), StandardCopyOption.REPLACE_EXISTING);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (var all = Files.walk(p)) {
            for (Path f : all.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(f);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}
