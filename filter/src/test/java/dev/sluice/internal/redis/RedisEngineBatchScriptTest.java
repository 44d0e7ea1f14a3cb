package dev.sluice.internal.redis;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.exceptions.JedisDataException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static dev.sluice.internal.redis.SharedRoundTripsTest.calls;
import static dev.sluice.internal.redis.SharedRoundTripsTest.info;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * On standalone (and Sentinel), the requests that share a round trip go as one call of
 * decide-batch.lua: one script call and one {@code TIME} for the batch, each request decided as it
 * would have been alone, and a request whose decision fails in Redis fails alone, for its failure
 * policy, the others decided.
 */
class RedisEngineBatchScriptTest {

    private final ExecutorService requests = Executors.newCachedThreadPool();
    private final String prefix = TestRedis.uniquePrefix("batch");

    @AfterEach
    void stop() {
        requests.shutdownNow();
    }

    private static List<Acquisition> one(Rule rule, String client) {
        return List.of(new Acquisition(rule, ClientKey.parse(client)));
    }

    private static void resetStats(RedisProcess redis) {
        try (Jedis j = new Jedis("127.0.0.1", redis.port())) {
            j.configResetStat();
        }
    }

    @Test
    void requestsSharingARoundTripGoAsOneScriptCallWithOneTimeEachDecidedAsAlone() throws Exception {
        try (RedisProcess redis = RedisProcess.start();
             JedisPooled jedis = new JedisPooled(new HostAndPort("127.0.0.1", redis.port()), DefaultJedisClientConfig.builder()
                     .socketTimeoutMillis(10_000).clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build())) {
            RedisEngine engine = new RedisEngine(jedis, prefix, true, Clock.SYSTEM, false);
            Rule each = Rule.of("each", Algorithm.TOKEN_BUCKET, 1, Duration.ofMinutes(1));
            Rule both = Rule.of("both", Algorithm.FIXED_WINDOW, 100, Duration.ofMinutes(1));
            engine.decide(one(each, "warm-up")); // the scripts loaded
            resetStats(redis);
            long warm = engine.roundTrips().roundTrips();
            List<Supplier<Decision>> twicePerClient = new ArrayList<>();
            for (int c = 0; c < 6; c++) {
                String client = "c" + c;
                twicePerClient.add(() -> engine.decide(one(each, client)));
                twicePerClient.add(() -> engine.decide(List.of(new Acquisition(each, ClientKey.parse(client)),
                        new Acquisition(both, ClientKey.parse("all")))));
            }

            Batches.Started<Decision> started = Batches.behindAFirstCall(redis, engine.roundTrips(), requests,
                    () -> engine.decide(one(each, "first")), twicePerClient, true);

            assertThat(started.first().get(10, TimeUnit.SECONDS).allowed()).isTrue();
            for (int i = 0; i < started.queued().size(); i++) {
                Decision d = started.queued().get(i).get(10, TimeUnit.SECONDS);
                if (i % 2 == 0) {
                    assertThat(d.allowed()).as("request " + i + ", the client's first").isTrue();
                } else {
                    assertThat(d.rules()).extracting(RuleDecision::allowed).as("request " + i + ", the client's second")
                            .containsExactly(false, true);
                    assertThat(d.allowed()).isFalse();
                    assertThat(d.rules().get(0).retryAfterMs()).isBetween(1L, 60_000L);
                }
            }
            String stats = info(redis, "commandstats");
            assertThat(calls(stats, "evalsha")).as("the first call, the filler, one for the twelve requests")
                    .isEqualTo(2 + started.fillers());
            assertThat(calls(stats, "time")).as("the first call's TIME, one for the batch").isEqualTo(2);
            assertThat(engine.roundTrips().roundTrips() - warm).as("round trips").isEqualTo(2 + started.fillers());
            // the fixed window counted nothing for the denied requests: 100 - 0 taken before this one
            assertThat(engine.decide(one(both, "all")).rules().get(0).remaining()).isEqualTo(99);
        }
    }

