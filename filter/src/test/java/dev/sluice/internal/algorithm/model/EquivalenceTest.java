package dev.sluice.internal.algorithm.model;

import dev.sluice.testing.Rates;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reference models, the local engine and the Redis script give the same answers: thousands
 * of generated request sequences (random algorithms, parameters, costs, clients, multi-rule
 * requests, lagging clocks) replayed through all three, requiring the same allowed, remaining,
 * retry-after, reset, next and delay for every rule of every request. No rounding is tolerated: all
 * three round durations up to the next whole millisecond and counts down to whole tokens. About a
 * quarter of the rules are shadow rules ({@code rule.<r>.mode=dry-run}), which decide and take like
 * the others but whose denial refuses nothing. About one step in seven gives back what an earlier
 * step took from some of its rules ({@code rule.<r>.count}), with other requests in between, and
 * probes the states given back with requests no rule admits.
 *
 * <p>Three suites: small rules on the instance's clock ({@code clock=local}, where a fake clock
 * drives everything and lags); rules at the bounds Sluice accepts (limits up to 10^9, windows up
 * to 30 days, costs up to the capacity); and small rules on Redis's clock ({@code clock=redis}),
 * in real time, where the script reads {@code TIME} and reports the time it decided at (checked
 * against {@code TIME} read just before and after), which the local engine and the models are
 * then asked at.
 *
 * <p>The seed is fresh for every run and printed; {@code -Dsluice.seed=S} replays a run, and a
 * failure prints the seed and the sequence. {@code -Dsluice.equivalence.sequences=N} (default
 * 1500; a third of that at large magnitudes, a fifth on the Redis clock) changes the length.
 */
class EquivalenceTest {

    static final int SEQUENCES = Integer.getInteger("sluice.equivalence.sequences", 1500);
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

    /** The client of the suites that share this harness ({@link CalendarEquivalenceTest}). */
    static JedisPooled jedis() {
        return jedis;
    }

    @Test
    void modelsLocalEngineAndRedisScriptGiveTheSameAnswers() {
        Coverage coverage = replayAll(SEQUENCES, 0, Scenario.Magnitude.SMALL, 3, 60);
        // the sequences exercise what they claim to, so agreement is not vacuous
        for (Algorithm a : Rates.ALL) {
            assertThat(coverage.admitted[a.ordinal()]).as("%s admitted", a).isGreaterThan(SEQUENCES / 20);
            assertThat(coverage.denied[a.ordinal()]).as("%s denied", a).isGreaterThan(SEQUENCES / 20);
            assertThat(coverage.givenBack[a.ordinal()]).as("%s given back", a).isGreaterThan(SEQUENCES / 20);
        }
        assertThat(coverage.delayed).as("leaky-bucket requests delayed").isGreaterThan(SEQUENCES / 50);
        assertThat(coverage.spared).as("admitting rules of denied multi-rule requests").isGreaterThan(SEQUENCES / 20);
        assertThat(coverage.shadowDeniedInAdmitted).as("shadow rules denying requests the others admit").isGreaterThan(SEQUENCES / 20);
        assertThat(coverage.lagging).as("requests from a lagging clock").isGreaterThan(SEQUENCES / 5);
        assertThat(coverage.charged).as("actual costs charged past what was taken").isGreaterThan(SEQUENCES / 10);
        assertThat(coverage.settledLess).as("give-backs of actual costs and of whole costs").isGreaterThan(SEQUENCES / 10);
    }

    @Test
    void theyAgreeAtTheLargestMagnitudesSluiceAccepts() {
        int sequences = Math.max(1, SEQUENCES / 3);
        Coverage coverage = replayAll(sequences, 1_000_003, Scenario.Magnitude.LARGE, 3, 40);
        for (Algorithm a : Rates.ALL) {
            assertThat(coverage.admitted[a.ordinal()]).as("%s admitted", a).isGreaterThan(sequences / 20);
            assertThat(coverage.denied[a.ordinal()]).as("%s denied", a).isGreaterThan(sequences / 20);
        }
        assertThat(coverage.largeCosts).as("admitted costs of a million or more").isGreaterThan(sequences / 20);
        assertThat(coverage.largeLimits).as("decisions of limits of a million or more").isGreaterThan(sequences);
        assertThat(coverage.longWindows).as("decisions of windows of a day or more").isGreaterThan(sequences);
    }

