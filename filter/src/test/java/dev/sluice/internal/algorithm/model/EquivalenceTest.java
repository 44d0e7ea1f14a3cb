package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference models, the local engine and the Redis script give the same answers: thousands
 * of generated request sequences (random algorithms, parameters, costs, clients, multi-rule
 * requests, lagging clocks) replayed through all three, requiring the same allowed, remaining,
 * retry-after, reset, next and delay for every rule of every request. No rounding is tolerated: all
 * three round durations up to the next whole millisecond and counts down to whole tokens.
 *
 * <p>{@code -Dsluice.equivalence.sequences=N} (default 1500) and {@code -Dsluice.equivalence.seed=S}
 * change the run; a failure prints the seed and the sequence.
 */
class EquivalenceTest {

    static final int SEQUENCES = Integer.getInteger("sluice.equivalence.sequences", 1500);
    static final long SEED = Long.getLong("sluice.equivalence.seed", 20_250_601L);
    /**
     * Redis expires keys in real time, the scenario runs on a fake clock: a key whose state is
     * back to full only in fake time could expire early if a sequence took longer than the expiry
     * margin in real time. Such a slow run is replayed rather than failed.
     */
    static final long MAX_REAL_MS = 900;

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    @Test
    void modelsLocalEngineAndRedisScriptGiveTheSameAnswers() {
        Coverage coverage = new Coverage();
        for (int i = 0; i < SEQUENCES; i++) {
            Scenario scenario = Scenario.generate(SEED + i, null, 3, 60);
            for (int attempt = 1; ; attempt++) {
                long started = System.nanoTime();
                Coverage run = new Coverage();
                String mismatch = replay(scenario, run);
                long realMs = (System.nanoTime() - started) / 1_000_000;
                if (mismatch == null) {
                    coverage.add(run);
                    break;
                }
                if (realMs <= MAX_REAL_MS || attempt == 3) {
                    throw new AssertionError(mismatch);
                }
            }
        }
        System.out.println("equivalence: " + SEQUENCES + " sequences, " + coverage);
        // the sequences exercise what they claim to, so agreement is not vacuous
        for (Algorithm a : Algorithm.values()) {
            assertThat(coverage.admitted[a.ordinal()]).as("%s admitted", a).isGreaterThan(SEQUENCES / 20);
            assertThat(coverage.denied[a.ordinal()]).as("%s denied", a).isGreaterThan(SEQUENCES / 20);
        }
        assertThat(coverage.delayed).as("leaky-bucket requests delayed").isGreaterThan(SEQUENCES / 50);
        assertThat(coverage.spared).as("admitting rules of denied multi-rule requests").isGreaterThan(SEQUENCES / 20);
        assertThat(coverage.lagging).as("requests from a lagging clock").isGreaterThan(SEQUENCES / 5);
    }

    /** What the sequences exercised. */
    static final class Coverage {
        final int[] admitted = new int[Algorithm.values().length];
        final int[] denied = new int[Algorithm.values().length];
        int delayed;
        int spared;
        int lagging;
        int requests;

        void add(Coverage o) {
            for (int i = 0; i < admitted.length; i++) {
                admitted[i] += o.admitted[i];
                denied[i] += o.denied[i];
            }
            delayed += o.delayed;
            spared += o.spared;
            lagging += o.lagging;
            requests += o.requests;
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder().append(requests).append(" requests;");
            for (Algorithm a : Algorithm.values()) {
                sb.append(' ').append(a.id()).append(' ').append(admitted[a.ordinal()]).append('/').append(denied[a.ordinal()]);
            }
            return sb.append(" (admitted/denied rule decisions); ").append(delayed).append(" delayed, ").append(spared)
                    .append(" admitting rules of denied requests, ").append(lagging).append(" from a lagging clock").toString();
        }
    }

    /** Replays {@code scenario}; returns a description of the first disagreement, or null. */
    static String replay(Scenario scenario, Coverage coverage) {
        ManualClock clock = new ManualClock(scenario.steps.get(0).now());
        String prefix = TestRedis.uniquePrefix("equiv");
        RedisEngine redis = new RedisEngine(jedis, prefix, false, clock, false);
        Set<String> keys = new HashSet<>();
        try (RateLimiter local = new LocalEngine(clock, 1_000)) {
            Map<String, Model> models = new HashMap<>();
            long latest = Long.MIN_VALUE;
            for (int s = 0; s < scenario.steps.size(); s++) {
                Scenario.Step step = scenario.steps.get(s);
                clock.set(step.now());
                if (step.now() < latest) coverage.lagging++;
                latest = Math.max(latest, step.now());
                coverage.requests++;
                List<Model> stepModels = new ArrayList<>();
                List<Long> costs = new ArrayList<>();
                List<Long> windows = new ArrayList<>();
                for (Acquisition a : step.acquisitions()) {
                    stepModels.add(models.computeIfAbsent(a.rule().name() + "/" + a.clientKey(), k -> Model.of(a.rule())));
                    costs.add(a.cost());
                    windows.add(a.rule().windowMillis());
                    keys.add(redis.key(a.rule(), a.clientKey()));
                }
                List<Figures> expected = Figures.decide(stepModels, costs, windows, step.now());
                List<Figures> fromLocal = figures(local.decide(step.acquisitions()));
                List<Figures> fromRedis = figures(redis.decide(step.acquisitions()));
                if (!expected.equals(fromLocal) || !expected.equals(fromRedis)) {
                    return "engines disagree with the model at step #" + s + "\n" + scenario.describe(s)
                            + "  model: " + expected + "\n  local: " + fromLocal + "\n  redis: " + fromRedis;
                }
                boolean admitted = expected.stream().allMatch(Figures::allowed);
                for (int i = 0; i < expected.size(); i++) {
                    Figures f = expected.get(i);
                    int algorithm = step.acquisitions().get(i).rule().algorithm().ordinal();
                    if (f.allowed()) coverage.admitted[algorithm]++;
                    else coverage.denied[algorithm]++;
                    if (f.delayMs() > 0) coverage.delayed++;
                    if (f.allowed() && !admitted) coverage.spared++;
                }
            }
            return null;
        } finally {
            jedis.del(keys.toArray(String[]::new));
        }
    }

    static List<Figures> figures(Decision d) {
        List<Figures> out = new ArrayList<>();
        for (RuleDecision r : d.rules()) {
            out.add(new Figures(r.allowed(), r.remaining(), r.retryAfterMs(), r.resetMs(), r.nextMs(), r.delayMs()));
        }
        return out;
    }
}
