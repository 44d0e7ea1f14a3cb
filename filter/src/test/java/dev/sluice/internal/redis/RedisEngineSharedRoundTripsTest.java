package dev.sluice.internal.redis;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Decisions that share a round trip are the decisions they would have been alone, and a round trip
 * that fails fails each of its requests as a call of its own would: the failure policy decides each,
 * and the breaker and the metrics hear of each failed call once.
 */
class RedisEngineSharedRoundTripsTest {

    private final ExecutorService requests = Executors.newCachedThreadPool();
    private final String prefix = TestRedis.uniquePrefix("shared");

    @AfterEach
    void stop() {
        requests.shutdownNow();
    }

    private static List<Acquisition> request(Rule a, String clientA, Rule b, String clientB) {
        return List.of(new Acquisition(a, ClientKey.parse(clientA)), new Acquisition(b, ClientKey.parse(clientB)));
    }

    @Test
    void aRequestDeniedByOneRuleInASharedRoundTripTakesNothingFromItsOtherRules() throws Exception {
        try (RedisProcess redis = RedisProcess.start();
             JedisPooled jedis = new JedisPooled(new HostAndPort("127.0.0.1", redis.port()), DefaultJedisClientConfig.builder()
                     .socketTimeoutMillis(10_000).clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build())) {
            RedisEngine engine = new RedisEngine(jedis, prefix, false, new ManualClock(ManualClock.MINUTE_BOUNDARY), false);
            Rule everyone = Rule.of("everyone", Algorithm.FIXED_WINDOW, 100, Duration.ofMinutes(1));
            Rule each = Rule.of("each", Algorithm.TOKEN_BUCKET, 1, Duration.ofMinutes(1));
            engine.decide(List.of(new Acquisition(each, ClientKey.parse("warm-up")))); // the script loaded
            long warm = engine.roundTrips().roundTrips();
            List<Supplier<Decision>> twicePerClient = new ArrayList<>();
            for (int c = 0; c < 5; c++) {
                String client = "c" + c;
                twicePerClient.add(() -> engine.decide(request(everyone, "all", each, client)));
                twicePerClient.add(() -> engine.decide(request(everyone, "all", each, client)));
            }

            Batches.Started<Decision> started = Batches.behindAFirstCall(redis, engine.roundTrips(), requests,
                    () -> engine.decide(request(everyone, "all", each, "first")), twicePerClient, true);

            assertThat(started.first().get(10, TimeUnit.SECONDS).allowed()).isTrue();
            for (int i = 0; i < started.queued().size(); i++) {
                Decision d = started.queued().get(i).get(10, TimeUnit.SECONDS);
                if (i % 2 == 0) {
                    assertThat(d.rules()).extracting(RuleDecision::allowed).as("request " + i).containsExactly(true, true);
                    assertThat(d.rules().get(0).remaining()).as("request " + i).isEqualTo(100 - 1 - (i / 2 + 1));
                } else {
                    assertThat(d.allowed()).as("request " + i + ", the client's second").isFalse();
                    assertThat(d.rules()).extracting(RuleDecision::allowed).containsExactly(true, false);
                    assertThat(d.rules().get(0).remaining()).as("untouched").isEqualTo(100 - 1 - (i / 2 + 1));
                }
            }
            assertThat(engine.roundTrips().roundTrips() - warm - started.fillers()).as("the first's, then the ten's together")
                    .isEqualTo(2);
            Decision after = engine.decide(List.of(new Acquisition(everyone, ClientKey.parse("all"))));
            assertThat(after.rules().get(0).remaining()).as("the six admitted took one each; the denied five nothing")
                    .isEqualTo(100 - 6 - 1);
        }
    }

    /** The Redis engine as the stack calls it, counting the calls that fail. */
    private static final class CountingFailures implements RateLimiter {
        final RateLimiter engine;
        final AtomicInteger failed = new AtomicInteger();