    /**
     * Plans and reloads: each rule has two or three sets of figures under one name (now and then of
     * another algorithm), requests use the rule's current set or another plan's; the client's state
     * is read in the figures of each request as each algorithm defines (docs/algorithms.md).
     */
    @Test
    void theyAgreeWhenAClientsFiguresChange() {
        int sequences = Math.max(1, SEQUENCES / 3);
        Coverage coverage = new Coverage();
        for (Scenario.Magnitude magnitude : Scenario.Magnitude.values()) {
            for (int i = 0; i < sequences; i++) {
                Scenario scenario = Scenario.generateChangingFigures(TestSeed.get() + 3_000_009 + magnitude.ordinal() * 100_003L + i,
                        magnitude, 3, 40);
                coverage.add(replayUntilAgreedOrFailed(scenario));
            }
        }
        System.out.println("equivalence with changing figures: " + 2 * sequences + " sequences, " + coverage);
        for (Algorithm a : Rates.ALL) {
            assertThat(coverage.admitted[a.ordinal()]).as("%s admitted", a).isGreaterThan(sequences / 10);
            assertThat(coverage.denied[a.ordinal()]).as("%s denied", a).isGreaterThan(sequences / 20);
            assertThat(coverage.changedFigures[a.ordinal()]).as("%s decisions under other figures than the state's", a)
                    .isGreaterThan(sequences / 2);
        }
    }

    /**
     * Scenarios that once found a disagreement, replayed on every run. -992714581877495483: a token
     * bucket whose window alternates; a refund made under the short window was counted in that
     * window's units by the engines and then read, at a later give-back under the long window, as
     * almost nothing: the give-back could leave the client better off than if its request had never
     * happened. The refund counters now count whole tokens (whole ms for GCRA and the leaky bucket).
     * 6047236530509948793: below.
     */
    @Test
    void theyAgreeOnScenariosThatOnceDisagreed() {
        Coverage coverage = replayUntilAgreedOrFailed(
                Scenario.generateChangingFigures(-992714581877495483L, Scenario.Magnitude.LARGE, 3, 40));
        assertThat(coverage.givenBack[Algorithm.TOKEN_BUCKET.ordinal()]).as("token-bucket given back").isPositive();
        // 6047236530509948793: a bucket that filled up under fast figures expired, a new one was written
        // under slow ones, and a take of the old one was given back into it; the model kept the old
        // state's refund counter, the engines start a new state's at 0 (and so give nothing back)
        coverage = replayUntilAgreedOrFailed(
                Scenario.generateChangingFigures(6047236530509948793L, Scenario.Magnitude.LARGE, 3, 40));
        assertThat(coverage.givenBack[Algorithm.TOKEN_BUCKET.ordinal()]).as("token-bucket given back").isPositive();
    }

    @Test
    void theyAgreeOnTheRedisClock() throws InterruptedException {
        int sequences = Math.max(1, SEQUENCES / 5);
        Coverage coverage = new Coverage();
        RedisEngine redis = new RedisEngine(jedis, TestRedis.uniquePrefix("equiv-redis-clock"), true, new ManualClock(0), false);
        for (int i = 0; i < sequences; i++) {
            Scenario scenario = Scenario.generate(TestSeed.get() + 2_000_006 + i, null, 3, 30);
            String mismatch = replayOnTheRedisClock(redis, scenario, coverage);
            if (mismatch != null) throw new AssertionError(TestSeed.replay() + ": " + mismatch);
        }
        System.out.println("equivalence on the Redis clock: " + sequences + " sequences, " + coverage);
        for (Algorithm a : Rates.ALL) {
            assertThat(coverage.admitted[a.ordinal()]).as("%s admitted", a).isGreaterThan(sequences / 10);
            assertThat(coverage.denied[a.ordinal()]).as("%s denied", a).isGreaterThan(sequences / 20);
            assertThat(coverage.givenBack[a.ordinal()]).as("%s given back", a).isGreaterThan(sequences / 20);
        }
        assertThat(coverage.spared).as("admitting rules of denied multi-rule requests").isGreaterThan(sequences / 20);
    }

