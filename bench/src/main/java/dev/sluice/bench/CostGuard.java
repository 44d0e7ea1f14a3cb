package dev.sluice.bench;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import redis.clients.jedis.JedisPooled;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;

/**
 * Issue 17, item 6: the guards that do not depend on the machine's speed. Counted, not timed:
 * <ul>
 *   <li><b>round trips per decision</b> at 64 threads over 10,000 keys (shared round trips: a
 *       decision that finds two round trips in flight waits for the next; above 0.2 they are not
 *       being shared), on the client's sockets ({@link RoundTrips});</li>
 *   <li><b>Redis commands per decision</b> at 64 threads over 10,000 keys, from {@code INFO
 *       commandstats} deltas: those its script runs besides {@code TIME} (the script call and its
 *       {@code TIME} are paid once per round trip): must not rise;</li>
 *   <li><b>instructions per decision</b> Redis runs for one decision, counted by valgrind's callgrind
 *       on a {@code redis-server} of its own, decisions sent one at a time by Sluice's engine itself
 *       (so the figure follows whatever the engine sends: a new codec or script needs no change
 *       here): the instructions under {@code processCommand} (executing the command: the script and
 *       the commands it calls, the reply built; the socket read and write and the parsing of the
 *       request are outside it, and so is the event loop's timer), which is deterministic to a few
 *       instructions; the server's total per decision beside it (what {@code bench/script-cost.sh}
 *       reports, ±1% from the event loop). Must not rise by more than 5%.</li>
 * </ul>
 * Every algorithm admitted (one rule: {@link Workload#KEYS_10K}'s for the counts, {@link Workload#HOT}'s
 * for the instructions), the token bucket denied (the denied-client cache off, so every decision
 * reaches Redis), and the token bucket with three rules per request. The thresholds and baseline
 * figures are in {@code bench/cost-baseline.properties}: a change that lowers a figure lowers it
 * there in the same commit ({@code --write-baseline}), so the guard holds the gain.
 *
 * <p>Starts its own {@code redis-server} and a second one under valgrind, both on free loopback
 * ports. About 20 s on two cores.
 *
 * <pre>java -cp benchmarks.jar dev.sluice.bench.CostGuard [--baseline bench/cost-baseline.properties]
 *     [--out DIR] [--write-baseline FILE]</pre>
 * Exit status 1 when a figure is over its threshold. {@code CostGuardTest} runs the same check in
 * {@code mvn -Pbench -pl bench -am test}.
 */
public final class CostGuard {

    /** Decisions per count at 64 threads (after as many to open the connections and create the keys). */
    static final int DECISIONS = 20_000;
    static final int THREADS = 64;
    /** Decisions per instruction count, one at a time, after {@link #WARMUP} (the script loaded, the key created). */
    static final int COUNTED = 1_000; // with WARMUP, within the log's limit: every decision admitted
    static final int WARMUP = 200;

    /** One case's figures. NaN where not measured. */
    record Figures(String name, double roundTrips, double commands, double instructions, double totalInstructions) {
    }

