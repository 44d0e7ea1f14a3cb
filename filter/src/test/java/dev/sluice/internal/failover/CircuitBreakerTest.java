package dev.sluice.internal.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.failover.CircuitBreaker.Permit;
import dev.sluice.internal.failover.CircuitBreaker.State;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class CircuitBreakerTest {

    private final ManualClock now = new ManualClock(10_000);
    private final List<String> transitions = new ArrayList<>();
    private final CircuitBreaker breaker = new CircuitBreaker(
            new SluiceConfig.BreakerSettings(3, Duration.ofMillis(250), Duration.ofSeconds(1)), now,
            (from, to, openFor) -> transitions.add(from + "->" + to + (to == State.OPEN ? "(" + openFor + ")" : "")));

    @Test
    void closedBreakerLetsEveryCallThrough() {
        for (int i = 0; i < 1000; i++) {
            assertThat(breaker.acquire()).isEqualTo(Permit.CALL);
            breaker.onSuccess(Permit.CALL);
        }
        assertThat(breaker.state()).isEqualTo(State.CLOSED);
        assertThat(breaker.millisUntilProbe()).isZero();
    }

    @Test
    void opensAfterThresholdConsecutiveFailures() {
        fail(2);
        assertThat(breaker.state()).isEqualTo(State.CLOSED);

        fail(1);

        assertThat(breaker.state()).isEqualTo(State.OPEN);
        assertThat(breaker.acquire()).isEqualTo(Permit.REJECTED);
        assertThat(breaker.millisUntilProbe()).isEqualTo(250);
        assertThat(transitions).containsExactly("CLOSED->OPEN(250)");
    }

    @Test
    void aSuccessResetsTheFailureCount() {
        fail(2);
        breaker.acquire();
        breaker.onSuccess(Permit.CALL);
        fail(2);

        assertThat(breaker.state()).isEqualTo(State.CLOSED);
    }

    @Test
    void afterTheOpenIntervalOneProbeGoesThroughAndOthersKeepUsingTheFailurePolicy() {
        fail(3);
        now.advance(249);
        assertThat(breaker.acquire()).isEqualTo(Permit.REJECTED);
        now.advance(1);

        assertThat(breaker.acquire().kind()).isEqualTo(Permit.Kind.PROBE);
        assertThat(breaker.state()).isEqualTo(State.HALF_OPEN);
        assertThat(breaker.acquire()).isEqualTo(Permit.REJECTED);
        assertThat(breaker.acquire()).isEqualTo(Permit.REJECTED);
    }

    @Test
    void successfulProbeClosesTheBreaker() {
        fail(3);
        now.advance(250);
        Permit probe = breaker.acquire();

        breaker.onSuccess(probe);

        assertThat(breaker.state()).isEqualTo(State.CLOSED);
        assertThat(breaker.acquire()).isEqualTo(Permit.CALL);
        assertThat(transitions).containsExactly("CLOSED->OPEN(250)", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED");
    }

    @Test
    void eachFailedProbeDoublesTheOpenIntervalUpToOpenMax() {
        fail(3);
        List<Long> intervals = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            now.advance(breaker.millisUntilProbe());
            Permit probe = breaker.acquire();
            assertThat(probe.kind()).isEqualTo(Permit.Kind.PROBE);
            breaker.onFailure(probe);
            intervals.add(breaker.millisUntilProbe());
        }

        assertThat(intervals).containsExactly(500L, 1000L, 1000L, 1000L, 1000L);
    }

    @Test
    void theIntervalStartsAgainFromOpenBaseAfterRecovery() {
        fail(3);
        now.advance(250);
        breaker.onFailure(breaker.acquire()); // 500
        now.advance(500);
        breaker.onSuccess(breaker.acquire());

        fail(3);

        assertThat(breaker.millisUntilProbe()).isEqualTo(250);
    }

    @Test
    void failuresOfCallsThatWereInFlightWhenTheBreakerOpenedDoNotExtendIt() {
        Permit[] inFlight = new Permit[5];
        for (int i = 0; i < inFlight.length; i++) inFlight[i] = breaker.acquire();
        for (Permit p : inFlight) breaker.onFailure(p);

        assertThat(breaker.state()).isEqualTo(State.OPEN);
        assertThat(breaker.millisUntilProbe()).isEqualTo(250);
        assertThat(transitions).containsExactly("CLOSED->OPEN(250)");
    }

    @Test
    void aLateSuccessOfAnOldCallDoesNotCloseAnOpenBreaker() {
        Permit old = breaker.acquire();
        fail(3);

        breaker.onSuccess(old);

        assertThat(breaker.state()).isEqualTo(State.OPEN);
    }

    @Test
    void aProbeThatNeverReportsIsReplacedAfterOneInterval() {
        fail(3);
        now.advance(250);
        assertThat(breaker.acquire().kind()).isEqualTo(Permit.Kind.PROBE);
        now.advance(249);
        assertThat(breaker.acquire()).isEqualTo(Permit.REJECTED);
        now.advance(1);

        assertThat(breaker.acquire().kind()).isEqualTo(Permit.Kind.PROBE);
    }

    /** The race a review found: a stale probe's late failure reopened the breaker and its replacement's success was dropped. */
    @Test
    void aReplacedProbesLateFailureDoesNotReopenTheBreakerOverItsReplacement() {
        fail(3);
        now.advance(250);
        Permit stale = breaker.acquire();
        now.advance(250);
        Permit replacement = breaker.acquire();
        assertThat(replacement.kind()).isEqualTo(Permit.Kind.PROBE);

        breaker.onFailure(stale);
        assertThat(breaker.state()).as("the stale probe says nothing new").isEqualTo(State.HALF_OPEN);
        breaker.onSuccess(replacement);

        assertThat(breaker.state()).isEqualTo(State.CLOSED);
        assertThat(breaker.acquire()).isEqualTo(Permit.CALL);
    }

    @Test
    void aReplacedProbesLateSuccessClosesTheBreaker() {
        fail(3);
        now.advance(250);
        Permit stale = breaker.acquire();
        now.advance(250);
        Permit replacement = breaker.acquire();

        breaker.onSuccess(stale);
        assertThat(breaker.state()).as("Redis answered within the timeout after all").isEqualTo(State.CLOSED);
        breaker.onFailure(replacement);
        assertThat(breaker.state()).as("a probe of a closed breaker reports nothing").isEqualTo(State.CLOSED);
    }

    @Test
    void concurrentCallersGetExactlyOneProbe() throws Exception {
        fail(3);
        now.advance(250);
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        CountDownLatch done = new CountDownLatch(threads);
        AtomicInteger probes = new AtomicInteger();
        AtomicInteger rejected = new AtomicInteger();
        for (int t = 0; t < threads; t++) {
            new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < 1000; i++) {
                        Permit p = breaker.acquire();
                        if (p.kind() == Permit.Kind.PROBE) probes.incrementAndGet();
                        else if (p == Permit.REJECTED) rejected.incrementAndGet();
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                } finally {
                    done.countDown();
                }
            }).start();
        }
        done.await();

        assertThat(probes.get()).isEqualTo(1);
        assertThat(rejected.get()).isEqualTo(threads * 1000 - 1);
    }

    private void fail(int times) {
        for (int i = 0; i < times; i++) {
            Permit p = breaker.acquire();
            assertThat(p).isEqualTo(Permit.CALL);
            breaker.onFailure(p);
        }
    }
}
