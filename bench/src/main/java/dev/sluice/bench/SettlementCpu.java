package dev.sluice.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Issue 16: what a concurrency slot and a settlement cost Redis, timed, next to a token-bucket
 * decision measured in the same run on the same server: Redis CPU per operation from {@code INFO cpu}
 * deltas ({@link CommandCount}), at 64 threads over 10,000 keys, {@code --rounds} times round-robin,
 * medians with min..max, and each round's ratio to that round's decision. The operations are
 * {@link CostGuard}'s (which counts their instructions): a token-bucket decision; a request with one
 * concurrency rule, its slot taken and released; a token-bucket request with an actual cost, charged
 * more or partly given back ({@link SettlingContender}: decision and settlement, two script calls);
 * and per slot, renewals of 100 and of 1 slot per call by one thread, as the renewer makes them
 * ({@link RenewingContender}: 2,000 slots of as many clients, 20 groups in turn). Beside them, once,
 * round trips per request one request at a time (one thread): the script calls a request makes; and
 * the last round's Redis commands per operation by name. Writes {@code settle.md} and {@code settle.tsv}.
 *
 * <pre>java -Dsluice.bench.redis=redis://127.0.0.1:PORT -cp benchmarks.jar dev.sluice.bench.SettlementCpu --out DIR [--rounds 5]</pre>
 */
public final class SettlementCpu {

    static final int THREADS = 64;
    /** Decisions per measurement, after as many (CommandCount); the requests that settle: half as many, as many script calls. */
    static final int DECISIONS = 30_000;
    /** Renewal calls per measurement, of {@link CostGuard#RENEWED} slots and of one. */
    static final int RENEWALS_OF_MANY = 500;
    static final int RENEWALS_OF_ONE = 5_000;
    /** Requests per count of round trips one request at a time. */
    static final int ONE_AT_A_TIME = 2_000;
    private static final String DECISION = "token-bucket decision";

    /** One operation measured: how to build its contender, its workload, threads, operations, slots per operation. */
    private record Operation(String what, Supplier<Contender> contender, Workload workload, int threads, int operations, int units) {
    }

    /** One measurement, per operation (a renewal's: per slot); {@code perCommand}: each command's count per operation. */
    record Sample(String what, double redisCpuMicros, double perSecond, double roundTrips, double commands,
                  Map<String, Double> perCommand) {
    }

    private SettlementCpu() {
    }

    private static List<Operation> operations() {
        List<Operation> ops = new ArrayList<>();
        ops.add(new Operation(DECISION, () -> new SluiceContender(Workload.KEYS_10K, "token-bucket", true), Workload.KEYS_10K,
                THREADS, DECISIONS, 1));
        ops.add(settling("concurrency: slot taken + released", SettlingContender.Kind.TAKE_RELEASE));
        ops.add(settling("actual cost: decision + charge", SettlingContender.Kind.CHARGE));
        ops.add(settling("actual cost: decision + partial give-back", SettlingContender.Kind.GIVE_BACK_PART));
        ops.add(new Operation("concurrency: renewal, per slot, " + CostGuard.RENEWED + " per call",
                () -> new RenewingContender(BenchRedis.pooled(), Workload.KEYS_10K, CostGuard.RENEWED, 20), Workload.HOT, 1,
                RENEWALS_OF_MANY, CostGuard.RENEWED));
        ops.add(new Operation("concurrency: renewal, 1 slot per call", () -> new RenewingContender(BenchRedis.pooled(),
                Workload.KEYS_10K, 1, 20), Workload.HOT, 1, RENEWALS_OF_ONE, 1));
        return ops;
    }

    private static Operation settling(String what, SettlingContender.Kind kind) {
        return new Operation(what, () -> new SettlingContender(BenchRedis.pooled(), Workload.KEYS_10K, kind), Workload.KEYS_10K,
                THREADS, DECISIONS / 2, 1);
    }

