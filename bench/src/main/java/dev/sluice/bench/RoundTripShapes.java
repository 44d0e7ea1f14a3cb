package dev.sluice.bench;

import dev.sluice.internal.redis.RedisEngine;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The two ways for several decisions to share a round trip, measured where they differ: in Redis.
 * <ul>
 *   <li>{@code pipelined EVALSHA}: B calls of Sluice's one-request script, one per decision, sent
 *       together (what the engine does on a Cluster);</li>
 *   <li>{@code one script call for the batch}: one EVALSHA of the engine's batch script
 *       (decide-batch.lua: what the engine sends for a shared round trip on standalone), B requests
 *       per call.</li>
 * </ul>
 * Two connections keep Redis busy (each sends its next batch as soon as the last is answered), on
 * 10,000 token-bucket keys that always admit; figures: decisions per second and Redis CPU per
 * decision ({@code INFO cpu}). The client side (one write, one read) is the same for both.
 */
final class RoundTripShapes {

    record Shape(String shape, int batch, double decisionsPerSecond, double redisCpuMicros) {
    }

    private static final int KEYS = 10_000;
    private static final int CONNECTIONS = 2;

    private RoundTripShapes() {
    }

    static List<Shape> measure(Duration each) throws Exception {
        String script = engineScript("SCRIPT");
        String batchScript = engineScript("BATCH_SCRIPT");
        List<Shape> out = new ArrayList<>();
        try (Jedis admin = BenchRedis.admin()) {
            byte[] sha = admin.scriptLoad(script).getBytes(StandardCharsets.US_ASCII);
            byte[] batchSha = admin.scriptLoad(batchScript).getBytes(StandardCharsets.US_ASCII);
            String prefix = BenchRedis.prefix("shapes");
            for (int batch : new int[]{1, 16, 64}) {
                out.add(run(admin, "pipelined EVALSHA", batch, each, c -> pipelined(c, sha, prefix, batch)));
            }
            for (int batch : new int[]{16, 64}) {
                out.add(run(admin, "one script call for the batch", batch, each, c -> batched(c, batchSha, prefix, batch)));
            }
        }
        return out;
    }

    private static int pipelined(Connection c, byte[] sha, String prefix, int batch) {
        for (int i = 0; i < batch; i++) {
            c.sendCommand(new CommandArguments(Protocol.Command.EVALSHA).add(sha).add(1).add(key(prefix)).add(ADMITTING));
        }
        List<Object> replies = c.getMany(batch);
        for (Object r : replies) {
            if (!(r instanceof byte[])) throw new IllegalStateException("unexpected reply " + r);
        }
        return batch;
    }

    private static int batched(Connection c, byte[] sha, String prefix, int batch) {
        CommandArguments call = new CommandArguments(Protocol.Command.EVALSHA).add(sha).add(batch);
        for (int i = 0; i < batch; i++) call.add(key(prefix));
        // decide-batch.lua: per request one key, one argument (a byte each), its length (two bytes,
        // little-endian); then every request in one argument
        byte[] layout = new byte[4 * batch];
        byte[] requests = new byte[batch * ADMITTING.length];
        for (int i = 0; i < batch; i++) {
            layout[4 * i] = 1;
            layout[4 * i + 1] = 1;
            layout[4 * i + 2] = (byte) ADMITTING.length;
            layout[4 * i + 3] = (byte) (ADMITTING.length >>> 8);
            System.arraycopy(ADMITTING, 0, requests, i * ADMITTING.length, ADMITTING.length);
        }
        call.add(layout);
        call.add(requests);
        Object reply = c.executeCommand(call);
        if (!(reply instanceof List<?> l) || l.size() != batch) throw new IllegalStateException("unexpected reply " + reply);
        return batch;
    }

    private static Shape run(Jedis admin, String shape, int batch, Duration each, java.util.function.ToIntFunction<Connection> round)
            throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong decisions = new AtomicLong();
        AtomicReference<RuntimeException> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        List<Connection> connections = new ArrayList<>();
        for (int t = 0; t < CONNECTIONS; t++) {
            Connection c = new Connection(new HostAndPort(BenchRedis.host(), BenchRedis.port()),
                    DefaultJedisClientConfig.builder().socketTimeoutMillis(BenchRedis.TIMEOUT_MS).build());
            connections.add(c);
            Thread thread = new Thread(() -> {
                try {
                    while (!stop.get()) decisions.addAndGet(round.applyAsInt(c));
                } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                    stop.set(true);
                }
            });
            threads.add(thread);
            thread.start();
        }
        Thread.sleep(500); // warm-up: the JIT, the keys created
        long d0 = decisions.get();
        double cpu0 = BenchRedis.cpuSeconds(admin);
        long t0 = System.nanoTime();
        Thread.sleep(each.toMillis());
        long d1 = decisions.get();
        double cpu1 = BenchRedis.cpuSeconds(admin);
        long t1 = System.nanoTime();
        stop.set(true);
        for (Thread t : threads) t.join();
        connections.forEach(Connection::close);
        if (failure.get() != null) throw new IllegalStateException(shape + " x" + batch + " failed", failure.get());
        long n = d1 - d0;
        return new Shape(shape, batch, n / ((t1 - t0) / 1e9), (cpu1 - cpu0) * 1e6 / n);
    }

    private static final ThreadLocalCounter NEXT = new ThreadLocalCounter();

    private static byte[] key(String prefix) {
        return (prefix + "{api:ip=10.0." + NEXT.next() % KEYS + "}").getBytes(StandardCharsets.UTF_8);
    }

    /** Each thread walks the keys from its own start. */
    private static final class ThreadLocalCounter extends ThreadLocal<int[]> {
        @Override
        protected int[] initialValue() {
            return new int[]{(int) (Thread.currentThread().getId() * 7919 % KEYS)};
        }

        int next() {
            return get()[0]++;
        }
    }

    /** ARGV[1] of an enforcing token-bucket request on Redis's clock that always admits (decide.lua's format). */
    private static final byte[] ADMITTING = ByteBuffer.allocate(8 + 2 + 5 * 8).order(ByteOrder.LITTLE_ENDIAN)
            .putDouble(-1).put((byte) 4).put((byte) 0).putDouble(1e9).putDouble(1e6).putDouble(1e9).putDouble(0).putDouble(1).array();

    /** One of the engine's scripts as it sends it (assembled from its resources at class load). */
    private static String engineScript(String name) throws ReflectiveOperationException {
        Field f = RedisEngine.class.getDeclaredField(name);
        f.setAccessible(true);
        return (String) f.get(null);
    }
}
