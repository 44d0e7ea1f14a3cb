package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.util.SafeEncoder;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 17's guard in {@code mvn verify}, counted, not timed, so the machine's speed and load do not
 * change the verdict: for each algorithm (admitted, over 10,000 client keys), the token bucket
 * denied (one exhausted key) and three rules per request, {@value #DECISIONS} decisions by
 * {@value #THREADS} threads must take
 * <ul>
 *   <li>at most {@code round-trips.max} (0.2) Redis round trips per decision (the shared round
 *       trips: above it, decisions are not sharing them);</li>
 *   <li>one script call per round trip (the batch script), and at most one {@code TIME} per script
 *       call;</li>
 *   <li>no more Redis commands per decision, those its script runs besides {@code TIME}, than
 *       {@code bench/cost-baseline.properties} holds ({@code <case>.commands}).</li>
 * </ul>
 * Counted by the engine's own round trips and by {@code INFO commandstats} deltas of the tests'
 * Redis ({@link TestRedis}: {@code REDIS_URL}, else Testcontainers, else a {@code redis-server} on
 * a free port); on a Redis other clients use at the same time (a shared {@code REDIS_URL}), their
 * commands count too. The instructions per decision are {@code bench/}'s ({@code CostGuard}).
 */
class RedisCostPerDecisionTest {

    static final int THREADS = 64;
    static final int DECISIONS = 10_000;
    static final int KEYS = 10_000;

    private static final Path BASELINE = Path.of("..", "bench", "cost-baseline.properties");

    private record Case(String name, List<Rule> rules, int keys, boolean admitted) {
    }

    private record Counts(double roundTrips, double scriptCalls, double times, double commands, Map<String, Long> perCommand) {
    }

    private static Rule admitting(Algorithm algorithm) {
        long limit = algorithm == Algorithm.SLIDING_WINDOW_LOG ? Rule.MAX_LOG_LIMIT : 100_000;
        Duration window = algorithm == Algorithm.SLIDING_WINDOW_LOG ? Duration.ofSeconds(1) : Duration.ofSeconds(1_000_000);
        Duration maxDelay = algorithm == Algorithm.LEAKY_BUCKET ? window : Duration.ZERO;
        return new Rule("api", algorithm, limit, window, limit, 1, FailurePolicy.OPEN, limit, maxDelay);
    }

    private static List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        for (Algorithm a : List.of(Algorithm.TOKEN_BUCKET, Algorithm.FIXED_WINDOW, Algorithm.SLIDING_WINDOW_COUNTER,
                Algorithm.SLIDING_WINDOW_LOG, Algorithm.LEAKY_BUCKET, Algorithm.GCRA)) {
            cases.add(new Case(a.id(), List.of(admitting(a)), KEYS, true));
        }
        Rule exhausted = Rule.of("api", Algorithm.TOKEN_BUCKET, 1, Duration.ofHours(1));
        cases.add(new Case("token-bucket-denied", List.of(exhausted), 1, false));
        Rule bucket = admitting(Algorithm.TOKEN_BUCKET);
        cases.add(new Case("token-bucket-3-rules", List.of(bucket, rename(bucket, "b"), rename(bucket, "c")), KEYS, true));
        return cases;
    }

    private static Rule rename(Rule r, String name) {
        return new Rule(name, r.algorithm(), r.limit(), r.window(), r.burst(), r.cost(), r.failurePolicy(), r.fallbackLimit(),
                r.maxDelay());
    }

    @Test
    void aDecisionAt64ThreadsTakesAtMostTheBaselinesRoundTripsScriptCallsAndCommands() throws Exception {
        Properties baseline = new Properties();
        try (Reader r = Files.newBufferedReader(BASELINE, StandardCharsets.UTF_8)) {
            baseline.load(r);
        }
        double maxTrips = Double.parseDouble(baseline.getProperty("round-trips.max"));
        double slack = Double.parseDouble(baseline.getProperty("commands.tolerance"));
        TestRedis.url(); // chosen
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(16);
        pool.setJmxEnabled(false);
        List<String> failures = new ArrayList<>();
        StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                "| case | round trips | script calls | TIME | commands besides TIME (baseline) |%n"));
        try (JedisPooled jedis = new JedisPooled(new HostAndPort(TestRedis.host(), TestRedis.port()),
                DefaultJedisClientConfig.builder().socketTimeoutMillis(10_000)
                        .clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build(), pool)) {
            for (Case c : cases()) {
                RedisEngine engine = new RedisEngine(jedis, TestRedis.uniquePrefix("cost"), true, Clock.SYSTEM, false);
                run(engine, c, Math.max(DECISIONS, c.keys), false); // the scripts loaded, every key's state written
                Counts n = measure(jedis, engine, c);
                String expected = baseline.getProperty(c.name + ".commands");
                table.append(String.format(Locale.ROOT, "| %s | %.3f | %.3f | %.3f | %.3f (%s) |%n", c.name, n.roundTrips,
                        n.scriptCalls, n.times, n.commands, expected));
                if (c.admitted && n.roundTrips > maxTrips) {
                    failures.add(String.format(Locale.ROOT, "%s: %.3f round trips per decision, above %s",
                            c.name, n.roundTrips, maxTrips));
                }
                if (n.scriptCalls > n.roundTrips + 0.001) {
                    failures.add(String.format(Locale.ROOT, "%s: %.3f script calls per decision in %.3f round trips: "
                            + "more than one per round trip", c.name, n.scriptCalls, n.roundTrips));
                }
                if (n.times > n.scriptCalls + 0.001) {
                    failures.add(String.format(Locale.ROOT, "%s: %.3f TIME per decision, more than its %.3f script calls",
                            c.name, n.times, n.scriptCalls));
                }
                if (expected == null) {
                    failures.add(c.name + ": no " + c.name + ".commands in " + BASELINE);
                } else if (n.commands > Double.parseDouble(expected) + slack) {
                    failures.add(String.format(Locale.ROOT, "%s: %.3f Redis commands per decision besides TIME %s, "
                            + "the baseline %s", c.name, n.commands, n.perCommand, expected));
                }
            }
        }
        System.out.print(table);
        assertThat(failures).as("counts over " + BASELINE + "\n" + table).isEmpty();
    }

    private static Counts measure(JedisPooled jedis, RedisEngine engine, Case c) throws InterruptedException {
        Map<String, Long> before = commandCalls(jedis);
        long trips = engine.roundTrips().roundTrips();
        run(engine, c, DECISIONS, true);
        long tripsAfter = engine.roundTrips().roundTrips();
        Map<String, Long> after = commandCalls(jedis);
        Map<String, Long> delta = new HashMap<>();
        after.forEach((command, calls) -> {
            long d = calls - before.getOrDefault(command, 0L);
            if (d > 0 && !command.equals("info")) delta.put(command, d);
        });
        long scripts = delta.getOrDefault("evalsha", 0L) + delta.getOrDefault("eval", 0L);
        long times = delta.getOrDefault("time", 0L);
        long others = delta.values().stream().mapToLong(Long::longValue).sum() - scripts - times;
        double n = DECISIONS;
        return new Counts((tripsAfter - trips) / n, scripts / n, times / n, others / n, delta);
    }

    /**
     * {@code decisions} decisions of {@code c} by {@value #THREADS} threads, each walking the keys
     * from its own start; {@code check}: each must be admitted, or for a denying case denied.
     */
    private static void run(RedisEngine engine, Case c, int decisions, boolean check) throws InterruptedException {
        AtomicInteger left = new AtomicInteger(decisions);
        AtomicReference<Throwable> failed = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(THREADS);
        for (int t = 0; t < THREADS; t++) {
            int start = t * 7919 % c.keys;
            Thread thread = new Thread(() -> {
                try {
                    int k = start;
                    while (left.getAndDecrement() > 0) {
                        ClientKey client = ClientKey.parse("ip=10.0." + (k / 256) + "." + (k % 256));
                        List<Acquisition> request = new ArrayList<>(c.rules.size());
                        for (Rule r : c.rules) request.add(new Acquisition(r, client));
                        boolean allowed = engine.decide(request).allowed();
                        if (check && allowed != c.admitted) {
                            throw new IllegalStateException(c.name + ": a decision " + (allowed ? "admitted" : "denied"));
                        }
                        k = k + 1 == c.keys ? 0 : k + 1;
                    }
                } catch (Throwable e) {
                    failed.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            });
            thread.start();
        }
        done.await();
        if (failed.get() != null) throw new AssertionError(c.name + " failed", failed.get());
    }

    private static Map<String, Long> commandCalls(JedisPooled jedis) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : SafeEncoder.encode((byte[]) jedis.sendCommand(Protocol.Command.INFO, "commandstats")).split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                calls.put(line.substring(8, line.indexOf(':')), Long.parseLong(line.replaceAll("^[^:]+:calls=(\\d+),.*", "$1")));
            }
        }
        return calls;
    }
}