    /** Replays {@code sequences} generated scenarios on the instance's clock; fails on the first disagreement. */
    private static Coverage replayAll(int sequences, long seedOffset, Scenario.Magnitude magnitude, int maxRules, int maxSteps) {
        Coverage coverage = new Coverage();
        for (int i = 0; i < sequences; i++) {
            Scenario scenario = Scenario.generate(TestSeed.get() + seedOffset + i, null, magnitude, maxRules, maxSteps);
            coverage.add(replayUntilAgreedOrFailed(scenario));
        }
        System.out.println("equivalence (" + magnitude + "): " + sequences + " sequences, " + coverage);
        return coverage;
    }

    /** Replays {@code scenario} on the fake clock, again if it disagreed after outlasting Redis's expiry margin in real time. */
    private static Coverage replayUntilAgreedOrFailed(Scenario scenario) {
        for (int attempt = 1; ; attempt++) {
            long started = System.nanoTime();
            Coverage run = new Coverage();
            String mismatch = replay(scenario, run);
            long realMs = (System.nanoTime() - started) / 1_000_000;
            if (mismatch == null) {
                return run;
            }
            if (realMs <= MAX_REAL_MS || attempt == 3) {
                throw new AssertionError(TestSeed.replay() + ": " + mismatch);
            }
        }
    }

    /** What the sequences exercised. */
    static final class Coverage {
        final int[] admitted = new int[Algorithm.values().length];
        final int[] denied = new int[Algorithm.values().length];
        final int[] changedFigures = new int[Algorithm.values().length];
        final int[] givenBack = new int[Algorithm.values().length];
        int delayed;
        int spared;
        int shadowDeniedInAdmitted;
        int lagging;
        int requests;
        int largeCosts;
        int largeLimits;
        int longWindows;

        void add(Coverage o) {
            for (int i = 0; i < admitted.length; i++) {
                admitted[i] += o.admitted[i];
                denied[i] += o.denied[i];
                changedFigures[i] += o.changedFigures[i];
                givenBack[i] += o.givenBack[i];
            }
            delayed += o.delayed;
            spared += o.spared;
            shadowDeniedInAdmitted += o.shadowDeniedInAdmitted;
            lagging += o.lagging;
            requests += o.requests;
            largeCosts += o.largeCosts;
            largeLimits += o.largeLimits;
            longWindows += o.longWindows;
            charged += o.charged;
            settledLess += o.settledLess;
        }

        int charged;
        int settledLess;

        void countSettled(Settled settled) {
            for (boolean c : settled.charges()) {
                if (c) charged++;
                else settledLess++;
            }
        }

        /** Counts the rules of a give-back that had taken something to give back. */
        void countGiveBack(List<Acquisition> request, List<Object> taken) {
            for (int i = 0; i < request.size(); i++) {
                if (taken.get(i) != null) givenBack[request.get(i).rule().algorithm().ordinal()]++;
            }
        }

