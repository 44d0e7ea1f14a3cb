package dev.sluice.internal.redis;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The reply as decide.lua writes it: each outcome's figures packed in Redis with the script's own
 * calls (struct.pack of the same formats, the same values in the same order), read back by
 * {@link ReplyCodec} into the rules' decisions.
 */
class ReplyCodecTest {

    private static final Rule BUCKET = Rule.of("bucket", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
    private static final Rule LEAKY = Rule.builder("leaky").algorithm(Algorithm.LEAKY_BUCKET).limit(10)
            .window(Duration.ofSeconds(1)).maxDelay(Duration.ofSeconds(2)).build();
    private static final Rule GCRA = Rule.of("gcra", Algorithm.GCRA, 10, Duration.ofSeconds(1));
    private static final Rule WINDOW = Rule.of("window", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));
    private static final Rule SLOTS = Rule.builder("slots").algorithm(Algorithm.CONCURRENCY).limit(3).build();

    private static JedisPooled jedis;

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void close() {
        jedis.close();
    }

    /** The reply of a Lua body that packs it (struct.pack as encode, as decide.lua names it). */
    private static ReplyCodec reply(String body) {
        String script = "local encode = struct.pack\n" + body;
        return new ReplyCodec((byte[]) jedis.eval(script.getBytes(StandardCharsets.UTF_8), List.of(), List.<byte[]>of()));
    }

