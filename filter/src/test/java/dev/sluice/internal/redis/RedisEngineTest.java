package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;

import java.net.URI;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** What the Redis engine adds to the algorithms: key layout, TTLs, the script's life, clocks, failures. */
class RedisEngineTest {

    private static JedisPooled jedis;
    private final ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
    private final String prefix = TestRedis.uniquePrefix("engine");

    @BeforeAll
    static void connect() {
        jedis = new JedisPooled(URI.create(TestRedis.url()));
    }

    @AfterAll
    static void disconnect() {
        jedis.close();
    }

    private static RuleDecision ask(RedisEngine engine, Rule rule, String client, long cost) {
        return engine.decide(List.of(new Acquisition(rule, ClientKey.parse(client), cost))).rules().get(0);
    }

    /**
     * Once only, for a cost settled after the response: a charge sent twice (a resend underneath) charges
     * once, on every algorithm that settles a cost.
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER", "TOKEN_BUCKET", "GCRA"})
    void aChargeSentTwiceChargesOnce(Algorithm algorithm) {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.builder("charged").algorithm(algorithm).limit(100).window(Duration.ofMinutes(1)).build();
        ClientKey client = ClientKey.parse("ip=192.0.2.10");
        Acquisition a = new Acquisition(rule, client, 10);
        Decision d = engine.decide(List.of(a));
        Settlement charge = Settlement.ofActualCost(a, d.rules().get(0), 40);

        engine.settle(List.of(charge));
        engine.settle(List.of(charge));

        RuleDecision after = engine.decide(List.of(new Acquisition(rule, client, 1))).rules().get(0);
        assertThat(after.remaining()).as("%s: 40 and 1 taken, not 70 and 1", algorithm).isEqualTo(59);
        assertThat(jedis.pttl(engine.key(rule, client) + ":once")).as("the charge's token stays a minute")
                .isBetween(59_000L, 61_000L);
    }

    /**
     * A rule that gives back most requests (count=404 on a window of an hour) keeps a minute of tokens
     * in its once key, not a window of them: resends underneath come within seconds (found by an
     * attacker's review of 0.3: 20,000 requests given back left 20,000 tokens, 2.3 MB, for 1.5 hours).
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"FIXED_WINDOW", "SLIDING_WINDOW_COUNTER", "TOKEN_BUCKET", "GCRA"})
    void aLongWindowsGiveBacksKeepTheirTokensAMinute(Algorithm algorithm) {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.builder("hourly").algorithm(algorithm).limit(5).window(Duration.ofHours(1)).build();
        ClientKey client = ClientKey.parse("ip=192.0.2.9");
        String once = engine.key(rule, client) + ":once";
        List<Acquisition> request = List.of(new Acquisition(rule, client));
        for (int i = 0; i < 50; i++) { // ten times the limit, each given back: all admitted
            Decision d = engine.decide(request);
            assertThat(d.allowed()).as("request %d, the others given back", i).isTrue();
            engine.giveBack(request, d.rules());
            clock.advance(100);
        }
        assertThat(jedis.zcard(once)).as("the 50 tokens of the last 5 s").isEqualTo(50);
        assertThat(jedis.pttl(once)).as("a minute and the margin at most, not the hour").isBetween(55_000L, 61_000L);

        clock.advance(60_000);
        Decision d = engine.decide(request);
        engine.giveBack(request, d.rules());
        assertThat(jedis.zcard(once)).as("a minute later only the newest token is left").isEqualTo(1);
    }

    /**
     * Once only: a give-back sent twice (what a call resent after a dropped connection, or a cluster
     * client's retry, sends) gives back once, on every algorithm. In 0.2 the windows took the cost off
     * twice and the buckets undid the take, then gave back once more within their bound.
     */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = "CONCURRENCY", mode = EnumSource.Mode.EXCLUDE)
    void aGiveBackSentTwiceGivesBackOnce(Algorithm algorithm) {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule.Builder b = Rule.builder("once").algorithm(algorithm).limit(10).window(Duration.ofMinutes(1));
        Rule rule = (algorithm == Algorithm.LEAKY_BUCKET ? b.maxDelay(Duration.ofMinutes(1)) : b).build();
        ClientKey client = ClientKey.parse("ip=192.0.2.9");
        List<Acquisition> request = List.of(new Acquisition(rule, client, 3));
        engine.decide(request);
        clock.advance(1);
        Decision second = engine.decide(request);
        long remaining = second.rules().get(0).remaining();

        engine.giveBack(request, second.rules());
        engine.giveBack(request, second.rules());

        RuleDecision after = engine.decide(List.of(new Acquisition(rule, client, 1))).rules().get(0);
        assertThat(after.remaining()).as("given back once: 3, then 1 taken").isLessThanOrEqualTo(remaining + 3 - 1);
        assertThat(jedis.keys(prefix + "{once:*")).as("the state and its once key")
                .containsExactlyInAnyOrder(engine.key(rule, client), engine.key(rule, client) + ":once");
    }

    /**
     * A concurrency take sent twice under the same token (a Cluster call resent after its connection
     * dropped past Redis's answer) takes its own slot again instead of being refused by it: found in a
     * review of 0.3, where a client of limit 1 was refused for a whole lease by its own lost take.
     */
    @Test
    void aConcurrencyTakeSentAgainIsNotRefusedByItsOwnSlot() {
        Rule exports = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(1).build();
        String key = new RedisEngine(jedis, prefix, false, clock, false).key(exports, ClientKey.parse("ip=192.0.2.30"));
        byte[] request = new RequestCodec(RequestCodec.NOW_BYTES + RequestCodec.ruleSize(RequestCodec.Mode.ENFORCING, false, true),
                clock.millis()).rule(RequestCodec.rule(exports), RequestCodec.Mode.ENFORCING, 1).slot(42L).bytes();
        java.util.function.Function<byte[], Boolean> admitted = argument -> new ReplyCodec((byte[]) jedis.eval(
                RedisEngine.SCRIPT.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                List.of(key.getBytes(java.nio.charset.StandardCharsets.UTF_8)), List.of(argument)))
                .next(exports, 1, 0, exports.windowMillis()).allowed();

        assertThat(admitted.apply(request)).as("taken").isTrue();
        assertThat(admitted.apply(request)).as("the same take again").isTrue();
        assertThat(jedis.zcard(key)).as("one slot, its lease renewed").isEqualTo(1);
        byte[] another = request.clone();
        another[another.length - 8] ^= 1; // another request's token
        assertThat(admitted.apply(another)).as("another request: the slot is taken").isFalse();
    }

    @Test
    void aSlotsKeyLivesAsLongAsItsLatestLeaseAndNoLonger() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule longLease = Rule.builder("slots").algorithm(Algorithm.CONCURRENCY).limit(3).lease(Duration.ofSeconds(60)).build();
        Rule shortLease = Rule.builder("slots").algorithm(Algorithm.CONCURRENCY).limit(3).lease(Duration.ofSeconds(5)).build();
        String key = engine.key(longLease, ClientKey.parse("a"));
        assertThat(ask(engine, longLease, "a", 1).allowed()).isTrue();
        assertThat(ask(engine, shortLease, "a", 1).allowed()).as("a plan of a shorter lease").isTrue();
        assertThat(jedis.pttl(key)).as("the first slot's lease still runs").isGreaterThan(50_000L);

        clock.advance(60_001); // both leases ended (the script's clock): the next slot is the only one held
        assertThat(ask(engine, shortLease, "a", 1).allowed()).isTrue();
        assertThat(jedis.zcard(key)).isEqualTo(1);
        assertThat(jedis.pttl(key)).as("its lease and the margin").isBetween(1L, 6_000L);
    }

    @Test
    void aGiveBackTooLateToChangeAnythingKeepsItsOnceKeyForAtMostAWindowAndASecond() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("late", Algorithm.FIXED_WINDOW, 10, Duration.ofSeconds(10));
        List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("ip=192.0.2.10")));
        Decision d = engine.decide(request);
        clock.advance(10_001); // the window has ended: nothing to give back

        engine.giveBack(request, d.rules());

        assertThat(jedis.pttl(engine.key(rule, ClientKey.parse("ip=192.0.2.10")) + ":once"))
                .as("the once key of a give-back that can change nothing any more: one window for lagging clocks, and"
                        + " the margin").isBetween(1L, 11_000L);
    }

    @Test
    void oneKeyPerRulePerClientHashTaggedOnRuleAndClient() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("api", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        ask(engine, rule, "ip=203.0.113.7", 1);
        ask(engine, rule, "ip=203.0.113.7", 1);
        assertThat(engine.key(rule, ClientKey.parse("ip=203.0.113.7"))).isEqualTo(prefix + "{api:ip=203.0.113.7}");
        assertThat(jedis.keys(prefix + "*")).containsExactly(prefix + "{api:ip=203.0.113.7}");
    }

    @Test
    void fixedWindowKeyExpiresAtTheWindowsEndPlusAtMostASecond() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("fw", Algorithm.FIXED_WINDOW, 10, Duration.ofSeconds(10));
        clock.advance(3_000);
        assertThat(ask(engine, rule, "a", 1).resetMs()).isEqualTo(7_000);
        assertThat(jedis.pttl(engine.key(rule, ClientKey.parse("a")))).isBetween(7_000L - 500, 7_000L + 1_000);
    }

    @Test
    void tokenBucketKeyExpiresWhenTheBucketWouldBeFullAgain() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("tb", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(10));
        assertThat(ask(engine, rule, "a", 4).resetMs()).isEqualTo(4_000);
        assertThat(jedis.pttl(engine.key(rule, ClientKey.parse("a")))).isBetween(4_000L - 500, 4_000L + 1_000);
        clock.advance(1_000);
        ask(engine, rule, "a", 1); // 7 tokens left after this one: full again in 3 s... plus 1 refilled = 4 s
        assertThat(jedis.pttl(engine.key(rule, ClientKey.parse("a")))).isBetween(4_000L - 500, 4_000L + 1_000);
    }

    @Test
    void deniedRequestsWriteNothing() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("fw", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        ask(engine, rule, "a", 1);
        String before = jedis.get(engine.key(rule, ClientKey.parse("a")));
        clock.advance(5_000);
        assertThat(ask(engine, rule, "a", 1).allowed()).isFalse();
        assertThat(jedis.get(engine.key(rule, ClientKey.parse("a")))).isEqualTo(before);
        assertThat(ask(engine, rule, "b", 2).allowed()).isFalse();
        assertThat(jedis.exists(engine.key(rule, ClientKey.parse("b")))).isFalse();
    }

    @Test
    void aRuleThatChangesAlgorithmStartsItsClientsAfreshInsteadOfFailing() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule asLog = Rule.of("api", Algorithm.SLIDING_WINDOW_LOG, 2, Duration.ofMinutes(1));
        Rule asBucket = Rule.of("api", Algorithm.TOKEN_BUCKET, 2, Duration.ofMinutes(1));
        Rule asWindow = Rule.of("api", Algorithm.FIXED_WINDOW, 2, Duration.ofMinutes(1));
        ask(engine, asLog, "a", 2);
        assertThat(jedis.type(engine.key(asLog, ClientKey.parse("a")))).isEqualTo("zset");
        assertThat(ask(engine, asBucket, "a", 1).remaining()).isEqualTo(1);
        assertThat(jedis.type(engine.key(asLog, ClientKey.parse("a")))).isEqualTo("string");
        assertThat(ask(engine, asWindow, "a", 1).remaining()).isEqualTo(1);
        assertThat(ask(engine, asLog, "a", 1).remaining()).isEqualTo(1);
        assertThat(jedis.type(engine.key(asLog, ClientKey.parse("a")))).isEqualTo("zset");
    }

    @Test
    void anotherAlgorithmsPackedStateOfTheSameSizeIsNotMisread() {
        // each must see the others' states as absent, those of the same length above all (gcra and leaky-bucket: 27 bytes)
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Algorithm[] order = {Algorithm.GCRA, Algorithm.FIXED_WINDOW, Algorithm.TOKEN_BUCKET, Algorithm.LEAKY_BUCKET,
                Algorithm.GCRA, Algorithm.TOKEN_BUCKET, Algorithm.FIXED_WINDOW, Algorithm.LEAKY_BUCKET, Algorithm.SLIDING_WINDOW_COUNTER};
        for (int i = 0; i < order.length; i++) {
            clock.advance(7_000);
            Rule rule = Rule.of("api", order[i], 3, Duration.ofMinutes(1));
            RuleDecision reused = ask(engine, rule, "a", 2);
            RuleDecision fresh = ask(engine, rule, "fresh-" + i, 2);
            assertThat(reused).as("%s after %s", order[i].id(), i == 0 ? "nothing" : order[i - 1].id()).isEqualTo(fresh);
        }
    }

    @Test
    void aStateOfAnOlderSluiceStartsItsClientAfreshInsteadOfFailing() {
        // 0.1 kept text states; those of the packed states' length are the ones a careless reader would misread
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        long now = clock.millis();
        java.util.Map<Algorithm, List<String>> old = java.util.Map.of(
                Algorithm.FIXED_WINDOW, List.of("F" + now + ":3", "F" + now + ":17"),
                Algorithm.SLIDING_WINDOW_COUNTER, List.of("C" + now + ":3:1", "C" + now + ":3:12345678"),
                Algorithm.TOKEN_BUCKET, List.of("T0:" + now, "T10:" + now),
                Algorithm.LEAKY_BUCKET, List.of("L" + (now + 50_000) + ":0", "L" + (now + 50_000) + ":12"),
                Algorithm.GCRA, List.of("G" + (now + 50_000) + ":0", "G" + (now + 50_000) + ":12"));
        old.forEach((algorithm, states) -> {
            Rule rule = Rule.of(algorithm.id(), algorithm, 10, Duration.ofMinutes(1));
            for (String state : states) {
                String client = "old-" + state.length();
                jedis.set(engine.key(rule, ClientKey.parse(client)), state);
                RuleDecision d = ask(engine, rule, client, 1);
                assertThat(List.of(d.allowed(), d.remaining())).as("%s after %s", algorithm.id(), state)
                        .isEqualTo(List.of(true, algorithm == Algorithm.LEAKY_BUCKET ? 0L : 9L));
                assertThat(jedis.get(engine.key(rule, ClientKey.parse(client)).getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                        .as("rewritten in the packed format").isNotEqualTo(state.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
        });
    }

    @Test
    void aLogWrittenBy01CountsAndTimesItsEntriesAsTheEnginesOwn() {
        // 0.1 logged members as decimal numbers (eight digits are as long as a member of today's, which the
        // script reads the entry's time from): such an entry's time is its score
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, false);
        Rule rule = Rule.of("log", Algorithm.SLIDING_WINDOW_LOG, 5, Duration.ofMinutes(1));
        String old = engine.key(rule, ClientKey.parse("old"));
        long t0 = clock.millis();
        String[] members = {"12345678", "7", "40000123"};
        for (int i = 0; i < members.length; i++) {
            jedis.zadd(old, t0 + 10_000L * i, members[i]);
            clock.set(t0 + 10_000L * i);
            assertThat(ask(engine, rule, "new", 1).allowed()).isTrue();
        }
        long[][] steps = {{30_000, 1}, {30_000, 2}, {25_000, 1}, {65_000, 1}, {65_000, 1}}; // the third: a clock behind the log
        List<Boolean> allowed = new java.util.ArrayList<>();
        for (long[] step : steps) {
            clock.set(t0 + step[0]);
            RuleDecision fresh = ask(engine, rule, "new", step[1]);
            assertThat(ask(engine, rule, "old", step[1])).as("at +%d ms, cost %d", step[0], step[1]).isEqualTo(fresh);
            allowed.add(fresh.allowed());
        }
        assertThat(allowed).containsExactly(true, false, true, true, false);
        assertThat(jedis.zcard(old)).isEqualTo(5);
    }

    @Test
    void aGiveBackOfSeveralRulesIsOneScriptCall() {
        try (RedisProcess own = RedisProcess.start(); JedisPooled ownJedis = new JedisPooled(URI.create(own.url()))) {
            RedisEngine engine = new RedisEngine(ownJedis, prefix, false, clock, false);
            List<Acquisition> request = List.of(
                    new Acquisition(Rule.of("fw", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1)), ClientKey.parse("a")),
                    new Acquisition(Rule.of("tb", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1)), ClientKey.parse("a")),
                    new Acquisition(Rule.of("log", Algorithm.SLIDING_WINDOW_LOG, 5, Duration.ofMinutes(1)), ClientKey.parse("a")));
            Decision admitted = engine.decide(request);
            long before = scriptCalls(own);

            engine.giveBack(request, admitted.rules());

            assertThat(scriptCalls(own) - before).isEqualTo(1);
            assertThat(engine.decide(request).rules()).extracting(RuleDecision::remaining).containsExactly(4L, 4L, 4L);
        }
    }

    private static long scriptCalls(RedisProcess redis) {
        String stats;
        try (redis.clients.jedis.Jedis direct = new redis.clients.jedis.Jedis("127.0.0.1", redis.port())) {
            stats = direct.info("commandstats");
        }
        long calls = 0;
        for (String line : stats.split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")) {
                calls += Long.parseLong(line.replaceAll("^[^:]+:calls=(\\d+),.*", "$1"));
            }
        }
        return calls;
    }

    @Test
    void theScriptIsReloadedTransparentlyAfterScriptFlush() {
        try (RedisProcess own = RedisProcess.start(); JedisPooled ownJedis = new JedisPooled(URI.create(own.url()))) {
            RedisEngine engine = new RedisEngine(ownJedis, prefix, false, clock, false);
            Rule rule = Rule.of("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofMinutes(1));
            assertThat(ask(engine, rule, "a", 1).remaining()).isEqualTo(2);
            assertThat(ownJedis.scriptExists(List.of(RedisEngine.SHA))).containsExactly(true);

            ownJedis.scriptFlush();
            assertThat(ownJedis.scriptExists(List.of(RedisEngine.SHA))).containsExactly(false);

            assertThat(ask(engine, rule, "a", 1).remaining()).isEqualTo(1);
            assertThat(ownJedis.scriptExists(List.of(RedisEngine.SHA))).containsExactly(true);
            assertThat(ask(engine, rule, "a", 1).remaining()).isZero();
        }
    }

    @Test
    void scriptFlushesUnderConcurrentLoadAreInvisible() throws Exception {
        try (RedisProcess own = RedisProcess.start(); JedisPooled ownJedis = new JedisPooled(URI.create(own.url()))) {
            RedisEngine engine = new RedisEngine(ownJedis, prefix, true, clock, false);
            Rule rule = Rule.of("big", Algorithm.TOKEN_BUCKET, 1_000_000, Duration.ofSeconds(1));
            java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
            java.util.concurrent.ConcurrentLinkedQueue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
            java.util.concurrent.atomic.AtomicLong decisions = new java.util.concurrent.atomic.AtomicLong();
            List<Thread> threads = new java.util.ArrayList<>();
            for (int t = 0; t < 4; t++) {
                Thread thread = new Thread(() -> {
                    while (running.get()) {
                        try {
                            ask(engine, rule, "c" + (decisions.incrementAndGet() % 50), 1);
                        } catch (RuntimeException e) {
                            failures.add(e);
                        }
                    }
                });
                thread.start();
                threads.add(thread);
            }
            for (int i = 0; i < 20; i++) {
                long before = decisions.get();
                ownJedis.scriptFlush();
                while (decisions.get() < before + 20) Thread.onSpinWait();
            }
            running.set(false);
            for (Thread thread : threads) thread.join();
            assertThat(failures).isEmpty();
        }
    }

    @Test
    void redisClockIgnoresTheInstancesClock() {
        ManualClock wrong = new ManualClock(0); // 1970: an instance clock nobody should trust
        RedisEngine engine = new RedisEngine(jedis, prefix, true, wrong, false);
        Rule rule = Rule.of("hour", Algorithm.FIXED_WINDOW, 2, Duration.ofHours(1));
        // three requests in Redis's current hour: if an hour begins among them, the next client tries again
        for (int client = 0; ; client++) {
            long before = TestRedis.timeMillis(jedis);
            RedisEngine.Timed first = engine.decideTimed(List.of(new Acquisition(rule, ClientKey.parse("c" + client), 1)));
            long after = TestRedis.timeMillis(jedis);
            assertThat(first.atMillis()).as("decided on Redis's clock").isBetween(before, after);
            long hourEnd = (first.atMillis() / 3_600_000 + 1) * 3_600_000;
            assertThat(first.decision().rules().get(0).resetMs()).as("the window is Redis's current hour")
                    .isEqualTo(hourEnd - first.atMillis());
            RedisEngine.Timed second = engine.decideTimed(List.of(new Acquisition(rule, ClientKey.parse("c" + client), 1)));
            RedisEngine.Timed third = engine.decideTimed(List.of(new Acquisition(rule, ClientKey.parse("c" + client), 1)));
            if (third.atMillis() >= hourEnd) {
                assertThat(client).as("an hour began during two attempts a few ms long").isZero();
                continue;
            }
            assertThat(second.decision().allowed()).isTrue();
            assertThat(third.decision().allowed()).isFalse();
            return;
        }
    }

    @Test
    void tokenBucketOnTheRedisClockRefills() throws InterruptedException {
        RedisEngine engine = new RedisEngine(jedis, prefix, true, clock, false);
        Rule rule = Rule.of("fast", Algorithm.TOKEN_BUCKET, 10, Duration.ofSeconds(1)); // a token every 100 ms
        int admitted = 0;
        RuleDecision d;
        while ((d = ask(engine, rule, "a", 1)).allowed()) admitted++;
        assertThat(admitted).isGreaterThanOrEqualTo(10);
        assertThat(d.retryAfterMs()).isBetween(1L, 100L);
        Thread.sleep(d.retryAfterMs()); // the real TIME has to pass; nothing else to wait on
        assertThat(ask(engine, rule, "a", 1).allowed()).isTrue();
    }

    @Test
    void aRedisThatIsGoneIsUnavailableButNotATimeout() {
        RedisProcess own = RedisProcess.start();
        try (JedisPooled ownJedis = new JedisPooled(URI.create(own.url()))) {
            RedisEngine engine = new RedisEngine(ownJedis, prefix, false, clock, false);
            Rule rule = Rule.of("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofMinutes(1));
            own.kill();
            LimiterUnavailableException e = catchThrowableOfType(() -> ask(engine, rule, "a", 1), LimiterUnavailableException.class);
            assertThat(e).isNotNull();
            assertThat(e.isTimeout()).isFalse();
        } finally {
            own.close();
        }
    }

    @Test
    void aRedisThatDoesNotAnswerInTimeIsAnUnavailableTimeout() {
        try (RedisProcess own = RedisProcess.start();
             JedisPooled ownJedis = new JedisPooled(new HostAndPort("127.0.0.1", own.port()),
                     DefaultJedisClientConfig.builder().socketTimeoutMillis(200).connectionTimeoutMillis(200).build())) {
            RedisEngine engine = new RedisEngine(ownJedis, prefix, false, clock, false);
            Rule rule = Rule.of("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofMinutes(1));
            ask(engine, rule, "a", 1);
            own.pause();
            try {
                LimiterUnavailableException e = catchThrowableOfType(() -> ask(engine, rule, "a", 1), LimiterUnavailableException.class);
                assertThat(e).isNotNull();
                assertThat(e.isTimeout()).isTrue();
            } finally {
                own.resume();
            }
        }
    }

    @Test
    void aRedisOutOfMemoryIsUnavailable() {
        try (RedisProcess own = RedisProcess.start("--maxmemory-policy", "noeviction");
             JedisPooled ownJedis = new JedisPooled(URI.create(own.url()))) {
            ownJedis.set("ballast", "x".repeat(4 << 20));
            ownJedis.configSet("maxmemory", "1mb");
            RedisEngine engine = new RedisEngine(ownJedis, prefix, false, clock, false);
            Rule rule = Rule.of("tb", Algorithm.TOKEN_BUCKET, 3, Duration.ofMinutes(1));
            assertThatThrownBy(() -> ask(engine, rule, "a", 1))
                    .isInstanceOf(LimiterUnavailableException.class)
                    .hasMessageContaining("OOM");
        }
    }

    @Test
    void onClusterADeniedRequestTakesNothingFromItsOtherRules() {
        RedisEngine engine = new RedisEngine(jedis, prefix, false, clock, true);
        Rule generous = Rule.of("generous", Algorithm.FIXED_WINDOW, 10, Duration.ofMinutes(1));
        Rule strict = Rule.of("strict", Algorithm.FIXED_WINDOW, 1, Duration.ofMinutes(1));
        Rule later = Rule.of("later", Algorithm.TOKEN_BUCKET, 5, Duration.ofMinutes(1));
        List<Acquisition> request = List.of(new Acquisition(generous, ClientKey.parse("a")), new Acquisition(strict, ClientKey.parse("a")),
                new Acquisition(later, ClientKey.parse("a")));
        assertThat(engine.decide(request).allowed()).isTrue();
        Decision denied = engine.decide(request);
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.rules()).extracting(RuleDecision::allowed).containsExactly(true, false, true);
        assertThat(denied.rules()).extracting(RuleDecision::remaining).as("the untouched figures, as on standalone")
                .containsExactly(9L, 0L, 4L);
        assertThat(denied.rules()).extracting(RuleDecision::taken).containsOnly(false);
        assertThat(ask(engine, generous, "a", 1).remaining()).as("the generous rule's call gave back its token").isEqualTo(8);
        assertThat(ask(engine, later, "a", 1).remaining()).as("the rule after the denial took nothing").isEqualTo(3);
    }
}