        void count(List<Acquisition> request, List<Figures> figures) {
            boolean admitted = true;
            for (int i = 0; i < request.size(); i++) {
                admitted &= figures.get(i).allowed() || request.get(i).rule().dryRun();
            }
            for (int i = 0; i < request.size(); i++) {
                Acquisition a = request.get(i);
                Figures f = figures.get(i);
                int algorithm = a.rule().algorithm().ordinal();
                if (f.allowed()) this.admitted[algorithm]++;
                else denied[algorithm]++;
                if (f.delayMs() > 0) delayed++;
                if (f.allowed() && !admitted) spared++;
                if (!f.allowed() && a.rule().dryRun() && admitted && request.size() > 1) shadowDeniedInAdmitted++;
                if (admitted && a.cost() >= 1_000_000) largeCosts++;
                if (a.rule().limit() >= 1_000_000) largeLimits++;
                if (a.rule().windowMillis() >= 86_400_000) longWindows++;
            }
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder().append(requests).append(" requests;");
            for (Algorithm a : Rates.ALL) {
                sb.append(' ').append(a.id()).append(' ').append(admitted[a.ordinal()]).append('/').append(denied[a.ordinal()]);
            }
            sb.append(" (admitted/denied rule decisions); given back:");
            for (Algorithm a : Rates.ALL) sb.append(' ').append(a.id()).append(' ').append(givenBack[a.ordinal()]);
            sb.append(';');
            if (Arrays.stream(changedFigures).sum() > 0) {
                sb.append(" read under other figures:");
                for (Algorithm a : Rates.ALL) sb.append(' ').append(a.id()).append(' ').append(changedFigures[a.ordinal()]);
                sb.append(';');
            }
            return sb.append(' ').append(delayed).append(" delayed, ").append(spared)
                    .append(" admitting rules of denied requests, ").append(shadowDeniedInAdmitted)
                    .append(" shadow rules denying admitted requests, ").append(lagging).append(" from a lagging clock, ")
                    .append(largeCosts).append(" admitted costs >= 10^6, ").append(largeLimits).append(" limits >= 10^6, ")
                    .append(longWindows).append(" windows >= 1 day, ").append(charged).append(" charges, ")
                    .append(settledLess).append(" give-backs settled").toString();
        }
    }

    /**
     * Replays {@code scenario} on the fake clock; returns a description of the first disagreement, or
     * null. Redis expires keys in real time, far behind the fake clock: a key whose model state has
     * expired on the fake clock is deleted before the request that finds it (an expired state is only
     * visible when the figures changed: otherwise it is back to full).
     */
    static String replay(Scenario scenario, Coverage coverage) {
        ManualClock clock = new ManualClock(scenario.steps.get(0).now());
        String prefix = TestRedis.uniquePrefix("equiv");
        RedisEngine redis = new RedisEngine(jedis, prefix, false, clock, false);
        Set<String> keys = new HashSet<>();
        try (RateLimiter local = new LocalEngine(clock, 1_000)) {
            Models models = new Models();
            List<Decided> decided = new ArrayList<>();
            Set<RuleDecision> localGivenBack = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            long latest = Long.MIN_VALUE;
            for (int s = 0; s < scenario.steps.size(); s++) {
                Scenario.Step step = scenario.steps.get(s);
                clock.set(step.now());
                if (step.now() < latest) coverage.lagging++;
                latest = Math.max(latest, step.now());
                coverage.requests++;
                for (Acquisition a : step.acquisitions()) {
                    String key = redis.key(a.rule(), a.clientKey());
                    keys.add(key);
                    if (models.expired(a, step.now())) jedis.del(key);
                }
                List<Acquisition> request = step.acquisitions();
                if (step.isGiveBack()) {
                    Decided of = decided.get(step.giveBackOf());
                    coverage.countGiveBack(request, of.pick(of.model, step.indices()));
                    Settled settled = Settled.of(step, of.pick(of.model, step.indices()));
                    coverage.countSettled(settled);
                    local.settle(onceOnlySettled(settled.settlements(of.pick(of.local, step.indices())), localGivenBack));
                    redis.settle(settled.settlements(of.pick(of.redis, step.indices())));
                    models.settle(settled.request(), settled.of(of.pick(of.model, step.indices())), settled.charges(), step.now());
                    request = probes(request);
                }
                List<Figures> expected = models.decide(request, step.now());
                List<Object> modelTaken = models.lastTaken();
                Decision local_ = local.decide(request);
                Decision redis_ = redis.decide(request);
                List<Figures> fromLocal = figures(local_);
                List<Figures> fromRedis = figures(redis_);
                if (!expected.equals(fromLocal) || !expected.equals(fromRedis)) {
                    return "engines disagree with the model at step #" + s + (step.isGiveBack() ? " (the give-back's probes)" : "")
                            + "\n" + scenario.describe(s) + "  model: " + expected + "\n  local: " + fromLocal + "\n  redis: " + fromRedis;
                }
                decided.add(new Decided(local_.rules(), redis_.rules(), modelTaken));
                if (!step.isGiveBack()) coverage.count(request, expected);
            }
            for (int i = 0; i < coverage.changedFigures.length; i++) coverage.changedFigures[i] += models.changedFigures[i];
            return null;
        } finally {
            jedis.del(keys.toArray(String[]::new));
        }
    }