    public static void main(String[] args) throws Exception {
        OutAndRounds arguments = OutAndRounds.parse(args, 5);
        Path out = arguments.out();
        int rounds = arguments.rounds();
        String loadBefore = loadAverage();
        Map<String, List<Sample>> samples = new LinkedHashMap<>();
        for (int round = 1; round <= rounds; round++) {
            for (Operation op : operations()) {
                Sample s = measure(op, op.threads);
                samples.computeIfAbsent(op.what, k -> new ArrayList<>()).add(s);
                System.out.printf(Locale.ROOT, "[settle round %d/%d] %-52s Redis CPU %6.2f µs  %,10.0f /s  round trips %.3f%n",
                        round, rounds, op.what, s.redisCpuMicros, s.perSecond, s.roundTrips);
            }
        }
        // script calls per request: one request at a time, each call its own round trip
        Map<String, Double> oneAtATime = new LinkedHashMap<>();
        for (Operation op : operations()) {
            if (op.threads == 1) continue; // the renewals are one thread already
            Sample s = measure(new Operation(op.what, op.contender, op.workload, 1, ONE_AT_A_TIME, op.units), 1);
            oneAtATime.put(op.what, s.roundTrips);
        }
        String loadAfter = loadAverage();
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("settle.tsv")))) {
            w.println("what\tround\tredis_cpu_us\tper_second\tround_trips\tcommands");
            samples.forEach((what, list) -> {
                for (int i = 0; i < list.size(); i++) {
                    Sample s = list.get(i);
                    w.printf(Locale.ROOT, "%s\t%d\t%.3f\t%.1f\t%.4f\t%.3f%n", what, i + 1, s.redisCpuMicros, s.perSecond, s.roundTrips,
                            s.commands);
                }
            });
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out.resolve("settle.md")))) {
            report(w, samples, oneAtATime, rounds, loadBefore, loadAfter);
        }
        System.out.println("wrote " + out.resolve("settle.md"));
    }

    private static Sample measure(Operation op, int threads) throws InterruptedException {
        try (Contender c = op.contender.get()) {
            CommandCount.Cost cost = CommandCount.measure(op.what, c, op.workload, threads, op.operations);
            if (cost.admitted() != cost.decisions()) {
                throw new IllegalStateException(op.what + ": " + cost.admitted() + " of " + cost.decisions() + " admitted");
            }
            Map<String, Double> perCommand = new TreeMap<>();
            cost.perCommand().forEach((command, n) -> perCommand.put(command, n / op.units));
            return new Sample(op.what, cost.redisCpuMicros() / op.units, cost.decisionsPerSecond() * op.units,
                    cost.roundTrips() / op.units, cost.commands() / op.units, perCommand);
        }
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static void report(PrintWriter w, Map<String, List<Sample>> samples, Map<String, Double> oneAtATime, int rounds,
                               String loadBefore, String loadAfter) {
        w.printf(Locale.ROOT, "### What a concurrency slot and a settlement cost Redis (issue 16): %d threads, 10,000 keys, "
                + "median of %d rounds (min..max)%n%n", THREADS, rounds);
        w.printf(Locale.ROOT, "Redis CPU from `INFO cpu` deltas of the run's own `redis-server` over each measurement (user + system: the "
                + "script and the network), divided by its operations: %,d token-bucket decisions, %,d requests of each other kind (two "
                + "script calls each: the decision, then the settlement at once), after as many; the renewals by one thread, as the "
                + "renewer is, %,d calls of %d slots and %,d of 1, per slot. Each round measures every operation in turn; x decision is "
                + "each round's ratio to that round's token-bucket decision. Round trips per operation on the client's sockets, at %d "
                + "threads (shared) and one request at a time (each script call a round trip). Redis commands per operation from "
                + "`INFO commandstats`, the script calls and `TIME` included. Per Redis core: 10^6 / the median CPU per operation. "
                + "Load average when the rounds began: %s; when they ended: %s.%n%n",
                DECISIONS, DECISIONS / 2, RENEWALS_OF_MANY, CostGuard.RENEWED, RENEWALS_OF_ONE, THREADS, loadBefore, loadAfter);
        List<Sample> decision = samples.get(DECISION);
        w.println("| operation | Redis CPU per operation (µs) | x decision | operations/s | round trips per operation, 64 threads "
                + "| one at a time | Redis commands per operation | per Redis core (operations/s) |");
        w.println("|---|---:|---:|---:|---:|---:|---:|---:|");
        for (Map.Entry<String, List<Sample>> e : samples.entrySet()) {
            List<Sample> s = e.getValue();
            List<Double> ratios = new ArrayList<>();
            for (int i = 0; i < s.size(); i++) ratios.add(s.get(i).redisCpuMicros / decision.get(i).redisCpuMicros);
            double cpu = median(s, Sample::redisCpuMicros);
            Double single = oneAtATime.get(e.getKey());
            w.printf(Locale.ROOT, "| %s | %.2f (%.2f..%.2f) | %.2fx (%.2f..%.2f) | %,.0f (%,.0f..%,.0f) | %.3f | %s | %.2f | %,.0f |%n",
                    e.getKey(), cpu, min(s, Sample::redisCpuMicros), max(s, Sample::redisCpuMicros), Suite.median(ratios),
                    ratios.stream().mapToDouble(Double::doubleValue).min().orElse(0), ratios.stream().mapToDouble(Double::doubleValue).max()
                            .orElse(0), median(s, Sample::perSecond), min(s, Sample::perSecond), max(s, Sample::perSecond),
                    median(s, Sample::roundTrips), single == null ? "(one thread)" : String.format(Locale.ROOT, "%.3f", single),
                    median(s, Sample::commands), 1e6 / cpu);
        }
        w.println();
        w.println("Redis commands per operation by name, the last round's (`INFO commandstats`: the script calls, `TIME` and what the "
                + "scripts run):");
        w.println();
        w.println("| operation | commands |");
        w.println("|---|---|");
        samples.forEach((what, s) -> {
            StringBuilder b = new StringBuilder();
            s.get(s.size() - 1).perCommand.forEach((command, n) -> b.append(b.length() == 0 ? "" : ", ")
                    .append(String.format(Locale.ROOT, "`%s` %.3f", command.toUpperCase(Locale.ROOT), n)));
            w.printf(Locale.ROOT, "| %s | %s |%n", what, b);
        });
        w.println();
    }

    private static double median(List<Sample> s, ToDoubleFunction<Sample> f) {
        return Suite.median(s.stream().map(f::applyAsDouble).toList());
    }

    private static double min(List<Sample> s, ToDoubleFunction<Sample> f) {
        return s.stream().mapToDouble(f).min().orElse(Double.NaN);
    }

    private static double max(List<Sample> s, ToDoubleFunction<Sample> f) {
        return s.stream().mapToDouble(f).max().orElse(Double.NaN);
    }
}
