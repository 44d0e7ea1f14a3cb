package dev.sluice.bench;

import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.approximate.ApproximateEngine;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The approximate mode in a fleet: {@code instances} Sluice compositions in this JVM (each its own
 * pool, as separate servers have), each taking {@code perInstance} requests a second for one client
 * (a paced open loop, one thread per instance), over whole windows. Measures what the target of issue
 * 10 names: Redis round trips per request (counted on the client's sockets, see {@link RoundTrips};
 * and EVALSHA/EVAL calls in Redis's own statistics), and the fleet's overshoot per window against the
 * bound the README states (the sum over all instances but one of what each admitted beyond the fleet
 * count it knew) and against its sizing rule, {@code (instances - 1) x rate x (sync + round trip)}.
 */
final class ApproximateFleet {

    /** What one run measured. */
    record Run(int instances, int perInstance, long limit, long syncMs, int windows, long requests, long roundTrips,
               long evalCalls, long largestOvershoot, long bound, long longestUnsyncedMs, String perWindow,
               double redisCpuMs) {

        double roundTripsPerRequest() {
            return (double) roundTrips / requests;
        }

        /** The README's sizing rule with the measured longest interval in place of sync + round trip. */
        long sizingRule() {
            return (long) Math.ceil((instances - 1) * (double) perInstance * longestUnsyncedMs / 1000.0);
        }
    }

    private ApproximateFleet() {
    }

    static Run run(int instances, int perInstance, long limit, Duration sync, int windows) throws InterruptedException {
        Duration window = Duration.ofSeconds(1);
        Rule rule = Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(limit).window(window).sync(sync).build();
        ClientKey client = ClientKey.of("tenant-7");
        String prefix = BenchRedis.prefix("approx-fleet");
        List<UnifiedJedis> pools = new ArrayList<>();
        List<LimiterStack> fleet = new ArrayList<>();
        try {
            for (int i = 0; i < instances; i++) {
                UnifiedJedis pool = BenchRedis.pooled();
                pools.add(pool);
                fleet.add(BenchRedis.stack(pool, prefix, rule, true));
            }
            List<Acquisition> request = List.of(new Acquisition(rule, client));
            for (LimiterStack s : fleet) s.limiter().decide(request); // connect, load the script
            long windowMs = window.toMillis();
            long start = (System.currentTimeMillis() / windowMs + 2) * windowMs;
            long end = start + windows * windowMs;
            long paceNanos = 1_000_000_000L / perInstance;
            Map<Long, AtomicLong> admitted = new TreeMap<>();
            for (long w = start - windowMs; w <= end; w += windowMs) admitted.put(w, new AtomicLong());
            AtomicLong requests = new AtomicLong();
            CountDownLatch started = new CountDownLatch(instances);
            CountDownLatch done = new CountDownLatch(instances);
            long[] tripsAt = new long[2];
            long[] callsAt = new long[2];
            for (int i = 0; i < instances; i++) {
                LimiterStack s = fleet.get(i);
                long phase = i * paceNanos / instances;
                Thread t = new Thread(() -> {
                    try {
                        while (System.currentTimeMillis() < start) LockSupport.parkNanos(100_000);
                        started.countDown();
                        long next = System.nanoTime() + phase;
                        long now;
                        while ((now = System.currentTimeMillis()) < end) {
                            Decision d = s.limiter().decide(request);
                            requests.incrementAndGet();
                            if (d.allowed()) {
                                RuleDecision r = d.rules().get(0);
                                long w = Math.round((double) (now + r.resetMs()) / windowMs) * windowMs - windowMs;
                                AtomicLong count = admitted.get(w);
                                if (count != null) count.incrementAndGet();
                            }
                            next += paceNanos;
                            long wait = next - System.nanoTime();
                            if (wait > 0) LockSupport.parkNanos(wait);
                        }
                    } finally {
                        done.countDown();
                    }
                }, "approx-fleet-" + i);
                t.setDaemon(true);
                t.start();
            }
            while (System.currentTimeMillis() < start) LockSupport.parkNanos(100_000);
            tripsAt[0] = RoundTrips.count();
            double[] cpu = new double[2];
            try (Jedis admin = BenchRedis.admin()) {
                callsAt[0] = evalCalls(admin);
                cpu[0] = BenchRedis.cpuSeconds(admin);
            }
            done.await();
            for (LimiterStack s : fleet) { // the last counts: one more sync each
                ApproximateEngine e = s.approximate().engine();
                long deadline = System.nanoTime() + 5_000_000_000L;
                while (!e.allSynced() && System.nanoTime() < deadline) LockSupport.parkNanos(5_000_000);
            }
            tripsAt[1] = RoundTrips.count();
            try (Jedis admin = BenchRedis.admin()) {
                callsAt[1] = evalCalls(admin);
                cpu[1] = BenchRedis.cpuSeconds(admin);
            }
            long bound = 0;
            long smallest = Long.MAX_VALUE;
            long longest = 0;
            for (LimiterStack s : fleet) {
                ApproximateEngine e = s.approximate().engine();
                long u = e.largestUnsynced(rule);
                bound += u;
                smallest = Math.min(smallest, u);
                longest = Math.max(longest, e.longestUnsyncedMillis());
            }
            bound -= smallest;
            long overshoot = 0;
            List<String> per = new ArrayList<>();
            for (long w = start; w < end; w += windowMs) {
                long a = admitted.get(w).get();
                per.add(Long.toString(a));
                overshoot = Math.max(overshoot, a - limit);
            }
            return new Run(instances, perInstance, limit, sync.toMillis(), windows, requests.get(), tripsAt[1] - tripsAt[0],
                    callsAt[1] - callsAt[0], overshoot, bound, longest, String.join(", ", per), (cpu[1] - cpu[0]) * 1e3);
        } finally {
            for (LimiterStack s : fleet) s.close();
            for (UnifiedJedis p : pools) p.close();
        }
    }

    /**
     * What a sync costs Redis per key: {@code rounds} exchanges of {@code keys} keys each (every key
     * with a count to add, in calls of 128 pipelined), Redis CPU ({@code INFO cpu}) per key exchanged, in µs.
     */
    static double redisMicrosPerKey(int keys, int rounds) {
        String prefix = BenchRedis.prefix("approx-keys");
        try (UnifiedJedis pool = BenchRedis.pooled(); Jedis admin = BenchRedis.admin()) {
            dev.sluice.internal.redis.SyncScript sync = new dev.sluice.internal.redis.SyncScript(pool, false);
            long windowMs = 60_000;
            List<dev.sluice.internal.approximate.CountExchange.Delta> deltas = new ArrayList<>(keys);
            long start = System.currentTimeMillis() / windowMs * windowMs;
            for (int i = 0; i < keys; i++) {
                byte[] key = (prefix + "{api:ip=10.0." + (i / 256) + "." + (i % 256) + "}").getBytes(java.nio.charset.StandardCharsets.UTF_8);
                deltas.add(new dev.sluice.internal.approximate.CountExchange.Delta(key, Algorithm.FIXED_WINDOW, windowMs, start, 3, 0));
            }
            sync.exchange(deltas, -1); // load the script, create the keys
            double before = BenchRedis.cpuSeconds(admin);
            for (int r = 0; r < rounds; r++) sync.exchange(deltas, -1);
            return (BenchRedis.cpuSeconds(admin) - before) * 1e6 / ((double) keys * rounds);
        }
    }

    private static long evalCalls(Jedis admin) {
        Map<String, Long> calls = BenchRedis.commandCalls(admin);
        return calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L);
    }
}