    /**
     * Replays {@code scenario}'s requests in real time on Redis's clock (its times ignored; now and
     * then a few ms pass, so that windows of 10 ms and more turn and buckets refill): each request
     * is decided by the script first, then by the local engine and the models at the time the
     * script read. Returns the first disagreement, or null.
     */
    static String replayOnTheRedisClock(RedisEngine redis, Scenario scenario, Coverage coverage) throws InterruptedException {
        Random pauses = new Random(scenario.seed);
        ManualClock clock = new ManualClock(0);
        Set<String> keys = new HashSet<>();
        try (RateLimiter local = new LocalEngine(clock, 1_000)) {
            Models models = new Models();
            List<Decided> decided = new ArrayList<>();
            Set<RuleDecision> localGivenBack = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            for (int s = 0; s < scenario.steps.size(); s++) {
                Scenario.Step step = scenario.steps.get(s);
                if (pauses.nextInt(10) == 0) Thread.sleep(1 + pauses.nextInt(12)); // time passing is the scenario here
                for (Acquisition a : step.acquisitions()) {
                    keys.add(redis.key(a.rule(), a.clientKey()));
                }
                List<Acquisition> request = step.acquisitions();
                if (step.isGiveBack()) {
                    Decided of = decided.get(step.giveBackOf());
                    coverage.countGiveBack(request, of.pick(of.model, step.indices()));
                    Settled settled = Settled.of(step, of.pick(of.model, step.indices()));
                    coverage.countSettled(settled);
                    long at = redis.settleTimed(settled.settlements(of.pick(of.redis, step.indices())));
                    if (at != Long.MIN_VALUE) {
                        clock.set(at);
                        local.settle(onceOnlySettled(settled.settlements(of.pick(of.local, step.indices())), localGivenBack));
                        models.settle(settled.request(), settled.of(of.pick(of.model, step.indices())), settled.charges(), at);
                    }
                    request = probes(request);
                }
                long before = TestRedis.timeMillis(jedis);
                RedisEngine.Timed timed = redis.decideTimed(request);
                long after = TestRedis.timeMillis(jedis);
                if (timed.atMillis() < before || timed.atMillis() > after) {
                    return "the script decided at " + timed.atMillis() + ", not within Redis's TIME around the call ["
                            + before + ", " + after + "]";
                }
                clock.set(timed.atMillis());
                List<Figures> fromRedis = figures(timed.decision());
                List<Figures> expected = models.decide(request, timed.atMillis());
                List<Object> modelTaken = models.lastTaken();
                Decision local_ = local.decide(request);
                List<Figures> fromLocal = figures(local_);
                coverage.requests++;
                if (!expected.equals(fromLocal) || !expected.equals(fromRedis)) {
                    return "engines disagree with the model at step #" + s + (step.isGiveBack() ? " (the give-back's probes)" : "")
                            + " at Redis's time " + timed.atMillis() + " (on the Redis clock the scenario's times below are not used)\n"
                            + scenario.describe(s) + "  model: " + expected + "\n  local: " + fromLocal + "\n  redis: " + fromRedis;
                }
                decided.add(new Decided(local_.rules(), timed.decision().rules(), modelTaken));
                if (!step.isGiveBack()) coverage.count(request, expected);
            }
            return null;
        } finally {
            if (!keys.isEmpty()) jedis.del(keys.toArray(String[]::new));
        }
    }

