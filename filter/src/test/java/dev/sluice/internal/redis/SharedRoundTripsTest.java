package dev.sluice.internal.redis;

import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;

import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The call path on its own, against real Redis processes the tests start: which calls share a round
 * trip, in which order, and what each caller sees when a round trip goes wrong. Batches are formed
 * deterministically: the node is stopped (SIGSTOP) while the first calls are in flight, the others
 * queue behind them one by one, and the node resumes.
 */
class SharedRoundTripsTest {

    private static final String ECHO = "return ARGV[1]";
    /** Appends ARGV[1] to the list KEYS[1]: its position tells the order Redis ran the calls in. */
    private static final String LOG = "return redis.call('RPUSH', KEYS[1], ARGV[1])";
    /** Keeps Redis busy for ARGV[1] ms (ARGV[2], if any, is ignored). */
    private static final String SLOW = "local t = redis.call('TIME') local stop = t[1] * 1000000 + t[2] + ARGV[1] * 1000 "
            + "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop return 'slept'";

    /**
     * More than the loopback's socket buffers can hold at once (their maxima: 32 MB to receive, 4 MB
     * to send on the machines we know), so Redis reads a call with this argument in several reads.
     */
    private static final int PADDING = 64 << 20;

    private final ExecutorService callers = Executors.newCachedThreadPool();
    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        callers.shutdownNow();
        for (int i = closing.size() - 1; i >= 0; i--) closing.get(i).close();
    }

    private RedisProcess redis() {
        RedisProcess p = RedisProcess.start();
        closing.add(p);
        return p;
    }

    /** A pooled client as RedisClients builds one: the socket timeout on every read, the pool's max-wait. */
    private JedisPooled client(RedisProcess redis, Duration timeout, Duration maxWait) {
        return client(redis, timeout, maxWait, 8);
    }

    /** As {@link #client(RedisProcess, Duration, Duration)}, with at most {@code maxTotal} connections (negative: no bound). */
    private JedisPooled client(RedisProcess redis, Duration timeout, Duration maxWait, int maxTotal) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(maxTotal);
        pool.setMaxWait(maxWait);
        pool.setJmxEnabled(false);
        int t = (int) timeout.toMillis();
        JedisPooled c = new JedisPooled(new HostAndPort("127.0.0.1", redis.port()),
                DefaultJedisClientConfig.builder().socketTimeoutMillis(t).connectionTimeoutMillis(t)
                        .clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build(), pool);
        closing.add(c);
        c.ping(); // a pooled connection ready before any test stops the server
        return c;
    }

    private static JedisPooled withScripts(JedisPooled jedis) {
        for (String script : List.of(ECHO, LOG, SLOW)) jedis.scriptLoad(script);
        return jedis;
    }

    /**
     * A call path with one round trip in flight per node, where a batch's mechanics are tested
     * (what queues behind the one round trip goes in the next); the default's
     * {@value SharedRoundTrips#IN_FLIGHT} in flight are tested on their own below.
     */
    private static SharedRoundTrips oneInFlight(JedisPooled jedis) {
        return new SharedRoundTrips(jedis, false, NodeConnections.of(jedis), 1);
    }

    private static Object call(SharedRoundTrips shared, String script, String key, String... args) {
        byte[] body = script.getBytes(StandardCharsets.UTF_8);
        List<byte[]> argv = new ArrayList<>();
        for (String a : args) argv.add(bytes(a));
        return shared.evalsha(sha1(body), body, List.of(bytes(key)), argv);
    }

    private CompletableFuture<Object> async(Supplier<Object> call) {
        return CompletableFuture.supplyAsync(call, callers);
    }

    /** Queues {@code then} behind a first call (ECHO "first") while {@code redis} is stopped; resumes it. */
    private CompletableFuture<Object> inOneBatchBehindAFirstCall(RedisProcess redis, SharedRoundTrips shared,
                                                                 List<Supplier<Object>> then, List<CompletableFuture<Object>> out) {
        Batches.Started<Object> started = Batches.behindAFirstCall(redis, shared, callers,
                () -> call(shared, ECHO, "first", "first"), then, true);
        out.addAll(started.queued());
        return started.first();
    }

    @Test
    void aCallAloneGoesAtOnceInOneRoundTrip() {
        RedisProcess redis = redis();
        JedisPooled jedis = withScripts(client(redis, Duration.ofSeconds(2), Duration.ofSeconds(2)));
        SharedRoundTrips shared = new SharedRoundTrips(jedis, false);

        assertThat(call(shared, ECHO, "k", "alone")).isEqualTo(bytes("alone"));
        assertThat(call(shared, ECHO, "k", "again")).isEqualTo(bytes("again"));

        assertThat(shared.calls()).isEqualTo(2);
        assertThat(shared.roundTrips()).isEqualTo(2);
    }

    @Test
    void callsQueuedDuringARoundTripShareTheNextEachAnsweredItsOwnInTheOrderTheyQueued() throws Exception {
        RedisProcess redis = redis();
        JedisPooled jedis = withScripts(client(redis, Duration.ofSeconds(10), Duration.ofSeconds(10)));
        SharedRoundTrips shared = oneInFlight(jedis);
        List<Supplier<Object>> calls = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            String name = "c" + i;
            calls.add(() -> call(shared, LOG, "log", name));
        }
        List<CompletableFuture<Object>> queued = new ArrayList<>();

        CompletableFuture<Object> first = inOneBatchBehindAFirstCall(redis, shared, calls, queued);

        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo(bytes("first"));
        for (int i = 0; i < queued.size(); i++) {
            assertThat(queued.get(i).get(5, TimeUnit.SECONDS)).as("position of c" + i).isEqualTo((long) i + 1);
        }
        assertThat(jedis.lrange("log", 0, -1)).containsExactly("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8",
                "c9", "c10", "c11");
        assertThat(shared.calls()).isEqualTo(13);
        assertThat(shared.roundTrips()).as("the first call's, then one for the twelve").isEqualTo(2);
    }

    /** Its bound: redis.timeout on the clients Sluice builds (RedisClientsTest); on a user's JedisPooled, its max-wait. */
    @Test
    void aQueuedCallWaitsForItsRoundTripAtMostItsBoundAndFailsAsATimeout() throws Exception {
        RedisProcess redis = redis();
        SharedRoundTrips shared = oneInFlight(client(redis, Duration.ofSeconds(10), Duration.ofMillis(150)));
        redis.pause();
        CompletableFuture<Object> first;
        long started;
        Throwable failure;
        try {
            first = async(() -> call(shared, ECHO, "k", "first"));
            Poll.until(Duration.ofSeconds(5), "the first call to be in flight", () -> shared.roundTrips() == 1);
            started = System.nanoTime();
            failure = catchFailure(async(() -> call(shared, ECHO, "k", "second")));
        } finally {
            redis.resume();
        }
        long waitedMs = (System.nanoTime() - started) / 1_000_000;

        assertThat(failure).isInstanceOf(JedisException.class).hasRootCauseInstanceOf(NoSuchElementException.class);
        assertThat(waitedMs).isBetween(140L, 1_000L);
        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo(bytes("first"));
        assertThat(call(shared, ECHO, "k", "third")).isEqualTo(bytes("third"));
    }

    /**
     * The round trip in flight times out (Redis stopped): the calls that queued behind it meanwhile
     * fail with it, at once, instead of each waiting for a round trip of their own that would time
     * out too: a stuck node costs a decision about one timeout, not two.
     */
    @Test
    void callsQueuedBehindARoundTripThatTimesOutFailWithItAfterAboutOneTimeout() throws Exception {
        RedisProcess redis = redis();
        SharedRoundTrips shared = oneInFlight(client(redis, Duration.ofMillis(300), Duration.ofSeconds(5)));
        long start = System.nanoTime();
        Batches.Started<Object> started = Batches.behindAFirstCall(redis, shared, callers,
                () -> call(shared, ECHO, "k", "first"), List.of(() -> call(shared, ECHO, "k", "second"),
                        () -> call(shared, ECHO, "k", "third")), false);
        List<Throwable> failures = new ArrayList<>();
        try {
            failures.add(catchFailure(started.first()));
            for (CompletableFuture<Object> queued : started.queued()) failures.add(catchFailure(queued));
        } finally {
            redis.resume();
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(failures).allSatisfy(f -> assertThat(f).isInstanceOf(JedisConnectionException.class)
                .hasRootCauseInstanceOf(SocketTimeoutException.class));
        assertThat(tookMs).as("one timeout (300 ms) for all three, not one more for the queued ones")
                .isLessThan(300 + 250);
        assertThat(shared.roundTrips()).as("the queued calls never went: the node was not answering").isEqualTo(1);
        Poll.until(Duration.ofSeconds(5), "Redis to answer again", () -> answers(shared, "after"));
    }

    /**
     * Redis answers the first call of a batch, then stalls in a slow script: the call whose reply had
     * come keeps it, those still waiting fail with the read timeout, and no late reply reaches a later
     * call. (Redis runs what it has read whole and sends the replies before it reads on; the slow
     * call's argument, {@link #PADDING}, cannot be read whole at once, so the first reply leaves before
     * the slow call has arrived.)
     */
    @Test
    void aTimeoutInTheMiddleOfABatchFailsOnlyTheCallsStillWaiting() throws Exception {
        RedisProcess redis = redis();
        SharedRoundTrips shared = oneInFlight(withScripts(client(redis, Duration.ofMillis(1_000), Duration.ofSeconds(5))));
        List<CompletableFuture<Object>> batch = new ArrayList<>();
        String padding = "p".repeat(PADDING);

        CompletableFuture<Object> first = inOneBatchBehindAFirstCall(redis, shared, List.of(
                () -> call(shared, ECHO, "k", "answered"),
                () -> call(shared, SLOW, "k", "3000", padding),
                () -> call(shared, ECHO, "k", "last")), batch);

        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo(bytes("first"));
        assertThat(batch.get(0).get(5, TimeUnit.SECONDS)).isEqualTo(bytes("answered"));
        for (CompletableFuture<Object> waiting : batch.subList(1, 3)) {
            assertThat(catchFailure(waiting)).isInstanceOf(JedisConnectionException.class)
                    .hasRootCauseInstanceOf(SocketTimeoutException.class);
        }
        assertThat(shared.roundTrips()).isEqualTo(2);
        Poll.until(Duration.ofSeconds(10), "Redis to be done with the slow script", () -> answers(shared, "after"));
        for (int i = 0; i < 5; i++) {
            assertThat(call(shared, ECHO, "k", "later" + i)).as("a new call's own reply, never a late one").isEqualTo(bytes("later" + i));
        }
    }

    @Test
    void redisDyingMidBatchFailsTheCallsStillWaitingAtOnceAndTheNextCallsReachTheRestartedServer() throws Exception {
        RedisProcess redis = redis();
        SharedRoundTrips shared = oneInFlight(withScripts(client(redis, Duration.ofSeconds(10), Duration.ofSeconds(10))));
        List<CompletableFuture<Object>> batch = new ArrayList<>();
        String padding = "p".repeat(PADDING);
        // the first queued carries the round trip, and returns when all of its replies are read
        CompletableFuture<Object> first = inOneBatchBehindAFirstCall(redis, shared, List.of(
                () -> call(shared, ECHO, "k", "carrier"),
                () -> call(shared, ECHO, "k", "answered"),
                () -> call(shared, SLOW, "k", "5000", padding),
                () -> call(shared, ECHO, "k", "last")), batch);
        assertThat(batch.get(1).get(5, TimeUnit.SECONDS)).isEqualTo(bytes("answered"));

        long killed = System.nanoTime();
        redis.kill();

        assertThat(batch.get(0).get(5, TimeUnit.SECONDS)).isEqualTo(bytes("carrier"));
        for (CompletableFuture<Object> waiting : batch.subList(2, 4)) {
            Throwable failure = catchFailure(waiting);
            assertThat(failure).isInstanceOf(JedisConnectionException.class);
            assertThat(timedOut(failure)).as("a lost connection, not a timeout").isFalse();
        }
        assertThat((System.nanoTime() - killed) / 1_000_000).as("ms until the waiting calls failed").isLessThan(5_000);
        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo(bytes("first"));

        redis.restart(); // empty: without the scripts
        Poll.until(Duration.ofSeconds(10), "calls to reach the restarted server", () -> answers(shared, "back"));
        assertThat(call(shared, ECHO, "k", "again")).isEqualTo(bytes("again"));
    }

    @Test
    void noscriptInABatchLoadsTheScriptOnceAndAnswersEveryCall() throws Exception {
        RedisProcess redis = redis();
        JedisPooled jedis = client(redis, Duration.ofSeconds(10), Duration.ofSeconds(10));
        SharedRoundTrips shared = oneInFlight(jedis);
        List<Supplier<Object>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            String name = "c" + i;
            calls.add(() -> call(shared, LOG, "log", name));
        }
        List<CompletableFuture<Object>> queued = new ArrayList<>();
        // a new server has no scripts: every call of both round trips meets NOSCRIPT

        CompletableFuture<Object> first = inOneBatchBehindAFirstCall(redis, shared, calls, queued);

        assertThat(first.get(5, TimeUnit.SECONDS)).isEqualTo(bytes("first"));
        for (int i = 0; i < queued.size(); i++) {
            assertThat(queued.get(i).get(5, TimeUnit.SECONDS)).isEqualTo((long) i + 1);
        }
        assertThat(jedis.lrange("log", 0, -1)).containsExactly("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7");
        String stats = info(redis, "commandstats");
        assertThat(calls(stats, "script|load")).as("each script loaded once").isEqualTo(2);
        assertThat(calls(stats, "eval")).isZero();
        assertThat(shared.roundTrips()).as("each batch: NOSCRIPT, then SCRIPT LOAD and the calls again").isEqualTo(4);
    }

    @Test
    void theDefaultsRoundTripsGoAtOnceAndWhatQueuesBehindThemGoesInTheNextTogether() throws Exception {
        RedisProcess redis = redis();
        JedisPooled jedis = withScripts(client(redis, Duration.ofSeconds(10), Duration.ofSeconds(10)));
        SharedRoundTrips shared = new SharedRoundTrips(jedis, false);
        assertThat(shared.inFlight()).isEqualTo(SharedRoundTrips.IN_FLIGHT).isEqualTo(3);
        int n = shared.inFlight();
        List<CompletableFuture<Object>> calls = new ArrayList<>();
        redis.pause();
        try {
            for (int i = 0; i < n; i++) {
                String name = "alone" + i;
                calls.add(async(() -> call(shared, LOG, "log", name)));
                int inFlight = i + 1;
                Poll.until(Duration.ofSeconds(5), "round trip " + inFlight + " in flight", () -> shared.roundTrips() == inFlight);
            }
            assertThat(shared.queued()).as("none waited for another").isZero();
            for (int i = 0; i < 5; i++) {
                String name = "c" + i;
                int waiting = i;
                calls.add(async(() -> call(shared, LOG, "log", name)));
                Poll.until(Duration.ofSeconds(5), "call " + (waiting + 1) + " to queue", () -> shared.queued() == waiting + 1);
            }
            assertThat(shared.roundTrips()).as("no further round trip while " + n + " are in flight").isEqualTo(n);
        } finally {
            redis.resume();
        }
        List<Object> replies = new ArrayList<>();
        for (CompletableFuture<Object> c : calls) replies.add(c.get(5, TimeUnit.SECONDS));

        // those in flight are on connections of their own, which Redis reads in an order of its own; and
        // one counted in flight may not have reached Redis when it resumes (the client flushes when it reads,
        // the loopback may deliver later): a call alone can run after the batch, never inside it
        List<Long> all = new ArrayList<>();
        for (long v = 1; v <= n + 5; v++) all.add(v);
        assertThat(replies).containsExactlyInAnyOrderElementsOf(all);
        long first = (Long) replies.get(n);
        assertThat(replies.subList(n, n + 5)).as("the batch, together, in the order it queued")
                .containsExactly(first, first + 1, first + 2, first + 3, first + 4);
        List<String> log = jedis.lrange("log", 0, -1);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < n; i++) names.add("alone" + i);
        names.addAll(List.of("c0", "c1", "c2", "c3", "c4"));
        assertThat(log).containsExactlyInAnyOrderElementsOf(names);
        assertThat(log.subList((int) first - 1, (int) first + 4)).containsExactly("c0", "c1", "c2", "c3", "c4");
        assertThat(shared.roundTrips()).as(n + " alone, then one for the five").isEqualTo(n + 1);
    }

    @Test
    void neverMoreRoundTripsInFlightThanThePoolLendsConnections() throws Exception {
        RedisProcess redis = redis();
        Duration tenSeconds = Duration.ofSeconds(10);
        for (int maxTotal : new int[]{1, 2, 8, -1}) {
            assertThat(new SharedRoundTrips(client(redis, tenSeconds, tenSeconds, maxTotal), false).inFlight()).as("max-total " + maxTotal)
                    .isEqualTo(maxTotal < 0 ? SharedRoundTrips.IN_FLIGHT : Math.min(maxTotal, SharedRoundTrips.IN_FLIGHT));
        }

        // a pool of two: two round trips go, what comes after queues (no carrier waits in the pool for a
        // connection the two hold) and goes together in the next
        JedisPooled two = withScripts(client(redis, tenSeconds, tenSeconds, 2));
        SharedRoundTrips shared = new SharedRoundTrips(two, false);
        List<CompletableFuture<Object>> calls = new ArrayList<>();
        redis.pause();
        try {
            for (int i = 0; i < 5; i++) {
                String name = "c" + i;
                calls.add(async(() -> call(shared, ECHO, "k", name)));
                if (i < 2) {
                    int inFlight = i + 1;
                    Poll.until(Duration.ofSeconds(5), "round trip " + inFlight + " in flight", () -> shared.roundTrips() == inFlight);
                } else {
                    int waiting = i - 1;
                    Poll.until(Duration.ofSeconds(5), "call " + (i + 1) + " to queue", () -> shared.queued() == waiting);
                }
            }
        } finally {
            redis.resume();
        }
        for (int i = 0; i < calls.size(); i++) {
            assertThat(new String((byte[]) calls.get(i).get(5, TimeUnit.SECONDS), StandardCharsets.UTF_8)).isEqualTo("c" + i);
        }
        assertThat(shared.roundTrips()).as("two alone, then one for the three queued").isEqualTo(3);
    }

    @Test
    void callsQueuedBehindTheRoundTripsInFlightThatTimeOutFailWithThemAfterAboutOneTimeout() throws Exception {
        RedisProcess redis = redis();
        // 1 s: the calls must be in flight or queued before the first round trips time out, which
        // takes a few hundred ms when the suite loads both cores
        SharedRoundTrips shared = new SharedRoundTrips(client(redis, Duration.ofSeconds(1), Duration.ofSeconds(5)), false);
        int n = shared.inFlight();
        long start = System.nanoTime();
        List<CompletableFuture<Object>> calls = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        redis.pause();
        try {
            for (int i = 0; i < n + 2; i++) {
                String name = "c" + i;
                calls.add(async(() -> call(shared, ECHO, "k", name)));
                if (i < n) {
                    int inFlight = i + 1;
                    Poll.until(Duration.ofSeconds(5), "round trip " + inFlight + " in flight", () -> shared.roundTrips() == inFlight);
                } else {
                    int waiting = i - n + 1;
                    Poll.until(Duration.ofSeconds(5), "call " + (i + 1) + " to queue", () -> shared.queued() == waiting);
                }
            }
            for (CompletableFuture<Object> c : calls) failures.add(catchFailure(c));
        } finally {
            redis.resume();
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(failures).allSatisfy(f -> assertThat(f).isInstanceOf(JedisConnectionException.class)
                .hasRootCauseInstanceOf(SocketTimeoutException.class));
        // the last round trip in flight times out 1 s after it was sent (the set-up before it: a few hundred ms
        // on a loaded machine); a queued call given a round trip of its own would fail a second later, at 2 s
        assertThat(tookMs).as("one timeout (1 s) for all of them, not one more for the queued ones").isLessThan(1_000 + 900);
        assertThat(shared.roundTrips()).as("the queued calls never went: the node was not answering").isEqualTo(n);
        Poll.until(Duration.ofSeconds(5), "Redis to answer again", () -> answers(shared, "after"));
    }

    @Test
    void aClientWhoseConnectionsSluiceCannotReachMakesEveryCallAlone() {
        RedisProcess redis = redis();
        try (redis.clients.jedis.UnifiedJedis plain = new redis.clients.jedis.UnifiedJedis(new HostAndPort("127.0.0.1", redis.port()))) {
            SharedRoundTrips shared = new SharedRoundTrips(plain, false);
            assertThat(call(shared, ECHO, "k", "alone")).isEqualTo(bytes("alone"));
            assertThat(shared.roundTrips()).isZero();
        }
    }

    private static boolean answers(SharedRoundTrips shared, String arg) {
        try {
            return java.util.Arrays.equals((byte[]) call(shared, ECHO, "k", arg), bytes(arg));
        } catch (JedisException notYet) {
            return false;
        }
    }

    private static Throwable catchFailure(CompletableFuture<Object> f) throws Exception {
        try {
            Object reply = f.get(15, TimeUnit.SECONDS);
            String shown = reply instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(reply);
            throw new AssertionError("expected a failure, got " + (shown.length() > 40 ? shown.substring(0, 40) + "..." : shown));
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    private static boolean timedOut(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SocketTimeoutException) return true;
        }
        return false;
    }

    static String info(RedisProcess redis, String section) {
        try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", redis.port())) {
            return j.info(section);
        }
    }

    /** The calls of {@code command} in an INFO commandstats reply. */
    static long calls(String commandStats, String command) {
        for (String line : commandStats.split("\r?\n")) {
            if (line.startsWith("cmdstat_" + command + ":")) {
                return Long.parseLong(line.replaceAll("^[^:]+:calls=(\\d+),.*", "$1"));
            }
        }
        return 0;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] sha1(byte[] script) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(script)).getBytes(StandardCharsets.US_ASCII);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
