package dev.sluice.bench;

import redis.clients.jedis.Jedis;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What one decision costs Redis: its CPU time (from {@code INFO cpu}: user + system of the
 * server, network handling included), round trips (counted by the client's sockets, see
 * {@link RoundTrips}) and commands executed (from {@code INFO commandstats} deltas, commands run
 * inside scripts included), for a fixed number of decisions by a number of threads.
 */
final class CommandCount {

    /** The figures of one (contender, workload, threads). */
    record Cost(String contender, Workload workload, int threads, int decisions, int admitted,
                double roundTrips, double commands, Map<String, Double> perCommand, double redisCpuMicros,
                double decisionsPerSecond) {
    }

    private CommandCount() {
    }

    /** Runs {@code decisions} once to open the pool's connections and create the keys, then again measured. */
    static Cost measure(String label, Contender contender, Workload workload, int threads, int decisions)
            throws InterruptedException {
        contender.prepare(workload);
        run(contender, workload, threads, Math.max(decisions, workload.keys));
        try (Jedis admin = BenchRedis.admin()) {
            Map<String, Long> before = BenchRedis.commandCalls(admin);
            double cpuBefore = BenchRedis.cpuSeconds(admin);
            long tripsBefore = RoundTrips.count();
            long t0 = System.nanoTime();
            int admitted = run(contender, workload, threads, decisions);
            double seconds = (System.nanoTime() - t0) / 1e9;
            long trips = RoundTrips.count() - tripsBefore;
            double cpu = BenchRedis.cpuSeconds(admin) - cpuBefore;
            Map<String, Long> after = BenchRedis.commandCalls(admin);
            Map<String, Double> per = new TreeMap<>();
            long total = 0;
            for (Map.Entry<String, Long> e : after.entrySet()) {
                if (e.getKey().equals("info")) continue;
                long delta = e.getValue() - before.getOrDefault(e.getKey(), 0L);
                if (delta > 0) {
                    per.put(e.getKey(), (double) delta / decisions);
                    total += delta;
                }
            }
            return new Cost(label, workload, threads, decisions, admitted, (double) trips / decisions,
                    (double) total / decisions, per, cpu * 1e6 / decisions, decisions / seconds);
        }
    }

    /** @return how many were admitted */
    private static int run(Contender contender, Workload workload, int threads, int decisions) throws InterruptedException {
        AtomicInteger left = new AtomicInteger(decisions);
        AtomicInteger admitted = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            int start = t * 7919 % workload.keys;
            new Thread(() -> {
                int k = start;
                while (left.getAndDecrement() > 0) {
                    if (contender.tryAcquire(k)) admitted.incrementAndGet();
                    k = k + 1 == workload.keys ? 0 : k + 1;
                }
                done.countDown();
            }).start();
        }
        done.await();
        return admitted.get();
    }
}
