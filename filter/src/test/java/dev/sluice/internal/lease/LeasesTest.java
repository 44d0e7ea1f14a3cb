package dev.sluice.internal.lease;

import dev.sluice.internal.local.LocalEngine;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Renewing and releasing the slots requests hold, driven by fake clocks (the engine's and the
 * renewer's), with the renewals made by {@link Leases#renewDue()} rather than its thread.
 */
class LeasesTest {

    private static final Rule EXPORTS = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(1)
            .lease(Duration.ofSeconds(9)).build();
    private static final Rule API = Rule.builder("api").limit(10).window(Duration.ofMinutes(1)).build();

    private final ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
    private final AtomicLong nanos = new AtomicLong();
    private final LocalEngine engine = new LocalEngine(clock, 100);
    private final Leases leases = new Leases(engine, () -> "test", nanos::get, false);

    @AfterEach
    void close() {
        leases.close();
    }

    private Leases.Held take(String client) {
        List<Acquisition> request = List.of(new Acquisition(API, ClientKey.of(client)), new Acquisition(EXPORTS, ClientKey.of(client)));
        Decision d = engine.decide(request);
        assertThat(d.allowed()).isTrue();
        return leases.hold(request, d);
    }

    private void advance(long ms) {
        clock.advance(ms);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    private boolean free(String client) {
        List<Acquisition> probe = List.of(new Acquisition(EXPORTS, ClientKey.of(client)));
        Decision d = engine.decide(probe);
        if (d.allowed()) engine.giveBack(probe, d.rules());
        return d.allowed();
    }

    @Test
    void aSlotIsRenewedEveryThirdOfItsLeaseSoItOutlivesTheLease() {
        take("a");
        advance(2_999);
        assertThat(leases.renewDue()).as("not yet a third of the lease").isZero();
        advance(1);
        assertThat(leases.renewDue()).isEqualTo(1);
        for (int i = 0; i < 5; i++) {
            advance(3_000);
            assertThat(leases.renewDue()).isEqualTo(1);
        }
        assertThat(free("a")).as("18 s into a 9 s lease, renewed: still held").isFalse();
        assertThat(leases.slotsHeld()).isEqualTo(1);
    }

    @Test
    void aRequestWithoutASlotIsNotHeld() {
        List<Acquisition> request = List.of(new Acquisition(API, ClientKey.of("a")));
        assertThat(leases.hold(request, engine.decide(request))).isNull();
        assertThat(leases.slotsHeld()).isZero();
    }

    @Test
    void releasingHandsOverTheSlotsOnceAndStopsTheirRenewal() {
        Leases.Held held = take("a");
        List<Settlement> releases = held.release();
        assertThat(releases).hasSize(1);
        assertThat(releases.get(0).acquisition().rule()).isEqualTo(EXPORTS);
        assertThat(releases.get(0).charge()).isFalse();
        assertThat(held.release()).as("the second time: nothing").isEmpty();
        assertThat(leases.slotsHeld()).isZero();
        engine.settle(releases);
        advance(3_000);
        assertThat(leases.renewDue()).isZero();
        assertThat(free("a")).isTrue();
    }

    @Test
    void aSlotWhoseLeaseEndedBeforeItsRenewalIsCountedLostAndNotRenewedAgain() {
        take("a");
        advance(9_000); // the renewer stalled for a whole lease
        assertThat(leases.renewDue()).isZero();
        assertThat(leases.lost()).isEqualTo(1);
        assertThat(free("a")).as("it may have been counted free already: not brought back").isTrue();
        advance(3_000);
        assertThat(leases.renewDue()).as("not asked again").isZero();
        assertThat(leases.lost()).isEqualTo(1);
    }

    @Test
    void closingReleasesEverySlotStillHeld() {
        take("a");
        take("b");
        leases.close();
        assertThat(free("a")).isTrue();
        assertThat(free("b")).isTrue();
        assertThat(leases.slotsHeld()).isZero();
    }

    @Test
    void manySlotsDueAtOnceAreRenewedInCallsOfAtMostAFewHundred() {
        int[] calls = {0};
        LocalEngine counting = new LocalEngine(clock, 10_000);
        Leases many = new Leases(new RateLimiter() {
            @Override
            public Decision decide(List<Acquisition> acquisitions) {
                return counting.decide(acquisitions);
            }

            @Override
            public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
                calls[0]++;
                assertThat(acquisitions.size()).isLessThanOrEqualTo(Leases.MAX_PER_CALL);
                return counting.renew(acquisitions, taken);
            }
        }, () -> "many", nanos::get, false);
        try {
            for (int i = 0; i < 1_200; i++) {
                List<Acquisition> request = List.of(new Acquisition(EXPORTS, ClientKey.of("c" + i)));
                many.hold(request, counting.decide(request));
            }
            advance(3_000);
            assertThat(many.renewDue()).isEqualTo(1_200);
            assertThat(calls[0]).isEqualTo(3);
        } finally {
            many.close();
        }
    }

    /** Redis did not answer a renewal: tried again a second later, not a third of a lease later. */
    @Test
    void aRenewalThatFailedIsTriedAgainInASecond() {
        boolean[] failing = {true};
        int[] calls = {0};
        Leases retrying = new Leases(new RateLimiter() {
            @Override
            public Decision decide(List<Acquisition> acquisitions) {
                return engine.decide(acquisitions);
            }

            @Override
            public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
                calls[0]++;
                if (failing[0]) throw new LimiterUnavailableException("away", null, true);
                return engine.renew(acquisitions, taken);
            }
        }, () -> "retrying", nanos::get, false);
        try {
            List<Acquisition> request = List.of(new Acquisition(EXPORTS, ClientKey.of("a")));
            retrying.hold(request, engine.decide(request));
            advance(3_000);
            assertThat(retrying.renewDue()).isZero();
            advance(999);
            assertThat(retrying.renewDue()).as("not before a second").isZero();
            assertThat(calls[0]).isEqualTo(1);
            failing[0] = false;
            advance(1);
            assertThat(retrying.renewDue()).isEqualTo(1);
            assertThat(calls[0]).isEqualTo(2);
            advance(2_999);
            assertThat(retrying.renewDue()).as("then every third of the lease again").isZero();
        } finally {
            retrying.close();
        }
    }
}
