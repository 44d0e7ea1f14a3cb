package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.args.ClientPauseMode;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A concurrency slot in Redis that no request holds any more is released once Redis answers again,
 * not left counted until its lease ends (30 s here): the slot a decision took although its reply came
 * after {@code redis.timeout}, a release Redis lost, a release not sent while the breaker was open. On
 * a private {@code redis-server} that the tests stall (SIGSTOP, {@code CLIENT PAUSE}); the slot's key
 * is watched through keyspace notifications, so each test sees the take and the release happen.
 */
class SlotReleasesIT {

    private static final Duration TIMEOUT = Duration.ofMillis(300);
    /** Far longer than any test waits: a slot freed in time was released, not ended by its lease. */
    private static final Rule EXPORTS = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(1)
            .lease(Duration.ofSeconds(30)).build();
    private static final Rule API = Rule.builder("api").limit(1000).window(Duration.ofHours(1)).build();
    private static final ClientKey ACME = ClientKey.of("acme");
    private static final String KEY = "slots:{exports:" + ACME.value() + "}:slots";
    /** Well under the 30 s lease, well over a few retries a second apart. */
    private static final Duration RELEASED_WITHIN = Duration.ofSeconds(10);

    private RedisProcess redis;
    private Jedis admin;
    private Sluice sluice;
    private Jedis subscriber;
    private final Events events = new Events();
    private CompletableFuture<Void> subscription;

    @BeforeEach
    void start() throws InterruptedException {
        redis = RedisProcess.start();
        admin = new Jedis("127.0.0.1", redis.port(), 5_000);
        admin.configSet("notify-keyspace-events", "Kz");
        subscriber = new Jedis("127.0.0.1", redis.port(), 0);
        subscription = CompletableFuture.runAsync(() -> subscriber.subscribe(events, "__keyspace@0__:" + KEY));
        assertThat(events.subscribed.await(5, TimeUnit.SECONDS)).as("subscribed to the slot key's events").isTrue();
    }

    private void startSluice(SluiceConfig.Builder extra) {
        sluice = Sluice.builder(extra.redisUrl(redis.url()).keyPrefix("slots:").redisTimeout(TIMEOUT)
                .redisPoolMaxWait(TIMEOUT).rule(EXPORTS).rule(API).build()).name("slot-releases").build();
        // a slot taken and released with Redis answering: the script is loaded, the pool warm
        try (Lease warm = sluice.tryAcquireSlot("exports", ACME)) {
            assertThat(source(warm)).isEqualTo(RuleDecision.Source.REDIS);
        }
        events.expect("zadd", "zrem");
    }

    @AfterEach
    void stop() {
        if (sluice != null) sluice.close();
        if (subscription != null && events.isSubscribed()) events.unsubscribe();
        if (subscriber != null) subscriber.close();
        if (admin != null) admin.close();
        if (redis != null) redis.close();
    }

    private static RuleDecision.Source source(Lease lease) {
        return lease.decision().rules().get(0).source();
    }

    private long held() {
        return admin.zcard(KEY);
    }

    @Test
    void aSlotTakenByADecisionWhoseReplyCameTooLateIsReleasedOnceRedisAnswers() {
        startSluice(SluiceConfig.builder());
        redis.pause(); // the decision's call reaches Redis's socket; Redis runs it only after the timeout
        try (Lease lease = sluice.tryAcquireSlot("exports", ACME)) {
            assertThat(lease.allowed()).isTrue();
            assertThat(source(lease)).as("decided by the failure policy").isEqualTo(RuleDecision.Source.BACKSTOP);
        } finally {
            redis.resume();
        }
        events.expect("zadd"); // the take landed, after its caller gave up on it
        events.expect("zrem");
        assertThat(held()).isZero();
        releasedLate(1);
        Lease again = sluice.tryAcquireSlot("exports", ACME);
        assertThat(source(again)).isEqualTo(RuleDecision.Source.REDIS);
        assertThat(again.allowed()).as("the client's one slot is free again").isTrue();
    }

    @Test
    void aReleaseRedisLostIsSentAgainUntilItIsApplied() {
        startSluice(SluiceConfig.builder());
        Lease lease = sluice.tryAcquireSlot("exports", ACME);
        assertThat(source(lease)).isEqualTo(RuleDecision.Source.REDIS);
        events.expect("zadd");
        // write commands wait; a caller that gives up on one is dropped with it: this release is lost
        admin.clientPause(3_000, ClientPauseMode.WRITE);
        lease.close();
        assertThat(held()).as("read while the release is lost").isOne();
        events.expect("zrem");
        assertThat(held()).isZero();
        releasedLate(1);
    }

    @Test
    void aReleaseNotSentWhileTheBreakerWasOpenIsSentOnceRedisAnswers() {
        startSluice(SluiceConfig.builder().breakerFailureThreshold(1).breakerOpenBase(Duration.ofSeconds(20))
                .breakerOpenMax(Duration.ofSeconds(20)));
        Lease lease = sluice.tryAcquireSlot("exports", ACME);
        assertThat(source(lease)).isEqualTo(RuleDecision.Source.REDIS);
        events.expect("zadd");
        admin.clientPause(3_000, ClientPauseMode.WRITE);
        assertThat(sluice.tryAcquire("api", "acme").rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
        assertThat(sluice.metrics().getBreakerState()).isEqualTo("OPEN");
        lease.close(); // not sent: the breaker is open for 20 s
        events.expect("zrem");
        assertThat(held()).isZero();
        assertThat(sluice.metrics().getBreakerState()).as("released with the breaker still open").isEqualTo("OPEN");
        releasedLate(1);
    }

    /** {@code SlotsReleasedLate} reaches {@code count}: it counts a release once Redis has answered it as often as it must. */
    private void releasedLate(long count) {
        Poll.until(RELEASED_WITHIN, "SlotsReleasedLate = " + count, () -> sluice.metrics().getSlotsReleasedLate() >= count);
        assertThat(sluice.metrics().getSlotsReleasedLate()).isEqualTo(count);
    }

    /** The slot key's keyspace events, in order. */
    private static final class Events extends JedisPubSub {
        final CountDownLatch subscribed = new CountDownLatch(1);
        final BlockingQueue<String> seen = new LinkedBlockingQueue<>();

        @Override
        public void onSubscribe(String channel, int subscribedChannels) {
            subscribed.countDown();
        }

        @Override
        public void onMessage(String channel, String message) {
            seen.add(message);
        }

        /** Waits for each of {@code events} in order, failing on another event or after {@link #RELEASED_WITHIN}. */
        void expect(String... events) {
            for (String expected : events) {
                String event;
                try {
                    event = seen.poll(RELEASED_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                }
                assertThat(event).as("the next event on " + KEY + " (expecting " + List.of(events) + ")").isEqualTo(expected);
            }
        }
    }
}