    /**
     * A case: which contender, on which workload for the counts and for the instructions (one key:
     * its rule, or {@code instructionRule} where the workload's would make the count depend on timing).
     */
    private record Case(String name, String algorithm, Workload counts, Workload instructions, Rule instructionRule,
                        boolean deniedCache, int rules) {
        Rule ruleForInstructions() {
            return instructionRule != null ? instructionRule : Workload.rule(algorithm, instructions);
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
            Files.writeString(write, baselineText(figures, baseline));
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
            cases.add(new Case(algorithm, algorithm, Workload.KEYS_10K, Workload.HOT,
                    algorithm.equals("sliding-window-log") ? LOG_FOR_INSTRUCTIONS : null, true, 1));
        }
        cases.add(new Case("token-bucket-denied", "token-bucket", Workload.EXHAUSTED, Workload.EXHAUSTED, null, false, 1));
        cases.add(new Case("token-bucket-3-rules", "token-bucket", Workload.KEYS_10K, Workload.HOT, null, true, 3));
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
                try (Contender contender = new SluiceContender(c.counts, c.algorithm, c.deniedCache, c.rules, true)) {
                    cost = CommandCount.measure(c.name, contender, c.counts, THREADS, DECISIONS);
                }
                boolean denied = c.counts == Workload.EXHAUSTED;
                if (cost.admitted() != (denied ? 0 : cost.decisions())) {
                    throw new IllegalStateException(c.name + ": " + cost.admitted() + " of " + cost.decisions() + " admitted");
                }
                long t1 = System.nanoTime();
                double[] instructions = instructions(counted, c);
                countNanos += t1 - t0;
                instructionNanos += System.nanoTime() - t1;
                // the script call and its TIME are paid once per round trip, not per decision
                double perCall = cost.perCommand().getOrDefault("evalsha", 0.0) + cost.perCommand().getOrDefault("eval", 0.0)
                        + cost.perCommand().getOrDefault("time", 0.0);
                out.add(new Figures(c.name, cost.roundTrips(), cost.commands() - perCall, instructions[0], instructions[1]));
            }
            System.out.printf(Locale.ROOT, "[guard] counts %.1f s, instructions (callgrind) %.1f s%n", countNanos / 1e9, instructionNanos / 1e9);
        }
        return out;
    }

    /** {processCommand's inclusive instructions, the server's total} per decision, one decision at a time. */
    private static double[] instructions(RedisServer counted, Case c) throws Exception {
        JedisPooled jedis = BenchRedis.pooled(counted.hostAndPort());
        try (Contender contender = new SluiceContender(jedis, c.instructions, c.ruleForInstructions(), c.deniedCache, c.rules)) {
            contender.prepare(c.instructions);
            boolean admit = c.instructions != Workload.EXHAUSTED;
            for (int i = 0; i < WARMUP; i++) decide(contender, admit, c);
            counted.dump();
            for (int i = 0; i < COUNTED; i++) decide(contender, admit, c);
            Path dump = counted.dump();
            return new double[]{inclusive(dump, "processCommand") / COUNTED, total(dump) / COUNTED};
        }
    }

    private static void decide(Contender contender, boolean admit, Case c) {
        if (contender.tryAcquire(0) != admit) throw new IllegalStateException(c.name + ": a decision was not " + (admit ? "admitted" : "denied"));
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
            if (!f.name.endsWith("-denied") && f.roundTrips > maxTrips) {
                failures.add(String.format(Locale.ROOT, "%s: %.3f round trips per decision at %d threads, above %.2f", f.name, f.roundTrips, THREADS, maxTrips));
            }
            String commands = baseline.getProperty(f.name + ".commands");
            if (commands == null) {
                failures.add(f.name + ": no " + f.name + ".commands in the baseline (measured " + f.commands + ")");
            } else if (f.commands > Double.parseDouble(commands)
                    + Double.parseDouble(baseline.getProperty(f.name + ".commands.tolerance", Double.toString(commandSlack)))) {
                failures.add(String.format(Locale.ROOT, "%s: %.3f Redis commands per decision, the baseline %s", f.name, f.commands, commands));
            }
            String instructions = baseline.getProperty(f.name + ".instructions");
            if (instructions == null) {
                failures.add(f.name + ": no " + f.name + ".instructions in the baseline (measured " + Math.round(f.instructions) + ")");
            } else if (f.instructions > Double.parseDouble(instructions) * (1 + instructionSlack)) {
                failures.add(String.format(Locale.ROOT, "%s: %.0f instructions per decision, more than %.0f%% above the baseline %s",
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
        w.printf(Locale.ROOT, "Round trips and Redis commands per decision: %d threads, %,d decisions over 10,000 keys (the denied case: one "
                + "exhausted key, no denied-client cache). Instructions: callgrind, one decision at a time, %,d counted after %d; "
                + "`processCommand` inclusive (the guarded figure) and the server's total. Thresholds: round trips <= %s, commands <= "
                + "the baseline + %s (a case may set its own), instructions <= the baseline x (1 + %s) (bench/cost-baseline.properties).%n%n",
                THREADS, DECISIONS, COUNTED, WARMUP, baseline.getProperty("round-trips.max", "0.2"),
                baseline.getProperty("commands.tolerance", "0.01"), baseline.getProperty("instructions.tolerance", "0.05"));
        w.println("| case | round trips per decision | Redis commands per decision besides the script call and TIME (baseline) | instructions per decision, `processCommand` (baseline) | instructions per decision, whole server | |");
        w.println("|---|---:|---:|---:|---:|---|");
        for (Figures f : figures) {
            boolean failed = failures.stream().anyMatch(x -> x.startsWith(f.name + ":"));
            w.printf(Locale.ROOT, "| %s | %.3f | %.2f (%s) | %,.0f (%s) | %,.0f | %s |%n", f.name, f.roundTrips, f.commands,
                    baseline.getProperty(f.name + ".commands", "-"), f.instructions, baseline.getProperty(f.name + ".instructions", "-"),
                    f.totalInstructions, failed ? "**over**" : "ok");
        }
        w.println();
        w.flush();
        return s.toString();
    }

    /** A baseline file holding these figures and the given file's thresholds. */
    static String baselineText(List<Figures> figures, Properties thresholds) {
        StringBuilder b = new StringBuilder();
        b.append("# CostGuard's baseline (bench/src/main/java/dev/sluice/bench/CostGuard.java): counted per decision, not timed.\n")
                .append("# A change that lowers a figure lowers it here in the same commit (CostGuard --write-baseline FILE).\n")
                .append("round-trips.max = ").append(thresholds.getProperty("round-trips.max", "0.2")).append('\n')
                .append("commands.tolerance = ").append(thresholds.getProperty("commands.tolerance", "0.01")).append('\n')
                .append("instructions.tolerance = ").append(thresholds.getProperty("instructions.tolerance", "0.05")).append('\n');
        for (Figures f : figures) {
            b.append(String.format(Locale.ROOT, "%s.commands = %.2f%n", f.name, f.commands));
            String tolerance = thresholds.getProperty(f.name + ".commands.tolerance");
            if (tolerance != null) b.append(f.name).append(".commands.tolerance = ").append(tolerance).append('\n');
            b.append(String.format(Locale.ROOT, "%s.instructions = %.0f%n", f.name, f.instructions));
        }
        return b.toString();
    }
}