    /**
     * What a give-back step settles, per acquisition that took (by the models' account, which the engines
     * agree with): its whole cost given back, or the difference between the actual cost it stated and its
     * cost, charged or given back (none when they are equal); {@code request} holds each with its amount.
     */
    record Settled(List<Acquisition> request, boolean[] charges, int[] at) {
        static Settled of(Scenario.Step step, List<Object> modelTaken) {
            List<Acquisition> request = new ArrayList<>();
            List<Boolean> charges = new ArrayList<>();
            List<Integer> at = new ArrayList<>();
            for (int i = 0; i < step.acquisitions().size(); i++) {
                if (modelTaken.get(i) == null) continue;
                Acquisition a = step.acquisitions().get(i);
                long actual = step.actual() == null ? -1 : step.actual()[i];
                if (actual < 0) {
                    request.add(a);
                    charges.add(false);
                } else if (actual != a.cost()) {
                    request.add(new Acquisition(a.rule(), a.clientKey(), Math.abs(actual - a.cost())));
                    charges.add(actual > a.cost());
                } else {
                    continue;
                }
                at.add(i);
            }
            boolean[] c = new boolean[charges.size()];
            for (int i = 0; i < c.length; i++) c[i] = charges.get(i);
            return new Settled(request, c, at.stream().mapToInt(Integer::intValue).toArray());
        }

        /** The settlements of {@code taken} (one engine's decisions of the step's acquisitions), those that took. */
        List<Settlement> settlements(List<RuleDecision> taken) {
            List<Settlement> out = new ArrayList<>();
            for (int k = 0; k < at.length; k++) {
                RuleDecision t = taken.get(at[k]);
                if (t != null && t.taken()) out.add(new Settlement(request.get(k), t, charges[k]));
            }
            return out;
        }

        /** The models' takes, in the order of {@code request}. */
        List<Object> of(List<Object> modelTaken) {
            List<Object> out = new ArrayList<>(at.length);
            for (int i : at) out.add(modelTaken.get(i));
            return out;
        }
    }

    /** What one step's decision took, as each engine and the models tell it, for a later give-back. */
    /**
     * Once only: a take given back again (a scenario may give one back twice, as a retry underneath
     * would send it) reaches Redis and the models as it is, where it changes nothing, and the local
     * engine, which has no retries underneath and no once key, as taking nothing.
     */
    static List<RuleDecision> onceOnly(List<RuleDecision> picked, Set<RuleDecision> given) {
        List<RuleDecision> out = new ArrayList<>(picked.size());
        for (RuleDecision d : picked) {
            out.add(d == null || given.add(d) ? d : new RuleDecision(d.rule(), d.allowed(), 0, 0, 0, 0, d.source()));
        }
        return out;
    }

    /** {@link #onceOnly} for settlements: those whose take was settled before are left out (the local engine has no once key). */
    static List<Settlement> onceOnlySettled(List<Settlement> settlements, Set<RuleDecision> given) {
        List<Settlement> out = new ArrayList<>(settlements.size());
        for (Settlement s : settlements) {
            if (given.add(s.taken())) out.add(s);
        }
        return out;
    }

    private record Decided(List<RuleDecision> local, List<RuleDecision> redis, List<Object> model) {
        <T> List<T> pick(List<T> all, int[] indices) {
            List<T> out = new ArrayList<>(indices.length);
            for (int i : indices) out.add(all.get(i));
            return out;
        }
    }

    /** Requests no rule can admit, for the rules and clients of {@code request}: they take nothing and tell each state's figures. */
    private static List<Acquisition> probes(List<Acquisition> request) {
        return request.stream().map(a -> new Acquisition(a.rule(), a.clientKey(), a.rule().capacity() + 1)).toList();
    }

    static List<Figures> figures(Decision d) {
        List<Figures> out = new ArrayList<>();
        for (RuleDecision r : d.rules()) {
            out.add(new Figures(r.allowed(), r.remaining(), r.retryAfterMs(), r.resetMs(), r.nextMs(), r.delayMs(),
                    r.windowMs()));
        }
        return out;
    }
}
