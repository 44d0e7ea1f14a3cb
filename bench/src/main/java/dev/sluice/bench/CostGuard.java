package dev.sluice.bench;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * Issue 17, item 6: the guards that do not depend on the machine's speed. Counted, not timed:
 * <ul>
 *   <li><b>round trips per operation</b> at 64 threads over 10,000 keys (shared round trips: a
 *       decision that finds every place in flight taken waits for the next; above 0.2 per script call
 *       they are not being shared), on the client's sockets ({@link RoundTrips});</li>
 *   <li><b>Redis commands per operation</b> at 64 threads over 10,000 keys, from {@code INFO
 *       commandstats} deltas: those its scripts run besides {@code TIME} (the script call and its
 *       {@code TIME} are paid once per round trip): must not rise;</li>
 *   <li><b>instructions per operation</b> Redis runs, counted by valgrind's callgrind on a
 *       {@code redis-server} of its own, operations sent one at a time by Sluice's engine itself
 *       (so the figure follows whatever the engine sends: a new codec or script needs no change
 *       here): the instructions under {@code processCommand} (executing the command: the script and
 *       the commands it calls, the reply built; the socket read and write and the parsing of the
 *       request are outside it, and so is the event loop's timer), which is deterministic to a few
 *       instructions; the server's total per operation beside it (what {@code bench/script-cost.sh}
 *       reports, ±1% from the event loop). Must not rise by more than 5%.</li>
 * </ul>
 * An operation is a decision: every algorithm admitted (one rule: {@link Workload#KEYS_10K}'s for the
 * counts, {@link Workload#HOT}'s for the instructions), the token bucket denied (the denied-client
 * cache off, so every decision reaches Redis), and the token bucket with three rules per request;
 * or a request that settles at its completion ({@link SettlingContender}: its decision and its
 * settlement, two script calls): a concurrency slot taken and released, a token bucket's actual cost
 * charged past its estimate, or partly given back; or one slot of a renewal of 1 or of 100 slots in
 * one call ({@link RenewingContender}, one thread, as the renewer is; each slot another client's). The
 * thresholds and baseline figures are in {@code bench/cost-baseline.properties}: a change that lowers
 * a figure lowers it there in the same commit ({@code --write-baseline}), so the guard holds the gain.
 *
 * <p>Starts its own {@code redis-server} and a second one under valgrind, both on free loopback
 * ports. About 30 s on two shared cores (counts ~12 s, callgrind ~18 s).
 *
 * <pre>java -cp benchmarks.jar dev.sluice.bench.CostGuard [--baseline bench/cost-baseline.properties]
 *     [--out DIR] [--write-baseline FILE]</pre>
 * Exit status 1 when a figure is over its threshold. {@code CostGuardTest} runs the same check in
 * {@code mvn -Pbench -pl bench -am test}.
 */
public final class CostGuard {

    /** Operations per count at 64 threads (after as many to open the connections and create the keys). */
    static final int DECISIONS = 20_000;
    static final int THREADS = 64;
    /** Operations per instruction count, one at a time, after {@link #WARMUP} (the script loaded, the key created). */
    static final int COUNTED = 1_000; // with WARMUP, within the log's limit: every decision admitted
    static final int WARMUP = 200;
    /** Slots per renewal of the larger renewal case ({@code Leases} renews up to 500 per call). */
    static final int RENEWED = 100;
    /**
     * Requests per instruction count of the requests that settle (two script calls each), after
     * {@link #WARMUP}: the client's once key (give-back.lua) holds the tokens of its settlements in a sorted
     * set, which is a listpack up to 128 entries (each insertion moving the others) and a skiplist beyond,
     * as a busy client's is.
     */
    static final int SETTLED = 500;
    /** Renewal calls per instruction count (after a fifth as many): of one slot, of {@link #RENEWED}. */
    static final int RENEWALS_OF_ONE = 100;
    static final int RENEWALS_OF_MANY = 10;

    /** One case's figures, per operation (a renewal's: per slot). NaN where not measured. */
    record Figures(String name, double roundTrips, double commands, double instructions, double totalInstructions) {
    }

    /** Builds a case's contender on a client (closed with it) for a workload, for the counts or for callgrind's. */
    private interface Build {
        Contender on(UnifiedJedis jedis, Workload workload, boolean oneAtATime);
    }

    /**
     * A case: its contender, the workloads of the counts and of the instructions, the threads of the
     * counts, the operations counted (at {@link #THREADS}: {@link #DECISIONS}; one at a time:
     * {@link #COUNTED} after {@link #WARMUP}), the units per operation the figures are divided by
     * (slots per renewal), whether its operations are admitted, and for the cases whose Redis work a
     * failure would drop silently (the engine's failover logs a settlement or renewal that failed, at
     * debug), a command and its count per unit that prove the work was done.
     */
    private record Case(String name, Build build, Workload counts, Workload instructions, int threads, int operations,
                        int counted, int warmup, int units, boolean admits, String proof, double proofPerUnit) {

        static Case decision(String name, String algorithm, Workload counts, Workload instructions, Rule instructionRule,
                             boolean deniedCache, int rules) {
            Build build = (jedis, w, oneAtATime) -> new SluiceContender(jedis, w,
                    oneAtATime && instructionRule != null ? instructionRule : Workload.rule(algorithm, w), deniedCache, rules);
            return new Case(name, build, counts, instructions, THREADS, DECISIONS, COUNTED, WARMUP, 1,
                    counts != Workload.EXHAUSTED, null, 0);
        }

        static Case settling(String name, SettlingContender.Kind kind, String proof, double proofPerRequest) {
            // two script calls per request: half as many requests as decisions, as many script calls
            return new Case(name, (jedis, w, oneAtATime) -> new SettlingContender(jedis, w, kind), Workload.KEYS_10K, Workload.HOT,
                    THREADS, DECISIONS / 2, SETTLED, WARMUP, 1, true, proof, proofPerRequest);
        }

        /** Slots of as many clients of {@link Workload#KEYS_10K}, renewed {@code perCall} at a time by one thread. */
        static Case renewal(String name, int perCall, int operations, int counted) {
            // the counts cycle over 20 groups of slots (each renewed every 20th call); the instructions renew one, 2 ms apart
            Build build = (jedis, w, oneAtATime) -> new RenewingContender(jedis, Workload.KEYS_10K, perCall, oneAtATime ? 1 : 20);
            return new Case(name, build, Workload.HOT, Workload.HOT, 1, operations, counted, counted / 5, perCall, true, "zadd", 1.0);
        }
    }

    /**
     * The sliding-window log's work depends on how many entries are in its window and how many leave
     * it at each admission, and so on the time between decisions (the hot key's rule has a 20 ms
     * window): counted instead on a window no entry leaves during the count, 10,000 an hour.
     */
    private static final Rule LOG_FOR_INSTRUCTIONS = new Rule("api", Algorithm.SLIDING_WINDOW_LOG, Rule.MAX_LOG_LIMIT,
            Duration.ofHours(1), Rule.MAX_LOG_LIMIT, 1, FailurePolicy.OPEN, Rule.MAX_LOG_LIMIT, Duration.ZERO);

    private CostGuard() {
    }

    public static void main(String[] args) throws Exception {
        Path baselineFile = Path.of("bench/cost-baseline.properties");
        Path out = null;
        Path write = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--baseline" -> baselineFile = Path.of(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                case "--write-baseline" -> write = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("usage: [--baseline FILE] [--out DIR] [--write-baseline FILE]");
            }
        }
        Properties baseline = baseline(baselineFile);
        long t0 = System.nanoTime();
        List<Figures> figures = measure();
        List<String> failures = check(figures, baseline);
        String table = table(figures, baseline, failures, (System.nanoTime() - t0) / 1e9);
        System.out.print(table);
        if (out != null) {
            Files.createDirectories(out);
            Files.writeString(out.resolve("guard.md"), table);
        }
        if (write != null) {
            Files.writeString(write, baselineText(figures, Files.readString(baselineFile, StandardCharsets.UTF_8)));
            System.out.println("wrote " + write);
        }
        if (!failures.isEmpty()) {
            failures.forEach(f -> System.out.println("FAILED: " + f));
            System.exit(1);
        }
    }

    static Properties baseline(Path file) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            p.load(r);
        }
        return p;
    }

    private static List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        for (String algorithm : Suite.ALGORITHMS) {
            if (!Suite.implemented(algorithm)) continue;
            cases.add(Case.decision(algorithm, algorithm, Workload.KEYS_10K, Workload.HOT,
                    algorithm.equals("sliding-window-log") ? LOG_FOR_INSTRUCTIONS : null, true, 1));
        }
        cases.add(Case.decision("token-bucket-denied", "token-bucket", Workload.EXHAUSTED, Workload.EXHAUSTED, null, false, 1));
        cases.add(Case.decision("token-bucket-3-rules", "token-bucket", Workload.KEYS_10K, Workload.HOT, null, true, 3));
        // a release removes the slot's member; a charge writes the state (PSETEX) after the decision's PSETEX; a
        // give-back overwrites it in place (SETRANGE)
        cases.add(Case.settling("concurrency-take-release", SettlingContender.Kind.TAKE_RELEASE, "zrem", 1.0));
        cases.add(Case.settling("token-bucket-charge", SettlingContender.Kind.CHARGE, "psetex", 2.0));
        cases.add(Case.settling("token-bucket-give-back-part", SettlingContender.Kind.GIVE_BACK_PART, "setrange", 1.0));
        cases.add(Case.renewal("concurrency-renew-1", 1, 2_000, RENEWALS_OF_ONE));
        cases.add(Case.renewal("concurrency-renew-" + RENEWED, RENEWED, 200, RENEWALS_OF_MANY));
        return cases;
    }

    /** Measures every case: the counts on a plain redis-server, the instructions on one under callgrind. */
    static List<Figures> measure() throws Exception {
        List<Figures> out = new ArrayList<>();
        try (RedisServer redis = RedisServer.start(); RedisServer counted = RedisServer.callgrind()) {
            // the contenders and CommandCount find the benchmark Redis here
            System.setProperty("sluice.bench.redis", redis.url());
            long countNanos = 0;
            long instructionNanos = 0;
            for (Case c : cases()) {
                long t0 = System.nanoTime();
                CommandCount.Cost cost;
                try (Contender contender = c.build.on(BenchRedis.pooled(), c.counts, false)) {
                    cost = CommandCount.measure(c.name, contender, c.counts, c.threads, c.operations);
                }
                if (cost.admitted() != (c.admits ? cost.decisions() : 0)) {
                    throw new IllegalStateException(c.name + ": " + cost.admitted() + " of " + cost.decisions() + " admitted");
                }
                if (c.proof != null && Math.abs(cost.perCommand().getOrDefault(c.proof, 0.0) / c.units - c.proofPerUnit) > 0.001) {
                    throw new IllegalStateException(String.format(Locale.ROOT, "%s: %.3f %s per %s, not %s: what it settles or"
                            + " renews was not done (%s)", c.name, cost.perCommand().getOrDefault(c.proof, 0.0) / c.units, c.proof,
                            c.units > 1 ? "slot" : "request", c.proofPerUnit, cost.perCommand()));
                }
                long t1 = System.nanoTime();
                double[] instructions = instructions(counted, c);
                countNanos += t1 - t0;
                instructionNanos += System.nanoTime() - t1;
                // the script call and its TIME are paid once per round trip, not per decision
                double perCall = cost.perCommand().getOrDefault("evalsha", 0.0) + cost.perCommand().getOrDefault("eval", 0.0)
                        + cost.perCommand().getOrDefault("time", 0.0);
                out.add(new Figures(c.name, cost.roundTrips() / c.units, (cost.commands() - perCall) / c.units,
                        instructions[0] / c.units, instructions[1] / c.units));
            }
            System.out.printf(Locale.ROOT, "[guard] counts %.1f s, instructions (callgrind) %.1f s%n", countNanos / 1e9, instructionNanos / 1e9);
        }
        return out;
    }

    /** {processCommand's inclusive instructions, the server's total} per operation, one operation at a time. */
    private static double[] instructions(RedisServer counted, Case c) throws Exception {
        try (Contender contender = c.build.on(BenchRedis.pooled(counted.hostAndPort()), c.instructions, true)) {
            contender.prepare(c.instructions);
            for (int i = 0; i < c.warmup; i++) operate(contender, c);
            counted.dump();
            for (int i = 0; i < c.counted; i++) operate(contender, c);
            Path dump = counted.dump();
            return new double[]{inclusive(dump, "processCommand") / c.counted, total(dump) / c.counted};
        }
    }

    private static void operate(Contender contender, Case c) {
        if (contender.tryAcquire(0) != c.admits) {
            throw new IllegalStateException(c.name + ": an operation was not " + (c.admits ? "admitted" : "denied"));
        }
    }

    private static double total(Path dump) throws IOException {
        for (String line : Files.readAllLines(dump)) {
            if (line.startsWith("summary:") || line.startsWith("totals:")) return Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
        }
        throw new IOException("no summary in " + dump);
    }

    /** A function's inclusive instructions in a callgrind dump, as {@code callgrind_annotate --inclusive=yes} reports them. */
    private static double inclusive(Path dump, String function) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("callgrind_annotate", "--inclusive=yes", "--threshold=100", dump.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IOException("callgrind_annotate failed: " + out);
        for (String line : out.split("\n")) {
            String t = line.trim();
            if (t.contains(":" + function + " ")) return Double.parseDouble(t.substring(0, t.indexOf(' ')).replace(",", ""));
        }
        throw new IOException("no " + function + " in callgrind_annotate's output of " + dump + ":\n" + out);
    }

    /** The failures: each figure over its threshold, named with both values. */
    static List<String> check(List<Figures> figures, Properties baseline) {
        double maxTrips = Double.parseDouble(baseline.getProperty("round-trips.max", "0.2"));
        double commandSlack = Double.parseDouble(baseline.getProperty("commands.tolerance", "0.01"));
        double instructionSlack = Double.parseDouble(baseline.getProperty("instructions.tolerance", "0.05"));
        List<String> failures = new ArrayList<>();
        for (Figures f : figures) {
            double trips = Double.parseDouble(baseline.getProperty(f.name + ".round-trips.max", Double.toString(maxTrips)));
            if (!f.name.endsWith("-denied") && f.roundTrips > trips) {
                failures.add(String.format(Locale.ROOT, "%s: %.3f round trips per operation, above %s", f.name, f.roundTrips, trips));
            }
            String commands = baseline.getProperty(f.name + ".commands");
            if (commands == null) {
                failures.add(f.name + ": no " + f.name + ".commands in the baseline (measured " + f.commands + ")");
            } else if (f.commands > Double.parseDouble(commands)
                    + Double.parseDouble(baseline.getProperty(f.name + ".commands.tolerance", Double.toString(commandSlack)))) {
                failures.add(String.format(Locale.ROOT, "%s: %.3f Redis commands per operation, the baseline %s", f.name, f.commands, commands));
            }
            String instructions = baseline.getProperty(f.name + ".instructions");
            if (instructions == null) {
                failures.add(f.name + ": no " + f.name + ".instructions in the baseline (measured " + Math.round(f.instructions) + ")");
            } else if (f.instructions > Double.parseDouble(instructions) * (1 + instructionSlack)) {
                failures.add(String.format(Locale.ROOT, "%s: %.0f instructions per operation, more than %.0f%% above the baseline %s",
                        f.name, f.instructions, 100 * instructionSlack, instructions));
            }
        }
        return failures;
    }

    static String table(List<Figures> figures, Properties baseline, List<String> failures, double seconds) {
        StringWriter s = new StringWriter();
        PrintWriter w = new PrintWriter(s);
        w.printf(Locale.ROOT, "### Cost guard (issue 17, item 6): counted, not timed%s%n%n",
                Double.isNaN(seconds) ? "" : String.format(Locale.ROOT, " (%.0f s)", seconds));
        w.printf(Locale.ROOT, "Per operation: a decision; for the requests that settle (concurrency-take-release, "
                + "token-bucket-charge, token-bucket-give-back-part), a request's decision and its settlement (two script calls; "
                + "actual cost: %d taken, %d charged more or %d given back); for the renewals, one slot of a call renewing 1 or %d "
                + "slots of as many clients. Round trips and Redis commands: %d threads, %,d operations over 10,000 keys (the "
                + "requests that settle: half as many; the denied case: one exhausted key, no denied-client cache; the renewals: one "
                + "thread, as the renewer is, over the slots of 20 groups in turn). Instructions: callgrind, one operation at a time "
                + "on one client, %,d counted after %d (the requests that settle: %d; the renewals: %d and %d calls after a fifth "
                + "as many, the same slots 2 ms apart); `processCommand` inclusive (the guarded figure) and the server's total; "
                + "x token-bucket: to the decision's. Thresholds: round trips <= %s (a case may set its own), commands <= the "
                + "baseline + %s (likewise), instructions <= the baseline x (1 + %s) (bench/cost-baseline.properties).%n%n",
                SettlingContender.ESTIMATE, SettlingContender.EXTRA, SettlingContender.BACK, RENEWED, THREADS, DECISIONS, COUNTED,
                WARMUP, SETTLED, RENEWALS_OF_ONE, RENEWALS_OF_MANY, baseline.getProperty("round-trips.max", "0.2"),
                baseline.getProperty("commands.tolerance", "0.01"), baseline.getProperty("instructions.tolerance", "0.05"));
        double bucket = figures.stream().filter(f -> f.name.equals("token-bucket")).mapToDouble(Figures::instructions).findFirst()
                .orElse(Double.NaN);
        w.println("| case | round trips per operation | Redis commands per operation besides the script call and TIME (baseline) "
                + "| instructions per operation, `processCommand` (baseline) | x token-bucket | instructions per operation, whole server | |");
        w.println("|---|---:|---:|---:|---:|---:|---|");
        for (Figures f : figures) {
            boolean failed = failures.stream().anyMatch(x -> x.startsWith(f.name + ":"));
            w.printf(Locale.ROOT, "| %s | %.3f | %.2f (%s) | %,.0f (%s) | %.2f | %,.0f | %s |%n", f.name, f.roundTrips, f.commands,
                    baseline.getProperty(f.name + ".commands", "-"), f.instructions, baseline.getProperty(f.name + ".instructions", "-"),
                    f.instructions / bucket, f.totalInstructions, failed ? "**over**" : "ok");
        }
        w.println();
        w.flush();
        return s.toString();
    }

    /**
     * The baseline file {@code text} with these figures in place of its own (its comments, thresholds and
     * order kept), a case it does not hold yet added at its end.
     */
    static String baselineText(List<Figures> figures, String text) {
        Map<String, String> measured = new LinkedHashMap<>();
        for (Figures f : figures) {
            measured.put(f.name + ".commands", String.format(Locale.ROOT, "%.2f", f.commands));
            measured.put(f.name + ".instructions", String.format(Locale.ROOT, "%.0f", f.instructions));
        }
        StringBuilder b = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            int eq = line.indexOf('=');
            String key = eq > 0 && !line.startsWith("#") ? line.substring(0, eq).trim() : null;
            String value = key == null ? null : measured.remove(key);
            b.append(value == null ? line : key + " = " + value).append('\n');
        }
        b.setLength(b.length() - 1); // the split's last piece: what followed the last newline
        measured.forEach((key, value) -> b.append(key).append(" = ").append(value).append('\n'));
        return b.toString();
    }
}
