package dev.sluice.bench;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.LongAdder;

/**
 * One client floods a rule of 100 requests a minute from {@code threads} threads for a few
 * seconds; how many Redis round trips does it cost, with and without the denied-client cache?
 * (The admitted requests must reach Redis; the denied ones, with the cache, only once per
 * {@code retryAfter}.)
 */
final class DeniedFlood {

    record Flood(String algorithm, boolean cache, int threads, double seconds, long requests, long admitted,
                 long roundTrips) {
        double callsPer100Requests() {
            return 100.0 * roundTrips / requests;
        }

        double requestsPerSecond() {
            return requests / seconds;
        }
    }

    private DeniedFlood() {
    }

    static Flood run(String algorithm, boolean cache, int threads, Duration length) throws InterruptedException {
        try (UnifiedJedis jedis = BenchRedis.pooled()) {
            Rule rule = Rule.of("api", Algorithm.fromId(algorithm), 100, Duration.ofMinutes(1));
            RateLimiter limiter = BenchRedis.stack(jedis, BenchRedis.prefix("flood"), rule, cache).limiter();
            List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("ip=198.51.100.9")));
            // open the pool's connections first, so they are not counted as the flood's round trips
            for (int i = 0; i < threads; i++) jedis.ping();
            LongAdder requests = new LongAdder();
            LongAdder admitted = new LongAdder();
            long tripsBefore = RoundTrips.count();
            long start = System.nanoTime();
            long end = start + length.toNanos();
            CountDownLatch done = new CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                new Thread(() -> {
                    while (System.nanoTime() < end) {
                        if (limiter.decide(request).allowed()) admitted.increment();
                        requests.increment();
                    }
                    done.countDown();
                }).start();
            }
            done.await();
            double seconds = (System.nanoTime() - start) / 1e9;
            return new Flood(algorithm, cache, threads, seconds, requests.sum(), admitted.sum(),
                    RoundTrips.count() - tripsBefore);
        }
    }
}
