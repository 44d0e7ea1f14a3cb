package dev.sluice.internal.failover;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Steady load on a limiter from a few threads, recording every decision: when it started, how long
 * it took, whether it called Redis (through {@link #observe}), and who decided. The chaos tests
 * start it, break Redis, mend it and then ask the samples what happened.
 */
final class ChaosLoad implements AutoCloseable {

    /** One decision. */
    record Sample(long startNanos, long nanos, boolean calledRedis, long redisNanos, boolean closedRule, boolean failed,
                  boolean allowed, RuleDecision.Source source) {
        boolean byRedis() {
            return source == RuleDecision.Source.REDIS;
        }
    }

    /** Per thread: [0] whether the current decision called Redis, [1] how long that call took (ns). */
    private static final ThreadLocal<long[]> REDIS_CALL = ThreadLocal.withInitial(() -> new long[2]);

    private final RateLimiter limiter;
    private final List<List<Sample>> perThread = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final CountDownLatch stopped;
    private final AtomicLong lastRedisDecision = new AtomicLong(Long.MIN_VALUE);
    private final AtomicReference<Throwable> unexpected = new AtomicReference<>();
    private volatile boolean running = true;

    /** Wraps the Redis engine so the load knows which decisions called it. */
    static RateLimiter observe(RateLimiter redis) {
        return acquisitions -> {
            long[] call = REDIS_CALL.get();
            call[0] = 1;
            long t0 = System.nanoTime();
            try {
                return redis.decide(acquisitions);
            } finally {
                call[1] = System.nanoTime() - t0;
            }
        };
    }

    /**
     * @param rules      each thread cycles through these, one rule per request, over 50 client keys of its own
     * @param pauseNanos each thread's pause between decisions, to be gentle on a shared machine
     */
    ChaosLoad(RateLimiter limiter, List<Rule> rules, int threadCount, long pauseNanos) {
        this(limiter, rules, threadCount, pauseNanos, null);
    }

    /**
     * @param flood a rule one more thread floods, without pause, as one client it denies: the flood's
     *              decisions are counted apart ({@link #flood()}), not in {@link #samples()}
     */
    ChaosLoad(RateLimiter limiter, List<Rule> rules, int threadCount, long pauseNanos, Rule flood) {
        this.limiter = limiter;
        this.stopped = new CountDownLatch(threadCount + (flood == null ? 0 : 1));
        for (int t = 0; t < threadCount; t++) {
            List<Sample> samples = new ArrayList<>(100_000);
            perThread.add(samples);
            int id = t;
            Thread thread = new Thread(() -> run(id, samples, rules, pauseNanos), "chaos-load-" + t);
            thread.setDaemon(true);
            threads.add(thread);
        }
        if (flood != null) {
            Thread thread = new Thread(() -> flood(flood), "chaos-flood");
            thread.setDaemon(true);
            threads.add(thread);
        }
    }

    /** What the flooding client got: requests, those that called Redis, and those admitted. */
    record Flood(long requests, long redisCalls, long admitted) {
        double savedPct() {
            return requests == 0 ? 0 : 100.0 * (requests - redisCalls) / requests;
        }
    }

    private final AtomicLong floodRequests = new AtomicLong();
    private final AtomicLong floodRedisCalls = new AtomicLong();
    private final AtomicLong floodAdmitted = new AtomicLong();

    Flood flood() {
        return new Flood(floodRequests.get(), floodRedisCalls.get(), floodAdmitted.get());
    }

    private void flood(Rule rule) {
        try {
            List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("ip=203.0.113.66")));
            while (running) {
                long[] call = REDIS_CALL.get();
                call[0] = 0;
                try {
                    if (limiter.decide(request).allowed()) floodAdmitted.incrementAndGet();
                } catch (RuntimeException e) {
                    unexpected.compareAndSet(null, e);
                }
                floodRequests.incrementAndGet();
                if (call[0] == 1) floodRedisCalls.incrementAndGet();
                // tens of thousands a second: a flood, without taking a whole core of a shared 2-core machine
                LockSupport.parkNanos(20_000);
            }
        } finally {
            stopped.countDown();
        }
    }

    ChaosLoad start() {
        threads.forEach(Thread::start);
        return this;
    }

    private void run(int id, List<Sample> samples, List<Rule> rules, long pauseNanos) {
        try {
            long i = 0;
            while (running) {
                Rule rule = rules.get((int) (i % rules.size()));
                List<Acquisition> request = List.of(new Acquisition(rule, ClientKey.parse("ip=10.0." + id + "." + (i % 50))));
                long[] call = REDIS_CALL.get();
                call[0] = 0;
                call[1] = 0;
                long t0 = System.nanoTime();
                Decision d = null;
                boolean failed = false;
                try {
                    d = limiter.decide(request);
                } catch (RuntimeException e) {
                    failed = true;
                    unexpected.compareAndSet(null, e);
                }
                long took = System.nanoTime() - t0;
                RuleDecision r = d == null ? null : d.rules().get(0);
                Sample s = new Sample(t0, took, call[0] == 1, call[1], rule.failurePolicy() == FailurePolicy.CLOSED, failed,
                        r != null && r.allowed(), r == null ? null : r.source());
                synchronized (samples) {
                    samples.add(s);
                }
                if (s.byRedis()) lastRedisDecision.accumulateAndGet(t0, Math::max);
                i++;
                if (pauseNanos > 0) LockSupport.parkNanos(pauseNanos);
            }
        } finally {
            stopped.countDown();
        }
    }

    /** Start time of the latest decision Redis made, or Long.MIN_VALUE. */
    long lastRedisDecisionNanos() {
        return lastRedisDecision.get();
    }

    /** The first exception a decision threw (there should be none). */
    Throwable unexpected() {
        return unexpected.get();
    }

    List<Sample> samples() {
        List<Sample> all = new ArrayList<>();
        for (List<Sample> s : perThread) {
            synchronized (s) {
                all.addAll(s);
            }
        }
        all.sort((a, b) -> Long.compare(a.startNanos(), b.startNanos()));
        return all;
    }

    /** Samples that started in [from, to). */
    List<Sample> between(long fromNanos, long toNanos) {
        return samples().stream().filter(s -> s.startNanos() - fromNanos >= 0 && s.startNanos() - toNanos < 0).toList();
    }

    static double p99Millis(List<Sample> samples) {
        return percentileMillis(samples, 0.99);
    }

    static double percentileMillis(List<Sample> samples, double q) {
        if (samples.isEmpty()) return 0;
        long[] nanos = samples.stream().mapToLong(Sample::nanos).toArray();
        Arrays.sort(nanos);
        int rank = (int) Math.ceil(q * nanos.length) - 1;
        return nanos[Math.max(0, rank)] / 1e6;
    }

    static double maxMillis(List<Sample> samples) {
        return samples.stream().mapToLong(Sample::nanos).max().orElse(0) / 1e6;
    }

    /** Stops the threads and waits for them. */
    @Override
    public void close() {
        running = false;
        try {
            stopped.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
