package dev.sluice.internal.redis;

import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.function.Supplier;

/**
 * Forms a shared round trip deterministically: the node is stopped (SIGSTOP) while a first call is
 * in flight to it, the other places in flight are taken by fillers (calls of a script that touches
 * nothing), the other calls queue behind them one by one (in this order), and the node goes on when
 * {@code resume} says so. What queued goes, together, in the round trip after the first's.
 */
final class Batches {

    private Batches() {
    }

    /**
     * What {@link #behindAFirstCall} started: the first call, then the queued ones in order;
     * {@code fillers}: the round trips of the fillers (one less than the places in flight).
     */
    record Started<T>(CompletableFuture<T> first, List<CompletableFuture<T>> queued, int fillers) {
    }

    private static final byte[] FILLER = "return 'filler'".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FILLER_SHA = SharedRoundTripsTest.sha1(FILLER);

    /**
     * @param node   the node the calls go to, stopped for the while
     * @param shared the call path whose round trips are watched
     * @param resume whether to let the node go on before returning (else the caller resumes it)
     */
    static <T> Started<T> behindAFirstCall(RedisProcess node, SharedRoundTrips shared, ExecutorService threads,
                                           Supplier<T> first, List<Supplier<T>> then, boolean resume) {
        int fillers = shared.inFlight() - 1;
        byte[] fillerKey = keyOn(shared, node);
        if (fillers > 0) {
            try (Jedis direct = new Jedis("127.0.0.1", node.port())) {
                direct.scriptLoad(FILLER); // so that a filler is one round trip, without NOSCRIPT
            }
        }
        node.pause();
        try {
            long before = shared.roundTrips();
            CompletableFuture<T> firstCall = CompletableFuture.supplyAsync(first, threads);
            Poll.until(Duration.ofSeconds(5), "the first call to be in flight", () -> shared.roundTrips() == before + 1);
            for (int i = 1; i <= fillers; i++) {
                long inFlight = before + 1 + i;
                CompletableFuture.runAsync(() -> shared.evalsha(FILLER_SHA, FILLER, List.of(fillerKey), List.of()), threads);
                Poll.until(Duration.ofSeconds(5), "filler " + i + " to be in flight", () -> shared.roundTrips() == inFlight);
            }
            List<CompletableFuture<T>> queued = new ArrayList<>();
            for (Supplier<T> call : then) {
                int waiting = shared.queued();
                queued.add(CompletableFuture.supplyAsync(call, threads));
                Poll.until(Duration.ofSeconds(5), "call " + (waiting + 1) + " to queue", () -> shared.queued() == waiting + 1);
            }
            return new Started<>(firstCall, queued, fillers);
        } finally {
            if (resume) node.resume();
        }
    }

    /** A key whose calls go to {@code node} (on Cluster: a key of one of its slots). */
    private static byte[] keyOn(SharedRoundTrips shared, RedisProcess node) {
        for (int i = 0; i < 100_000; i++) {
            byte[] key = ("filler{" + i + "}").getBytes(StandardCharsets.UTF_8);
            if (!(shared.nodeOf(key) instanceof HostAndPort h) || h.getPort() == node.port()) return key;
        }
        throw new IllegalStateException("no key of node " + node.port());
    }
}