    /**
     * Give-backs (a settlement has a second argument: its takes' tokens) share a batch with
     * decisions: each is applied in its place, with its own token, once; a decision after it in the
     * batch sees it.
     */
    @Test
    void giveBacksInABatchAreAppliedInTheirPlaceWithTheirOwnTokensOnce() throws Exception {
        try (RedisProcess redis = RedisProcess.start();
             JedisPooled jedis = new JedisPooled(new HostAndPort("127.0.0.1", redis.port()), DefaultJedisClientConfig.builder()
                     .socketTimeoutMillis(10_000).clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build());
             Jedis direct = new Jedis("127.0.0.1", redis.port())) {
            RedisEngine engine = new RedisEngine(jedis, prefix, true, Clock.SYSTEM, false);
            Rule each = Rule.of("each", Algorithm.TOKEN_BUCKET, 1, Duration.ofMinutes(1));
            List<String> clients = List.of("c0", "c1", "c2");
            List<Decision> taken = new ArrayList<>();
            for (String client : clients) taken.add(engine.decide(one(each, client)));
            assertThat(taken).extracting(Decision::allowed).containsOnly(true);
            resetStats(redis);
            List<Supplier<Decision>> batch = new ArrayList<>();
            for (int c = 0; c < clients.size(); c++) {
                List<Acquisition> request = one(each, clients.get(c));
                List<RuleDecision> take = taken.get(c).rules();
                Supplier<Decision> giveBack = () -> {
                    engine.giveBack(request, take);
                    return null;
                };
                batch.add(() -> engine.decide(request)); // the bucket empty: denied
                batch.add(giveBack);
                batch.add(() -> engine.decide(request)); // given back: admitted
                batch.add(giveBack); // the same give-back again: nothing
                batch.add(() -> engine.decide(request)); // denied
            }

            Batches.Started<Decision> started = Batches.behindAFirstCall(redis, engine.roundTrips(), requests,
                    () -> engine.decide(one(each, "first")), batch, true);

            assertThat(started.first().get(10, TimeUnit.SECONDS).allowed()).isTrue();
            for (int c = 0; c < clients.size(); c++) {
                for (int i = 0; i < 5; i++) {
                    Decision d = started.queued().get(5 * c + i).get(10, TimeUnit.SECONDS);
                    if (i % 2 == 0) {
                        assertThat(d.allowed()).as("%s, call %d", clients.get(c), i).isEqualTo(i == 2);
                    }
                }
                byte[] once = (engine.key(each, ClientKey.parse(clients.get(c))) + ":once").getBytes(StandardCharsets.UTF_8);
                assertThat(direct.zrange(once, 0, -1)).as("%s's once key: its own take's token", clients.get(c))
                        .containsExactly(RequestCodec.tokens(taken.get(c).rules()));
            }
            assertThat(calls(info(redis, "commandstats"), "evalsha")).as("the first call, the filler, one for the batch")
                    .isEqualTo(2 + started.fillers());
        }
    }

