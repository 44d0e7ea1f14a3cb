package dev.sluice.internal.local;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the local engine adds to the algorithms: bounded memory, expiry, thread safety. */
class LocalEngineTest {

    private final ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
    private final Rule perMinute = Rule.of("api", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1));

    private boolean ask(LocalEngine engine, Rule rule, String client) {
        return engine.decide(List.of(new Acquisition(rule, ClientKey.parse(client)))).allowed();
    }

    @Test
    void aRuleBuiltAnewStillFindsItsClientsBeyondTheRuleCache() {
        LocalEngine engine = new LocalEngine(clock, 100_000);
        for (int i = 0; i < 5_000; i++) { // more distinct rules than the engine caches
            engine.decide(List.of(new Acquisition(Rule.of("r" + i, Algorithm.FIXED_WINDOW, 3, Duration.ofMinutes(1)), ClientKey.parse("c"))));
        }
        int admitted = 0;
        for (int i = 0; i < 5; i++) {
            Rule equalCopy = Rule.of("late", Algorithm.FIXED_WINDOW, 3, Duration.ofMinutes(1));
            if (engine.decide(List.of(new Acquisition(equalCopy, ClientKey.parse("c")))).allowed()) admitted++;
        }
        assertThat(admitted).as("equal rules share their clients' state").isEqualTo(3);
    }

    @Test
    void aFloodOfAMillionDistinctKeysKeepsAtMostMaxKeysStates() {
        LocalEngine engine = new LocalEngine(clock, 1_000);
        int admitted = 0;
        for (int i = 0; i < 1_000_000; i++) {
            if (ask(engine, perMinute, "flood-" + i)) admitted++;
        }
        assertThat(admitted).as("every new client has its quota").isEqualTo(1_000_000);
        assertThat(engine.keyCount()).isBetween(900, 1_000);
    }

    @Test
    void anActiveClientKeepsItsStateThroughAFloodOfDistinctKeys() {
        LocalEngine engine = new LocalEngine(clock, 1_000);
        for (int i = 0; i < 5; i++) {
            assertThat(ask(engine, perMinute, "steady")).isTrue();
        }
        for (int i = 0; i < 200_000; i++) {
            ask(engine, perMinute, "flood-" + i);
            if (i % 100 == 0) {
                assertThat(ask(engine, perMinute, "steady")).as("still limited after %d flood keys", i).isFalse();
            }
        }
    }

    @Test
    void aFloodOfNewKeysOnOneRuleNeverEvictsTheClientsOfAnotherRule() {
        Rule login = Rule.of("login", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        Rule apiKeys = Rule.of("apikey", Algorithm.FIXED_WINDOW, 100, Duration.ofHours(1));
        for (int maxKeys : new int[] {100, 100_000}) { // one segment, and 64
            LocalEngine engine = new LocalEngine(clock, maxKeys);
            int logins = maxKeys / 4;
            for (int i = 0; i < logins; i++) {
                assertThat(ask(engine, login, "ip=198.51.100." + i + "-" + maxKeys)).isTrue();
            }
            for (int i = 0; i < 4 * maxKeys; i++) {
                ask(engine, apiKeys, "h=made-up-" + i); // a client minting a new key per request
            }
            for (int i = 0; i < logins; i++) {
                assertThat(ask(engine, login, "ip=198.51.100." + i + "-" + maxKeys))
                        .as("login client %d of %d kept its spent quota", i, maxKeys).isFalse();
            }
            assertThat(engine.keyCount()).isLessThanOrEqualTo(maxKeys);
        }
    }

    @Test
    void theRuleHoldingTheMostStatesGivesWayToANewClientOfAnother() {
        Rule big = Rule.of("big", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        Rule small = Rule.of("small", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        LocalEngine engine = new LocalEngine(clock, 100);
        for (int i = 0; i < 100; i++) ask(engine, big, "b" + i);
        for (int i = 0; i < 30; i++) ask(engine, small, "s" + i);
        assertThat(engine.keyCount()).isEqualTo(100);
        int smallKept = 0;
        for (int i = 0; i < 30; i++) if (!ask(engine, small, "s" + i)) smallKept++;
        assertThat(smallKept).as("the new rule's clients took room from the biggest rule").isEqualTo(30);
        int bigKept = 0;
        for (int i = 99; i >= 0; i--) if (!ask(engine, big, "b" + i)) bigKept++; // the kept ones first
        assertThat(bigKept).as("its least recently used 30 made way").isEqualTo(70);
    }

    @Test
    void idleClientsAreSweptOnceTheirStateIsBackToFull() {
        LocalEngine engine = new LocalEngine(clock, 10_000);
        for (int i = 0; i < 1_000; i++) {
            ask(engine, perMinute, "idle-" + i);
        }
        assertThat(engine.keyCount()).isEqualTo(1_000);

        clock.advance(60_000 + 1_000); // the window's end plus the expiry margin
        for (int i = 0; i < 200; i++) {
            ask(engine, perMinute, "active");
            clock.advance(10);
        }
        assertThat(engine.keyCount()).isEqualTo(1);
    }

    @Test
    void anExpiredStateStartsAfreshEvenBeforeItIsSwept() {
        LocalEngine engine = new LocalEngine(clock, 10_000);
        for (int i = 0; i < 5; i++) ask(engine, perMinute, "a");
        assertThat(ask(engine, perMinute, "a")).isFalse();
        clock.advance(60_000);
        assertThat(ask(engine, perMinute, "a")).isTrue();
    }

    @Test
    void deniedRequestsOfUnknownClientsStoreNothing() {
        LocalEngine engine = new LocalEngine(clock, 10_000);
        for (int i = 0; i < 100; i++) {
            Decision d = engine.decide(List.of(new Acquisition(perMinute, ClientKey.parse("c" + i), 6)));
            assertThat(d.allowed()).isFalse();
        }
        assertThat(engine.keyCount()).isZero();
    }

    @Test
    void aRuleAskedTwiceInOneRequestIsAProgrammingError() {
        LocalEngine engine = new LocalEngine(clock, 100);
        assertThatThrownBy(() -> engine.decide(List.of(new Acquisition(perMinute, ClientKey.parse("a")), new Acquisition(perMinute, ClientKey.parse("a")))))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void concurrentRequestsAdmitExactlyTheLimit() throws Exception {
        LocalEngine engine = new LocalEngine(clock, 10_000);
        Rule rule = Rule.of("hot", Algorithm.TOKEN_BUCKET, 1_000, Duration.ofHours(1));
        int admitted = runConcurrently(8, 500, () -> ask(engine, rule, "hot") ? 1 : 0);
        assertThat(admitted).isEqualTo(1_000);
    }

    @Test
    void concurrentMultiRuleRequestsInOppositeOrdersNeitherDeadlockNorLeak() throws Exception {
        LocalEngine engine = new LocalEngine(clock, 10_000);
        Rule a = Rule.of("a", Algorithm.FIXED_WINDOW, 2_000, Duration.ofHours(1));
        Rule b = Rule.of("b", Algorithm.TOKEN_BUCKET, 1_000, Duration.ofHours(1));
        List<Acquisition> ab = List.of(new Acquisition(a, ClientKey.parse("x")), new Acquisition(b, ClientKey.parse("x")));
        List<Acquisition> ba = List.of(new Acquisition(b, ClientKey.parse("x")), new Acquisition(a, ClientKey.parse("x")));
        int[] turn = {0};
        int admitted = runConcurrently(8, 400, () -> {
            boolean flip;
            synchronized (turn) {
                flip = (turn[0]++ & 1) == 0;
            }
            return engine.decide(flip ? ab : ba).allowed() ? 1 : 0;
        });
        assertThat(admitted).isEqualTo(1_000);
        // b was exhausted; a took exactly what the admitted requests took, nothing for the denied ones
        Decision probe = engine.decide(List.of(new Acquisition(a, ClientKey.parse("x"))));
        assertThat(probe.rules().get(0).remaining()).isEqualTo(2_000 - 1_000 - 1);
    }

    private static int runConcurrently(int threads, int each, Callable<Integer> call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Integer>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    int sum = 0;
                    for (int i = 0; i < each; i++) sum += call.call();
                    return sum;
                }));
            }
            start.countDown();
            int total = 0;
            for (Future<Integer> f : futures) total += f.get(60, TimeUnit.SECONDS);
            return total;
        } finally {
            pool.shutdownNow();
        }
    }
}
