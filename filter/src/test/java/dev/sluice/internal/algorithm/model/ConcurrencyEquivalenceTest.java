package dev.sluice.internal.algorithm.model;

import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Concurrency rules ({@code algorithm=concurrency}) in the reference model ({@link ConcurrencyModel}),
 * the local engine and the Redis script give the same answers: generated sequences of requests (a
 * concurrency rule alone, or with rate rules in one atomic request, shadow rules among them), releases
 * of requests admitted earlier (sent twice now and then, as a retry underneath would), renewals of the
 * slots still held, and time moving by nothing, a little, about a third of a lease, a lease or more,
 * now and then lagging behind (another instance's clock). Every rule of every request must agree on
 * allowed, remaining, retry-after, reset, next and delay, and every renewal on whether the slot was
 * held. On the instance's clock (a fake one) and on Redis's ({@code TIME}, in real time).
 *
 * <p>{@code -Dsluice.seed=S} replays; {@code -Dsluice.concurrency.sequences=N} (default 600).
 */
class ConcurrencyEquivalenceTest {

    static final int SEQUENCES = Integer.getInteger("sluice.concurrency.sequences", 600);
    private static final long[] LEASES = {1_000, 1_500, 3_000, 30_000};

    private static JedisPooled jedis;
    /** What the local engine was given back already: it has no once key (nothing resends underneath it). */
    private static final Set<RuleDecision> localReleased = Collections.newSetFromMap(new IdentityHashMap<>());

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    /** One step: a request, a release of step {@code of}'s slots (and rates' takes), or a renewal of them. */
    private record Step(long now, List<Acquisition> request, Kind kind, int of) {
    }

    private enum Kind { REQUEST, RELEASE, RENEW }

    private record Generated(long seed, List<Rule> rules, List<Step> steps) {
        String describe(int last) {
            StringBuilder sb = new StringBuilder("seed ").append(seed).append('\n');
            for (Rule r : rules) sb.append("  rule ").append(r).append('\n');
            for (int i = 0; i <= last && i < steps.size(); i++) {
                Step s = steps.get(i);
                sb.append("  #").append(i).append(" t=").append(s.now()).append(' ').append(s.kind());
                if (s.kind() != Kind.REQUEST) sb.append(" of #").append(s.of());
                for (Acquisition a : s.request()) sb.append(' ').append(a.rule().name()).append(':').append(a.clientKey())
                        .append('x').append(a.cost());
                sb.append('\n');
            }
            return sb.toString();
        }
    }

    private static Generated generate(long seed) {
        Random rnd = new Random(seed);
        List<Rule> rules = new ArrayList<>();
        int concurrency = 1 + rnd.nextInt(2);
        for (int i = 0; i < concurrency; i++) {
            rules.add(Rule.builder("c" + i).algorithm(Algorithm.CONCURRENCY).limit(1 + rnd.nextInt(4))
                    .lease(Duration.ofMillis(LEASES[rnd.nextInt(LEASES.length)])).dryRun(rnd.nextInt(5) == 0).build());
        }
        int rates = rnd.nextInt(2);
        for (int i = 0; i < rates; i++) {
            Algorithm a = rnd.nextBoolean() ? Algorithm.TOKEN_BUCKET : Algorithm.FIXED_WINDOW;
            rules.add(Scenario.rule("r" + i, a, rnd).withDryRun(rnd.nextInt(5) == 0));
        }
        long lease = rules.get(0).windowMillis();
        int clients = 1 + rnd.nextInt(2);
        List<Step> steps = new ArrayList<>();
        long latest = ManualClock.MINUTE_BOUNDARY + rnd.nextInt(60_000);
        int count = 10 + rnd.nextInt(50);
        for (int i = 0; i < count; i++) {
            int kind = rnd.nextInt(100);
            long now;
            if (kind < 8 && i > 0) {
                now = latest - rnd.nextInt(900); // a lagging clock
            } else {
                long dt = switch (rnd.nextInt(6)) {
                    case 0, 1 -> 0;
                    case 2 -> 1 + rnd.nextInt(20);
                    case 3 -> rnd.nextLong(lease / 3 + 1);
                    case 4 -> lease - 5 + rnd.nextInt(10);
                    default -> rnd.nextLong(2 * lease + 1);
                };
                now = latest + dt;
                latest = now;
            }
            int action = rnd.nextInt(100);
            if (i > 0 && action < 35) {
                int of = i - 1 - rnd.nextInt(Math.min(i, 8));
                Step earlier = steps.get(of);
                if (earlier.kind() == Kind.REQUEST) {
                    steps.add(new Step(now, earlier.request(), action < 22 ? Kind.RELEASE : Kind.RENEW, of));
                    continue;
                }
            }
            List<Acquisition> request = new ArrayList<>();
            String client = "k" + rnd.nextInt(clients);
            for (Rule r : rules) {
                if (request.isEmpty() && r == rules.get(rules.size() - 1) || rnd.nextInt(10) < 7) {
                    long cost = r.algorithm().isConcurrency() ? 1 : Scenario.cost(r, rnd);
                    request.add(new Acquisition(r, ClientKey.parse(client), cost));
                }
            }
            steps.add(new Step(now, request, Kind.REQUEST, -1));
        }
        return new Generated(seed, rules, steps);
    }

    @Test
    void modelsLocalEngineAndRedisScriptAgreeOnSlots() {
        int[] coverage = new int[6]; // admitted, denied, released, renewed held, renewed gone, spared by another rule
        for (int i = 0; i < SEQUENCES; i++) {
            Generated g = generate(TestSeed.get() + 9_000_011L + i);
            String problem = replay(g, coverage);
            assertThat(problem).as(TestSeed.replay()).isNull();
        }
        System.out.println("concurrency equivalence: " + SEQUENCES + " sequences; slots admitted " + coverage[0] + ", denied "
                + coverage[1] + ", released " + coverage[2] + ", renewals held " + coverage[3] + ", gone " + coverage[4]
                + ", spared by another rule " + coverage[5]);
        assertThat(coverage[0]).as("admitted").isGreaterThan(SEQUENCES * 3);
        assertThat(coverage[1]).as("denied").isGreaterThan(SEQUENCES);
        assertThat(coverage[2]).as("released").isGreaterThan(SEQUENCES);
        assertThat(coverage[3]).as("renewals of slots held").isGreaterThan(SEQUENCES / 2);
        assertThat(coverage[4]).as("renewals of slots whose lease ended").isGreaterThan(SEQUENCES / 10);
        assertThat(coverage[5]).as("slots of requests another rule denied").isGreaterThan(SEQUENCES / 10);
    }

    /** As above, on Redis's clock: each step decided by the script first, the others asked at the time it read. */
    @Test
    void theyAgreeOnRedisTime() throws InterruptedException {
        int sequences = Math.max(1, SEQUENCES / 10);
        String prefix = TestRedis.uniquePrefix("concurrency-time");
        RedisEngine redis = new RedisEngine(jedis, prefix, true, dev.sluice.limiter.Clock.SYSTEM, false);
        int checked = 0;
        for (int i = 0; i < sequences; i++) {
            Generated g = generate(TestSeed.get() + 19_000_019L + i);
            Random pauses = new Random(g.seed());
            ManualClock clock = new ManualClock(0);
            Set<String> keys = new HashSet<>();
            try (LocalEngine local = new LocalEngine(clock, 1_000)) {
                Models models = new Models();
                List<List<RuleDecision>> redisTaken = new ArrayList<>();
                List<List<RuleDecision>> localTaken = new ArrayList<>();
                List<List<Object>> modelTaken = new ArrayList<>();
                for (int s = 0; s < g.steps().size(); s++) {
                    Step step = g.steps().get(s);
                    if (pauses.nextInt(8) == 0) Thread.sleep(1 + pauses.nextInt(5));
                    for (Acquisition a : step.request()) keys.add(redis.key(a.rule(), a.clientKey()));
                    if (step.kind() != Kind.REQUEST) {
                        // the slots only (a rate's give-back depends on a time the models cannot know here); leases
                        // of a second or more do not end within the few ms between this step and the last decision
                        String problem = release(step, redis, local, models, redisTaken, localTaken, modelTaken, clock,
                                new int[6], true);
                        assertThat(problem).as(() -> g.describe(g.steps().indexOf(step))).isNull();
                        redisTaken.add(List.of());
                        localTaken.add(List.of());
                        modelTaken.add(List.of());
                        continue;
                    }
                    RedisEngine.Timed timed = redis.decideTimed(step.request());
                    clock.set(timed.atMillis());
                    List<Figures> expected = models.decide(step.request(), timed.atMillis());
                    modelTaken.add(models.lastTaken());
                    Decision l = local.decide(step.request());
                    List<Figures> fromLocal = EquivalenceTest.figures(l);
                    List<Figures> fromRedis = EquivalenceTest.figures(timed.decision());
                    int at = s;
                    assertThat(fromRedis).as(() -> g.describe(at) + " at Redis's time " + timed.atMillis()).isEqualTo(expected);
                    assertThat(fromLocal).as(() -> g.describe(at)).isEqualTo(expected);
                    redisTaken.add(timed.decision().rules());
                    localTaken.add(l.rules());
                    checked++;
                }
            } finally {
                if (!keys.isEmpty()) jedis.del(keys.toArray(String[]::new));
            }
        }
        assertThat(checked).isGreaterThan(sequences * 5);
    }

    /**
     * Replays {@code g} on a fake clock (clock=local); returns the first disagreement, or null. Redis
     * forgets a key in real time, after its PX, the models on the fake clock: a key whose model state
     * has expired is deleted before the step that finds it.
     */
    private static String replay(Generated g, int[] coverage) {
        ManualClock clock = new ManualClock(g.steps().get(0).now());
        String prefix = TestRedis.uniquePrefix("concurrency-equiv");
        RedisEngine redis = new RedisEngine(jedis, prefix, false, clock, false);
        Set<String> keys = new HashSet<>();
        try (LocalEngine local = new LocalEngine(clock, 1_000)) {
            Models models = new Models();
            List<List<RuleDecision>> redisTaken = new ArrayList<>();
            List<List<RuleDecision>> localTaken = new ArrayList<>();
            List<List<Object>> modelTaken = new ArrayList<>();
            for (int s = 0; s < g.steps().size(); s++) {
                Step step = g.steps().get(s);
                clock.set(step.now());
                for (Acquisition a : step.request()) {
                    String key = redis.key(a.rule(), a.clientKey());
                    keys.add(key);
                    if (models.expired(a, step.now())) jedis.del(key);
                }
                if (step.kind() != Kind.REQUEST) {
                    String problem = release(step, redis, local, models, redisTaken, localTaken, modelTaken, clock,
                            coverage, false);
                    if (problem != null) return problem + "\n" + g.describe(s);
                    redisTaken.add(List.of());
                    localTaken.add(List.of());
                    modelTaken.add(List.of());
                    continue;
                }
                List<Figures> expected = models.decide(step.request(), step.now());
                modelTaken.add(models.lastTaken());
                Decision l = local.decide(step.request());
                Decision r = redis.decide(step.request());
                List<Figures> fromLocal = EquivalenceTest.figures(l);
                List<Figures> fromRedis = EquivalenceTest.figures(r);
                if (!expected.equals(fromLocal) || !expected.equals(fromRedis)) {
                    return "engines disagree with the model at step #" + s + "\n" + g.describe(s) + "  model: " + expected
                            + "\n  local: " + fromLocal + "\n  redis: " + fromRedis;
                }
                localTaken.add(l.rules());
                redisTaken.add(r.rules());
                boolean admitted = r.allowed();
                for (int i = 0; i < step.request().size(); i++) {
                    Acquisition a = step.request().get(i);
                    if (!a.rule().algorithm().isConcurrency()) continue;
                    Figures f = expected.get(i);
                    if (!f.allowed()) coverage[1]++;
                    else if (admitted) coverage[0]++;
                    else coverage[5]++;
                }
            }
            return null;
        } finally {
            if (!keys.isEmpty()) jedis.del(keys.toArray(String[]::new));
        }
    }

    /**
     * Releases (a give-back of every rule that took: the slots freed, the rates given back; {@code slotsOnly}:
     * the slots) or renews the slots of step {@code step.of()}; a renewal's answers must agree. Returns a
     * disagreement, or null.
     */
    private static String release(Step step, RedisEngine redis, LocalEngine local, Models models,
                                  List<List<RuleDecision>> redisTaken, List<List<RuleDecision>> localTaken,
                                  List<List<Object>> modelTaken, ManualClock clock, int[] coverage, boolean slotsOnly) {
        List<Acquisition> request = step.request();
        List<RuleDecision> byRedis = redisTaken.get(step.of());
        List<RuleDecision> byLocal = localTaken.get(step.of());
        List<Object> byModel = modelTaken.get(step.of());
        if (step.kind() == Kind.RELEASE) {
            List<Integer> back = new ArrayList<>();
            for (int i = 0; i < request.size(); i++) {
                if (!slotsOnly || request.get(i).rule().algorithm().isConcurrency()) back.add(i);
                if (byModel.get(i) != null && request.get(i).rule().algorithm().isConcurrency()) coverage[2]++;
            }
            List<Acquisition> a = back.stream().map(request::get).toList();
            redis.giveBack(a, back.stream().map(byRedis::get).toList());
            local.giveBack(a, EquivalenceTest.onceOnly(back.stream().map(byLocal::get).toList(), localReleased));
            models.giveBack(a, back.stream().map(byModel::get).toList(), clock.millis());
            return null;
        }
        List<Integer> slots = new ArrayList<>();
        for (int i = 0; i < request.size(); i++) {
            if (request.get(i).rule().algorithm().isConcurrency() && byRedis.get(i).taken()) slots.add(i);
        }
        if (slots.isEmpty()) return null;
        List<Acquisition> a = slots.stream().map(request::get).toList();
        boolean[] fromRedis = redis.renew(a, slots.stream().map(byRedis::get).toList());
        boolean[] fromLocal = local.renew(a, slots.stream().map(byLocal::get).toList());
        boolean[] expected = models.renew(a, slots.stream().map(byModel::get).toList(), clock.millis());
        if (!Arrays.equals(expected, fromRedis) || !Arrays.equals(expected, fromLocal)) {
            return "renewals disagree at t=" + clock.millis() + ": model " + Arrays.toString(expected) + ", local "
                    + Arrays.toString(fromLocal) + ", redis " + Arrays.toString(fromRedis);
        }
        for (boolean held : expected) coverage[held ? 3 : 4]++;
        return null;
    }
}