    @Test
    void aDenialIsReadWithItsRetryAfterAsItsNext() {
        // decide.lua, one rule that denies: encode('<ddddd', 0, remaining_now, retry, reset_now, now)
        ReplyCodec reply = reply("return encode('<ddddd', 0, 3, 1500, 42000, 1764500000123)");
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_000_123L);
        assertThat(reply.next(BUCKET, 1, 7, 60_000)).isEqualTo(
                new RuleDecision(BUCKET, false, 3, 1500, 42_000, 1500, 0, null, RuleDecision.Source.REDIS, 60_000));
    }

    @Test
    void anAdmissionThatTookNothingHasNoTake() {
        // decide.lua, one rule that admits a request another rule denied: encode('<ddddd', 1, remaining_now, reset_now, next_now, now)
        RuleDecision d = reply("return encode('<ddddd', 1, 99, 600, 600, 5)").next(BUCKET, 1, 7, 60_000);
        assertThat(d).isEqualTo(new RuleDecision(BUCKET, true, 99, 0, 600, 600, 0, null, RuleDecision.Source.REDIS, 60_000));
        assertThat(d.taken()).isFalse();
    }

    @Test
    void aBucketsTakeHasItsFractionAndRefundCounter() {
        // decide.lua: encode('<dddddddd', 2, remaining_after, taken_ms, reset_after, next_after, taken_fraction, taken_given, now)
        RuleDecision d = reply("return encode('<dddddddd', 2, 98, 1764500001200, 1200, 600, 37, 4, 9)").next(BUCKET, 1, 7, 60_000);
        assertThat(d).isEqualTo(new RuleDecision(BUCKET, true, 98, 0, 1200, 600, 0,
                new RuleDecision.Take(1_764_500_001_200L, 37, 4, 7), RuleDecision.Source.REDIS, 60_000));
        assertThat(d.take().token()).isEqualTo(7);
    }

    @Test
    void aLeakyBucketsTakeHasItsDelayBeforeItsFraction() {
        // decide.lua: encode('<ddddddddd', 2, remaining_after, taken_ms, reset_after, next_after, delay, taken_fraction, taken_given, now)
        RuleDecision d = reply("return encode('<ddddddddd', 2, 8, 1764500000300, 300, 100, 250, 3, 1, 9)").next(LEAKY, 1, 5, 1000);
        assertThat(d).isEqualTo(new RuleDecision(LEAKY, true, 8, 0, 300, 100, 250,
                new RuleDecision.Take(1_764_500_000_300L, 3, 1, 5), RuleDecision.Source.REDIS, 1000));
    }

    @Test
    void aWindowsTakeIsItsTimeAlone() {
        // decide.lua: encode('<dddddd', 2, remaining_after, taken_ms, reset_after, next_after, now)
        assertThat(reply("return encode('<dddddd', 2, 4, 1764500060000, 59000, 59000, 9)").next(WINDOW, 1, 5, 60_000))
                .isEqualTo(new RuleDecision(WINDOW, true, 4, 0, 59_000, 59_000, 0,
                        new RuleDecision.Take(1_764_500_060_000L, 0, 0, 5), RuleDecision.Source.REDIS, 60_000));
    }

    @Test
    void aSlotsTakeIsSentAsABucketsWithNoFractionNorRefunds() {
        // decide.lua, algorithm 7 (concurrency.lua sets taken_fraction, taken_given = 0, 0)
        ReplyCodec reply = reply("return encode('<dddddddd', 2, 2, 1764500030000, 1000, 1000, 0, 0, 9)");
        RuleDecision.Take take = reply.next(SLOTS, 1, -3, SLOTS.windowMillis()).take();
        assertThat(take).isEqualTo(new RuleDecision.Take(1_764_500_030_000L, 0, 0, -3));
        assertThat(take.token()).as("the slot's own token: its member, which its release and renewals name").isEqualTo(-3);
        assertThat(reply.decidedAt()).isEqualTo(9);
    }

    @Test
    void severalRulesAreReadInTheirOrderEachByItsOutcome() {
        // decide.lua's table of several rules: an admitted request's bucket took, its shadow window denied
        ReplyCodec reply = reply("return encode('<ddddddd' .. 'dddd' .. 'd', 2, 98, 1764500001200, 1200, 600, 37, 4,"
                + " 0, 0, 20000, 40000, 1764500000000)");
        assertThat(reply.next(BUCKET, 1, 7, 60_000).take()).isEqualTo(new RuleDecision.Take(1_764_500_001_200L, 37, 4, 7));
        assertThat(reply.next(WINDOW, 1, 8, 60_000)).isEqualTo(
                new RuleDecision(WINDOW, false, 0, 20_000, 40_000, 20_000, 0, null, RuleDecision.Source.REDIS, 60_000));
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_000_000L);
    }

    @Test
    void aBucketsTakeAnsweredWithTheStateItWroteHasTheFiguresTheScriptWouldHaveSent() {
        // token-bucket.lua, one rule, skew 0: the state PSETEX wrote is the reply (decide.lua's state_answers):
        // 5,927,655 units left of 6,000,000 (98 tokens and 47,655 units), counted at the time decided at
        ReplyCodec reply = reply("return encode('<Bi7I6I7I7', 4, 5927655, 1764500000000, 60000, 4)");
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_000_000L);
        // next: (60,000 - 47,655) / 100 rounded up; reset: 72,345 / 100 rounded up; taken at 723 ms and 45 units
        assertThat(reply.next(BUCKET, 1, 7, 60_000)).isEqualTo(new RuleDecision(BUCKET, true, 98, 0, 724, 124, 0,
                new RuleDecision.Take(1_764_500_000_723L, 45, 4, 7), RuleDecision.Source.REDIS, 60_000));
    }

    @Test
    void aGcrasTakeAnsweredWithTheStateItWroteHasTheFiguresTheScriptWouldHaveSent() {
        // gcra.lua, one rule, its stamp the time decided at: the TAT 3,456 units (ms x 10) ahead of it
        ReplyCodec reply = reply("return encode('<BdI7I4I7', 6, 1764500000000, 3456, 10, 2)");
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_000_000L);
        // remaining: (10,000 - 3,456) / 1,000; reset: 3,456 / 10 up; next: (3,456 - 10,000 + 7 x 1,000) / 10 up
        assertThat(reply.next(GCRA, 1, 9, 1000)).isEqualTo(new RuleDecision(GCRA, true, 6, 0, 346, 46, 0,
                new RuleDecision.Take(1_764_500_000_345L, 6, 2, 9), RuleDecision.Source.REDIS, 1000));
    }

    @Test
    void theScriptAnswersATakeOfOneBucketWithItsStateAndALaggingClocksWithFigures() {
        for (Rule rule : List.of(BUCKET, GCRA)) {
            byte[] key = ("sluice-test:reply:" + rule.name() + ":" + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
            try {
                byte[] first = decideOne(key, new RequestCodec(RequestCodec.NOW_BYTES + RequestCodec.RULE_BYTES,
                        RequestCodec.REDIS_TIME).rule(RequestCodec.rule(rule), RequestCodec.Mode.ENFORCING, 1).bytes());
                assertThat(first[0]).as(rule.name() + ": a take on Redis's clock, answered with the state written").isNotZero();
                ReplyCodec reply = new ReplyCodec(first);
                long decidedAt = reply.decidedAt();
                assertThat(decidedAt).isCloseTo(System.currentTimeMillis(), org.assertj.core.api.Assertions.within(60_000L));
                RuleDecision d = reply.next(rule, 1, 1, rule.windowMillis());
                long interval = rule.windowMillis() / rule.limit(); // one request's worth of refill
                assertThat(d).isEqualTo(new RuleDecision(rule, true, rule.limit() - 1, 0, interval, interval, 0,
                        new RuleDecision.Take(decidedAt + interval, 0, 0, 1), RuleDecision.Source.REDIS, rule.windowMillis()));

                // an instance whose clock is 50 ms behind the state's: the state does not hold its time, figures come back
                byte[] lagging = decideOne(key, new RequestCodec(RequestCodec.NOW_BYTES + RequestCodec.RULE_BYTES,
                        decidedAt - 50).rule(RequestCodec.rule(rule), RequestCodec.Mode.ENFORCING, 1).bytes());
                assertThat(lagging[0]).as(rule.name() + ": a reply of figures").isZero();
                RuleDecision second = new ReplyCodec(lagging).next(rule, 1, 2, rule.windowMillis());
                assertThat(second).isEqualTo(rule == BUCKET
                        // the bucket counts from the state's time: two tokens gone, 50 ms later than its clock says
                        ? new RuleDecision(rule, true, 98, 0, 50 + 1200, 50 + 600, 0,
                                new RuleDecision.Take(decidedAt + 1200, 0, 0, 2), RuleDecision.Source.REDIS, 60_000)
                        // the TAT 150 ms ahead of this clock, then 100 more: 7 left, the take 250 ms on
                        : new RuleDecision(rule, true, 7, 0, 250, 50, 0,
                                new RuleDecision.Take(decidedAt - 50 + 250, 0, 0, 2), RuleDecision.Source.REDIS, 1000));
            } finally {
                jedis.del(key);
            }
        }
    }

    /** decide-one.lua as RedisEngine sends it, for one key and request. */
    private static byte[] decideOne(byte[] key, byte[] request) {
        return decideOne(List.of(key), request);
    }

    private static byte[] decideOne(List<byte[]> keys, byte[] request) {
        return (byte[]) jedis.eval(RedisEngine.SCRIPT.getBytes(StandardCharsets.UTF_8), keys, List.of(request));
    }

    @Test
    void aWindowsTakeAnsweredWithItsStateAndTheTimeHasTheFiguresTheScriptWouldHaveSent() {
        // fixed-window.lua: a count of 3 that ends at ...060,000, decided at ...001,000
        ReplyCodec window = reply("return encode('<Bdd', 1, 1764500060000, 3) .. encode('<d', 1764500001000)");
        assertThat(window.decidedAt()).isEqualTo(1_764_500_001_000L);
        assertThat(window.next(WINDOW, 1, 5, 60_000)).isEqualTo(new RuleDecision(WINDOW, true, 2, 0, 59_000, 59_000, 0,
                new RuleDecision.Take(1_764_500_060_000L, 0, 0, 5), RuleDecision.Source.REDIS, 60_000));
        // sliding-window-counter.lua, 10 per second: 4 counted in the window ending at ...001,000, 6 in the one
        // before, 250 ms into it: 6 x 750 ms weigh 4.5 requests, so 10 - 4.5 - 4 = 1 whole left; a second one
        // when the previous count weighs 4 at most (6 x 666 ms of 1,000 left: at 334 ms, 84 ms on)
        ReplyCodec counter = reply("return encode('<Bddd', 2, 1764500001000, 4, 6) .. encode('<d', 1764500000250)");
        Rule rule = Rule.of("counter", Algorithm.SLIDING_WINDOW_COUNTER, 10, Duration.ofSeconds(1));
        assertThat(counter.decidedAt()).isEqualTo(1_764_500_000_250L);
        assertThat(counter.next(rule, 1, 3, 1000)).isEqualTo(new RuleDecision(rule, true, 1, 0, 1750, 84, 0,
                new RuleDecision.Take(1_764_500_001_000L, 0, 0, 3), RuleDecision.Source.REDIS, 1000));
    }

    @Test
    void aLeakyBucketsTakeAnsweredWithTheStateItWroteHasItsDelay() {
        // leaky-bucket.lua, 10 per second, a queue of 10 (burst) and at most 2 s of delay, capped at the 1 s a full
        // queue takes to drain: the next free slot 4,500 units (ms x 10) ahead of the time decided at, after a
        // request of 2 (2,000 units): the 2,500 before it, a 250 ms delay
        ReplyCodec reply = reply("return encode('<BdI7I4I7', 5, 1764500000000, 4500, 10, 3)");
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_000_000L);
        // remaining: (10,000 - 4,500) / 1,000 = 5, and by the delay (10,000 - 4,500) / 1,000 + 1 = 6: 5; reset 450 ms;
        // next: room for 6 is min(10,000 - 6,000, 10,000 - 5,000) = 4,000, (4,500 - 4,000) / 10 = 50 ms
        assertThat(reply.next(LEAKY, 2, 9, 1000)).isEqualTo(new RuleDecision(LEAKY, true, 5, 0, 450, 50, 250,
                new RuleDecision.Take(1_764_500_000_450L, 0, 3, 9), RuleDecision.Source.REDIS, 1000));
    }

    /**
     * The script's own check of the state reply: two sets of keys go through the same decisions, one by
     * requests of one or two rules (answered with their states where they can be), the other by requests
     * of the same rules and a sliding-window log that never denies, on a key of its own (its state is a
     * set: every rule answers with figures, worked out by the fragments): random figures, costs, and times
     * on an instance's clock that move on by up to a window and now and then back (a lagging instance).
     * Each decision, read by this class from either shape, and each state written, must be the same.
     */
    @Test
    void aTakeAnsweredWithItsStateIsDecidedAsTheSameTakeAnsweredWithFigures() {
        java.util.Random random = new java.util.Random(17);
        Rule never = Rule.of("never", Algorithm.SLIDING_WINDOW_LOG, 10_000, Duration.ofSeconds(1));
        String prefix = "sluice-test:reply-equal:" + System.nanoTime() + ":";
        List<Algorithm> algorithms = List.of(Algorithm.FIXED_WINDOW, Algorithm.SLIDING_WINDOW_COUNTER,
                Algorithm.TOKEN_BUCKET, Algorithm.LEAKY_BUCKET, Algorithm.GCRA);
        java.util.Map<Algorithm, Integer> stateReplies = new java.util.EnumMap<>(Algorithm.class);
        java.util.Map<Algorithm, Integer> takes = new java.util.EnumMap<>(Algorithm.class);
        int severalByState = 0;
        int severalTook = 0;
        try {
            for (int trial = 0; trial < 90; trial++) {
                int n = trial < 60 ? 1 : 2; // then requests of two rules, every pair of algorithms
                List<Rule> rules = new java.util.ArrayList<>();
                for (int r = 0; r < n; r++) {
                    rules.add(randomRule(random, "r" + trial + "-" + r,
                            algorithms.get((r == 0 ? trial : trial / algorithms.size()) % algorithms.size()), trial + r));
                }
                List<byte[]> answering = new java.util.ArrayList<>();
                List<byte[]> withFigures = new java.util.ArrayList<>();
                for (int r = 0; r < n; r++) {
                    answering.add((prefix + trial + ":state:" + r).getBytes(StandardCharsets.UTF_8));
                    withFigures.add((prefix + trial + ":figures:" + r).getBytes(StandardCharsets.UTF_8));
                }
                withFigures.add((prefix + trial + ":never").getBytes(StandardCharsets.UTF_8));
                long windowMs = rules.get(0).windowMillis();
                long now = 1_764_500_000_000L + random.nextInt(1_000_000);
                for (int i = 0; i < 40; i++) {
                    now += random.nextInt(8) == 0 ? -random.nextInt(1 + (int) windowMs) : random.nextInt(1 + (int) windowMs / 2);
                    long[] costs = new long[n];
                    RequestCodec one = new RequestCodec(RequestCodec.NOW_BYTES + n * RequestCodec.RULE_BYTES, now);
                    RequestCodec more = new RequestCodec(RequestCodec.NOW_BYTES + (n + 1) * RequestCodec.RULE_BYTES, now);
                    for (int r = 0; r < n; r++) {
                        costs[r] = 1 + random.nextInt((int) Math.min(3, rules.get(r).burst()));
                        one.rule(RequestCodec.rule(rules.get(r)), RequestCodec.Mode.ENFORCING, costs[r]);
                        more.rule(RequestCodec.rule(rules.get(r)), RequestCodec.Mode.ENFORCING, costs[r]);
                    }
                    more.rule(RequestCodec.rule(never), RequestCodec.Mode.ENFORCING, 1);
                    byte[] first = decideOne(answering, one.bytes());
                    ReplyCodec byState = new ReplyCodec(first);
                    ReplyCodec byFigures = new ReplyCodec(decideOne(withFigures, more.bytes()));
                    String at = rules + ", request " + i + " at " + now + ", costs " + java.util.Arrays.toString(costs);
                    boolean took = true;
                    for (int r = 0; r < n; r++) {
                        Rule rule = rules.get(r);
                        RuleDecision d = byState.next(rule, costs[r], i, rule.windowMillis());
                        assertThat(d).as(at).isEqualTo(byFigures.next(rule, costs[r], i, rule.windowMillis()));
                        assertThat(jedis.get(answering.get(r))).as(at + ": the state written").isEqualTo(jedis.get(withFigures.get(r)));
                        took &= d.taken();
                        if (n == 1 && d.taken()) takes.merge(rule.algorithm(), 1, Integer::sum);
                    }
                    byState.end();
                    byFigures.next(never, 1, i, never.windowMillis()); // the log's: figures
                    byFigures.end();
                    if (n > 1 && took) severalTook++;
                    if (first[0] != 0) {
                        assertThat(took).as(at + ": only a take from every rule is answered with states").isTrue();
                        assertThat(byState.decidedAt()).as(at).isEqualTo(now);
                        if (n == 1) stateReplies.merge(rules.get(0).algorithm(), 1, Integer::sum);
                        else severalByState++;
                    }
                }
            }
        } finally {
            java.util.Set<String> left = jedis.keys(prefix + "*");
            if (!left.isEmpty()) jedis.del(left.toArray(String[]::new));
        }
        for (Algorithm algorithm : algorithms) {
            int taken = takes.getOrDefault(algorithm, 0);
            if (algorithm.isWindow()) {
                assertThat(stateReplies.get(algorithm)).as(algorithm + ": every take answered with its state and the time")
                        .isEqualTo(taken).isGreaterThan(100);
            } else {
                assertThat(stateReplies.getOrDefault(algorithm, 0)).as(algorithm + ": takes answered with their state, of "
                        + taken).isGreaterThan(taken / 2).isLessThan(taken); // the others by figures: a lagging clock
            }
        }
        assertThat(severalByState).as("requests of two rules answered with their states, of " + severalTook + " that took")
                .isGreaterThan(severalTook / 2).isLessThan(severalTook);
    }

    /** A rule of {@code algorithm} with random figures: small limits or large, windows of a few ms or many. */
    private static Rule randomRule(java.util.Random random, String name, Algorithm algorithm, int seed) {
        long limit = 1 + random.nextInt(seed % 2 == 0 ? 12 : 1000);
        long windowMs = 1 + random.nextInt(seed % 3 == 0 ? 50 : 20_000);
        Rule.Builder builder = Rule.builder(name).algorithm(algorithm).limit(limit).window(Duration.ofMillis(windowMs));
        if (!algorithm.isWindow()) builder.burst(1 + random.nextInt((int) limit * 2));
        if (algorithm == Algorithm.LEAKY_BUCKET) builder.maxDelay(Duration.ofMillis(random.nextInt(3 * (int) windowMs + 1)));
        return builder.build();
    }

    @Test
    void theStatesOfSeveralRulesAreReadOneAfterTheOtherThenTheTime() {
        // decide.lua, two rules that took: the bucket's state, the window's, then the time (a window's is among them)
        ReplyCodec reply = reply("return encode('<Bi7I6I7I7', 4, 5927655, 1764500001000, 60000, 4)"
                + " .. encode('<Bdd', 1, 1764500060000, 3) .. encode('<d', 1764500001000)");
        assertThat(reply.decidedAt()).isEqualTo(1_764_500_001_000L);
        assertThat(reply.next(BUCKET, 1, 7, 60_000).take()).isEqualTo(new RuleDecision.Take(1_764_500_001_723L, 45, 4, 7));
        assertThat(reply.next(WINDOW, 1, 8, 60_000)).isEqualTo(new RuleDecision(WINDOW, true, 2, 0, 59_000, 59_000, 0,
                new RuleDecision.Take(1_764_500_060_000L, 0, 0, 8), RuleDecision.Source.REDIS, 60_000));
        reply.end();
    }

    @Test
    void aReplyNotReadToItsEndIsAnError() {
        // a window's state, then a bucket's, without the time the window needs: the window would read the bucket's last bytes
        ReplyCodec noTime = reply("return encode('<Bdd', 1, 1764500060000, 3) .. encode('<Bi7I6I7I7', 4, 5927655, 1764500001000, 60000, 4)");
        noTime.next(WINDOW, 1, 8, 60_000);
        noTime.next(BUCKET, 1, 7, 60_000);
        assertThatThrownBy(noTime::end).isInstanceOf(IllegalStateException.class).hasMessageContaining("45 bytes, 45 read");
        // figures for two rules where the request had one
        ReplyCodec more = reply("return encode('<dddd' .. 'dddd' .. 'd', 1, 99, 600, 600, 0, 3, 1500, 42000, 5)");
        more.next(BUCKET, 1, 7, 60_000);
        assertThatThrownBy(more::end).isInstanceOf(IllegalStateException.class).hasMessageContaining("32 read for its rules where 64");
    }

    @Test
    void aStateOfAnotherRulesAlgorithmIsAnError() {
        assertThatThrownBy(() -> reply("return encode('<BdI7I4I7', 6, 1764500000000, 3456, 10, 2)").next(BUCKET, 1, 1, 60_000))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("tagged 6");
    }

    @Test
    void anOutcomeTheScriptNeverWritesIsAnError() {
        assertThatThrownBy(() -> reply("return encode('<ddddd', 3, 0, 0, 0, 0)").next(BUCKET, 1, 1, 60_000))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("outcome 3");
    }
}