        CountingFailures(RateLimiter engine) {
            this.engine = engine;
        }

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            try {
                return engine.decide(acquisitions);
            } catch (LimiterUnavailableException e) {
                failed.incrementAndGet();
                throw e;
            }
        }
    }

    /**
     * Redis stops answering with a call in flight and six queued behind it: each of the seven
     * requests falls back to the local backstop within about two timeouts (a queued call waits for
     * its round trip at most {@code redis.timeout}, then its round trip at most that again), and
     * each failed call is counted once, as a timeout.
     */
    @Test
    void aSharedRoundTripThatTimesOutFallsBackEachOfItsRequestsAndCountsEachFailedCallOnce() throws Exception {
        Duration timeout = Duration.ofMillis(300);
        Rule api = Rule.of("api", Algorithm.FIXED_WINDOW, 1000, Duration.ofMinutes(1));
        try (RedisProcess redis = RedisProcess.start()) {
            SluiceConfig config = SluiceConfig.builder().rule(api).redisUrl(redis.url()).redisTimeout(timeout)
                    .breakerFailureThreshold(100).deniedCache(false).keyPrefix(prefix).build();
            SluiceMetrics metrics = new SluiceMetrics();
            CountingFailures[] counting = new CountingFailures[1];
            try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, metrics,
                    engine -> counting[0] = new CountingFailures(engine))) {
                assertThat(stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse("warm-up")))).rules().get(0).source())
                        .isEqualTo(RuleDecision.Source.REDIS);
                List<Supplier<Timed>> batch = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    String client = "c" + i;
                    batch.add(() -> timed(() -> stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse(client))))));
                }

                Batches.Started<Timed> started;
                try {
                    started = Batches.behindAFirstCall(redis, stack.redis().roundTrips(), requests,
                            () -> timed(() -> stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse("first"))))),
                            batch, false);
                    started.first().get(10, TimeUnit.SECONDS);
                    for (CompletableFuture<Timed> f : started.queued()) f.get(10, TimeUnit.SECONDS);
                } finally {
                    redis.resume();
                }

                for (CompletableFuture<Timed> f : started.queued()) {
                    Timed t = f.get();
                    assertThat(t.decision().rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
                    assertThat(t.decision().allowed()).isTrue();
                    assertThat(t.millis()).isLessThan(2 * timeout.toMillis() + 500);
                }
                assertThat(started.first().get().decision().rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
                assertThat(counting[0].failed.get()).isEqualTo(7);
                assertThat(metrics.view().getRedisTimeouts()).as("each failed call counted once, as a timeout").isEqualTo(7);
                assertThat(metrics.view().getRedisErrors()).isZero();
                assertThat(metrics.view().getFallbackDecisions()).isEqualTo(7);
            }
        }
    }

    /**
     * Redis is killed with a call in flight and six queued behind it: the six fall back at once (their
     * round trip finds no server), not after the timeout, and each failed call is counted once.
     * ({@code SharedRoundTripsTest} kills Redis with a round trip half answered.)
     */
    @Test
    void redisDyingUnderASharedRoundTripFallsBackEachWaitingRequestAtOnceAndCountsEachFailedCallOnce() throws Exception {
        Duration timeout = Duration.ofSeconds(10);
        Rule api = Rule.of("api", Algorithm.FIXED_WINDOW, 1000, Duration.ofMinutes(1));
        try (RedisProcess redis = RedisProcess.start()) {
            SluiceConfig config = SluiceConfig.builder().rule(api).redisUrl(redis.url()).redisTimeout(timeout)
                    .breakerFailureThreshold(100).deniedCache(false).keyPrefix(prefix).build();
            SluiceMetrics metrics = new SluiceMetrics();
            try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, metrics)) {
                stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse("warm-up"))));
                List<Supplier<Timed>> batch = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    String client = "c" + i;
                    batch.add(() -> timed(() -> stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse(client))))));
                }
                Batches.Started<Timed> started = Batches.behindAFirstCall(redis, stack.redis().roundTrips(), requests,
                        () -> timed(() -> stack.limiter().decide(List.of(new Acquisition(api, ClientKey.parse("first"))))),
                        batch, false);

                long killed = System.nanoTime();
                redis.kill();

                for (CompletableFuture<Timed> f : started.queued()) {
                    Timed t = f.get(10, TimeUnit.SECONDS);
                    assertThat(t.decision().rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
                    assertThat(t.decision().allowed()).isTrue();
                }
                assertThat(started.first().get(10, TimeUnit.SECONDS).decision().rules().get(0).source())
                        .isEqualTo(RuleDecision.Source.BACKSTOP);
                assertThat((System.nanoTime() - killed) / 1_000_000).as("ms from the kill until all seven fell back")
                        .isLessThan(timeout.toMillis() / 2);
                assertThat(metrics.view().getRedisErrors()).as("each failed call counted once, a lost connection").isEqualTo(7);
                assertThat(metrics.view().getRedisTimeouts()).isZero();
            }
        }
    }

    record Timed(Decision decision, long millis) {
    }

    private static Timed timed(Supplier<Decision> decide) {
        long started = System.nanoTime();
        Decision d = decide.get();
        return new Timed(d, (System.nanoTime() - started) / 1_000_000);
    }
}
