package dev.sluice.it.support;

import java.net.URI;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Concurrent clients released at once against a running application, whatever the container:
 * what the fleet tests and the leaky-bucket tests send, and what came back.
 */
public final class Crowd {

    private Crowd() {
    }

    /** What a fleet did with a crowd's requests. */
    public record Outcome(int allowed, int denied, int other, long elapsedMs) {

        /**
         * For a rule with a one-day window, aligned to the epoch, run after {@code dayBefore}
         * ({@link #today()}): exactly {@code limit} were allowed, or, if the run straddled midnight
         * UTC and so two windows, between one and two limits' worth.
         */
        public void assertOneDailyWindowAllowed(long dayBefore, int limit) {
            if (today() != dayBefore) {
                assertThat(allowed).isBetween(limit, 2 * limit);
            } else {
                assertThat(allowed).as("the fleet together allows exactly the limit").isEqualTo(limit);
            }
        }
    }

    /** The number of the current UTC day since the epoch: a one-day window's index. */
    public static long today() {
        return System.currentTimeMillis() / 86_400_000L;
    }

    /**
     * When each admitted request of a burst got its answer, in ms since the burst was released,
     * sorted; how many were refused; when the last answer of all came.
     */
    public record Burst(List<Long> admittedAtMs, int refused, long lastAnswerMs) {
    }

    /**
     * {@code clients} concurrent clients each send {@code requestsPerClient} GETs, client {@code c}'s
     * {@code i}-th request to {@code targets[(c + i) % targets.size()]}: round-robin over a fleet.
     */
    public static Outcome hammer(List<URI> targets, int clients, int requestsPerClient) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            AtomicInteger allowed = new AtomicInteger();
            AtomicInteger denied = new AtomicInteger();
            AtomicInteger other = new AtomicInteger();
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int client = c;
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < requestsPerClient; i++) {
                        HttpResponse<String> r = Http.get(targets.get((client + i) % targets.size()));
                        switch (r.statusCode()) {
                            case 200 -> allowed.incrementAndGet();
                            case 429 -> denied.incrementAndGet();
                            default -> other.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            long start = System.nanoTime();
            go.countDown();
            for (Future<?> f : done) {
                f.get();
            }
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            return new Outcome(allowed.get(), denied.get(), other.get(), elapsedMs);
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code requests} concurrent GETs of {@code target}, released at once; any status but 200 or 429 fails. */
    public static Burst burst(URI target, int requests) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(requests);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<long[]>> calls = new ArrayList<>();
            long[] start = new long[1];
            for (int i = 0; i < requests; i++) {
                calls.add(pool.submit(() -> {
                    go.await();
                    HttpResponse<String> r = Http.get(target);
                    return new long[]{r.statusCode(), (System.nanoTime() - start[0]) / 1_000_000};
                }));
            }
            start[0] = System.nanoTime(); // published to the clients by the latch
            go.countDown();
            List<Long> admittedAt = new ArrayList<>();
            int refused = 0;
            long last = 0;
            for (Future<long[]> call : calls) {
                long[] result = call.get();
                last = Math.max(last, result[1]);
                if (result[0] == 200) admittedAt.add(result[1]);
                else if (result[0] == 429) refused++;
                else throw new AssertionError("unexpected status " + result[0]);
            }
            Collections.sort(admittedAt);
            return new Burst(List.copyOf(admittedAt), refused, last);
        } finally {
            pool.shutdownNow();
        }
    }
}