    /**
     * A key whose state makes its decision fail in Redis (a sliding-window counter whose window ends
     * in ~1e300 ms: the expiry it would write is invalid, so the script's PSETEX errs) shares a batch with
     * other requests: they are decided by Redis as if it were not there, and it alone fails, decided by
     * its rule's failure policy (open: the local backstop), counted as one Redis error.
     */
    @Test
    void aRequestWhoseDecisionFailsInABatchFailsAloneToItsFailurePolicyAndTheOthersAreDecided() throws Exception {
        Rule api = Rule.of("api", Algorithm.SLIDING_WINDOW_COUNTER, 1, Duration.ofMinutes(1));
        try (RedisProcess redis = RedisProcess.start()) {
            SluiceConfig config = SluiceConfig.builder().rule(api).redisUrl(redis.url()).redisTimeout(Duration.ofSeconds(10))
                    .breakerFailureThreshold(100).deniedCache(false).keyPrefix(prefix).build();
            SluiceMetrics metrics = new SluiceMetrics();
            try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, metrics);
                 Jedis direct = new Jedis("127.0.0.1", redis.port())) {
                assertThat(stack.limiter().decide(one(api, "warm-up")).rules().get(0).source())
                        .isEqualTo(RuleDecision.Source.REDIS);
                byte[] poisoned = stack.redis().key(api, ClientKey.parse("poisoned")).getBytes(StandardCharsets.UTF_8);
                direct.set(poisoned, ByteBuffer.allocate(25).order(ByteOrder.LITTLE_ENDIAN)
                        .put((byte) 2).putDouble(1e300).putDouble(0).putDouble(0).array());
                resetStats(redis);
                List<String> clients = List.of("c0", "poisoned", "c1", "c0", "c2", "c1");
                List<Supplier<Decision>> batch = new ArrayList<>();
                for (String client : clients) batch.add(() -> stack.limiter().decide(one(api, client)));

                Batches.Started<Decision> started = Batches.behindAFirstCall(redis, stack.redis().roundTrips(), requests,
                        () -> stack.limiter().decide(one(api, "first")), batch, true);

                assertThat(started.first().get(10, TimeUnit.SECONDS).allowed()).isTrue();
                List<RuleDecision> decided = new ArrayList<>();
                for (var f : started.queued()) decided.add(f.get(10, TimeUnit.SECONDS).rules().get(0));
                assertThat(decided).extracting(RuleDecision::source).containsExactly(RuleDecision.Source.REDIS,
                        RuleDecision.Source.BACKSTOP, RuleDecision.Source.REDIS, RuleDecision.Source.REDIS,
                        RuleDecision.Source.REDIS, RuleDecision.Source.REDIS);
                assertThat(decided).extracting(RuleDecision::allowed).as("c0, poisoned (open), c1, c0 again, c2, c1 again")
                        .containsExactly(true, true, true, false, true, false);
                assertThat(calls(info(redis, "commandstats"), "evalsha")).as("the first call, the filler, one for the batch")
                        .isEqualTo(2 + started.fillers());
                assertThat(metrics.view().getRedisErrors()).as("the poisoned request's failure, once").isEqualTo(1);
                assertThat(metrics.view().getFallbackDecisions()).isEqualTo(1);
                assertThat(direct.get(poisoned)).as("the poisoned state untouched").hasSize(25);
            }
        }
    }

    /** Every algorithm, a concurrency rule's slot among them. */
    private static final List<Algorithm> EVERY = List.of(Algorithm.FIXED_WINDOW, Algorithm.SLIDING_WINDOW_COUNTER,
            Algorithm.SLIDING_WINDOW_LOG, Algorithm.TOKEN_BUCKET, Algorithm.LEAKY_BUCKET, Algorithm.GCRA, Algorithm.CONCURRENCY);

    /**
     * decide-batch.lua answers each request of a batch byte for byte as decide-one.lua answers it in a
     * call of its own, or fails it with the same error, whatever failed before it: random requests of
     * one to four rules over a few clients, on the instance's clock, batch after batch against one
     * prefix and call after call against another, in every shape a request's bytes take: every
     * algorithm, shadow and evaluate-only modes, costs above 1, calendar rules (their boundaries),
     * concurrency slots (their token), settlements in modes 3 and 5 (what each take took, and the
     * tokens in ARGV[3...]), requests over 255 bytes (the length's second byte), and failing requests
     * (a counter whose expiry is invalid fails at its PSETEX, after its request is read; a once key of
     * another type fails a settlement half way).
     */
    @Test
    void theBatchScriptAnswersEachRequestByteForByteAsItsOwnCallWould() {
        try (RedisProcess redis = RedisProcess.start(); Jedis jedis = new Jedis("127.0.0.1", redis.port())) {
            byte[] one = jedis.scriptLoad(RedisEngine.SCRIPT.getBytes(StandardCharsets.UTF_8));
            byte[] batch = jedis.scriptLoad(RedisEngine.BATCH_SCRIPT.getBytes(StandardCharsets.UTF_8));
            for (String prefix : List.of("a", "b")) {
                jedis.set((prefix + "{poisoned}").getBytes(StandardCharsets.UTF_8), ByteBuffer.allocate(25)
                        .order(ByteOrder.LITTLE_ENDIAN).put((byte) 2).putDouble(1e300).putDouble(0).putDouble(0).array());
                jedis.set(prefix + "{wrong-once}:once", "not a sorted set");
            }
            Random random = new Random(5);
            double now = 1_764_500_000_000d;
            int failed = 0, settlements = 0, calendars = 0, slots = 0, several = 0, long_ = 0;
            for (int round = 0; round < 300; round++) {
                now += random.nextInt(3) * random.nextInt(800);
                int size = 1 + random.nextInt(16);
                int[] keyCounts = new int[size];
                List<List<byte[]>> batchArgs = new ArrayList<>();
                List<byte[]> batchKeys = new ArrayList<>();
                List<Object> alone = new ArrayList<>();
                for (int r = 0; r < size; r++) {
                    boolean settles = random.nextInt(3) == 0;
                    int failure = random.nextInt(12); // 0: the last rule's counter poisoned; 1: the last once key of another type
                    int rules = 1 + random.nextInt(4);
                    List<String> names = new ArrayList<>();
                    List<RequestCodec.Mode> modes = new ArrayList<>();
                    List<byte[]> parts = new ArrayList<>();
                    int bytes = RequestCodec.NOW_BYTES;
                    for (int i = 0; i < rules; i++) {
                        boolean last = i == rules - 1;
                        boolean poisoned = failure == 0 && last && !settles;
                        Algorithm algorithm = poisoned ? Algorithm.SLIDING_WINDOW_COUNTER : EVERY.get(random.nextInt(EVERY.size()));
                        boolean calendar = !poisoned && algorithm == Algorithm.FIXED_WINDOW && random.nextBoolean();
                        RequestCodec.Mode mode;
                        if (settles) {
                            mode = algorithm.settlesCost() && algorithm != Algorithm.SLIDING_WINDOW_LOG && random.nextBoolean()
                                    ? RequestCodec.Mode.CHARGE : RequestCodec.Mode.GIVE_BACK;
                        } else {
                            int m = random.nextInt(10);
                            mode = m == 0 ? RequestCodec.Mode.SHADOW : m == 1 ? RequestCodec.Mode.EVALUATE : RequestCodec.Mode.ENFORCING;
                        }
                        String name = poisoned ? "poisoned" : failure == 1 && last && settles ? "wrong-once"
                                : "r" + algorithm.id() + (calendar ? "cal" : "") + "-" + i + ":c" + random.nextInt(3);
                        int limit = 1 + random.nextInt(4);
                        Rule.Builder builder = Rule.builder("r").algorithm(algorithm).limit(limit);
                        if (algorithm == Algorithm.CONCURRENCY) {
                            builder.lease(Duration.ofSeconds(1 + random.nextInt(3)));
                        } else {
                            builder.window(Duration.ofSeconds(1 + random.nextInt(3)));
                        }
                        if (!poisoned && (algorithm == Algorithm.TOKEN_BUCKET || algorithm == Algorithm.LEAKY_BUCKET
                                || algorithm == Algorithm.GCRA)) {
                            builder.burst(limit + random.nextInt(2));
                        }
                        byte[] part = RequestCodec.rule(builder.build());
                        if (calendar) part[0] = RequestCodec.CALENDAR_FIXED_WINDOW; // its boundaries follow, below
                        names.add(name);
                        modes.add(mode);
                        parts.add(part);
                        bytes += RequestCodec.ruleSize(mode, calendar, slot(part, mode));
                    }
                    RequestCodec request = new RequestCodec(bytes, now);
                    long second = (long) now - (long) now % 1000;
                    for (int i = 0; i < rules; i++) {
                        byte[] part = parts.get(i);
                        RequestCodec.Mode mode = modes.get(i);
                        request.rule(part, mode, 1 + random.nextInt(2));
                        if (mode.settles()) request.take(new RuleDecision.Take((long) now - random.nextInt(2000), random.nextInt(3), 0));
                        if (part[0] == RequestCodec.CALENDAR_FIXED_WINDOW) {
                            request.calendar((long) now, second - 1000, second, second + 1000, second + 2000);
                            calendars++;
                        }
                        if (slot(part, mode)) {
                            request.slot(random.nextLong());
                            slots++;
                        }
                    }
                    List<byte[]> args = new ArrayList<>(List.of(request.bytes()));
                    if (settles) {
                        byte[] tokens = new byte[8 * rules];
                        random.nextBytes(tokens);
                        args.add(tokens);
                        settlements++;
                    }
                    if (rules > 1) several++;
                    if (request.bytes().length > 255) long_++;
                    batchArgs.add(args);
                    keyCounts[r] = settles ? 2 * rules : rules;
                    List<byte[]> aloneKeys = new ArrayList<>();
                    for (String prefix : List.of("a", "b")) {
                        List<byte[]> keys = prefix.equals("a") ? batchKeys : aloneKeys;
                        for (String name : names) keys.add((prefix + "{" + name + "}").getBytes(StandardCharsets.UTF_8));
                        if (settles) {
                            for (String name : names) keys.add((prefix + "{" + name + "}:once").getBytes(StandardCharsets.UTF_8));
                        }
                    }
                    try {
                        alone.add(jedis.evalsha(one, aloneKeys, args));
                    } catch (JedisDataException e) {
                        alone.add(e);
                        failed++;
                    }
                }
                List<?> replies = (List<?>) jedis.evalsha(batch, batchKeys, SharedRoundTrips.BatchScript.argv(keyCounts, batchArgs));
                assertThat(replies).hasSize(size);
                for (int r = 0; r < size; r++) {
                    String as = "round " + round + ", request " + r;
                    if (alone.get(r) instanceof JedisDataException error) {
                        assertThat(replies.get(r)).as(as).isInstanceOf(JedisDataException.class);
                        assertThat(((JedisDataException) replies.get(r)).getMessage()).as(as)
                                .contains(error.getMessage().contains("WRONGTYPE") ? "WRONGTYPE" : "invalid expire");
                    } else {
                        assertThat((byte[]) replies.get(r)).as(as).isEqualTo((byte[]) alone.get(r));
                    }
                }
            }
            assertThat(failed).as("failing requests").isGreaterThan(10);
            assertThat(settlements).as("settlements").isGreaterThan(100);
            assertThat(calendars).as("calendar rules").isGreaterThan(100);
            assertThat(slots).as("concurrency slots").isGreaterThan(100);
            assertThat(several).as("requests of several rules").isGreaterThan(100);
            assertThat(long_).as("requests over 255 bytes").isGreaterThan(10);
        }
    }

    /** Whether a rule's part of a request is followed by its slot's token (a concurrency rule taking a slot). */
    private static boolean slot(byte[] part, RequestCodec.Mode mode) {
        return part[0] == RequestCodec.algorithmId(Rule.builder("c").algorithm(Algorithm.CONCURRENCY).limit(1)
                .lease(Duration.ofSeconds(1)).build()) && !mode.settles();
    }
}
