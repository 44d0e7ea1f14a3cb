package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;
import dev.sluice.http.ActualCost;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.TestRedis;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The programmatic API of concurrency rules and settled costs, against a real Redis. */
class SluiceConcurrencyTest {

    private static final Rule EXPORTS = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(2).build();
    /** A day of refill: a test's seconds refill no whole token. */
    private static final Rule LLM = Rule.builder("llm").limit(1000).window(Duration.ofDays(1)).cost(100).build();

    private static SluiceConfig config(String name, Rule... rules) {
        SluiceConfig.Builder b = SluiceConfig.builder().redisUrl(TestRedis.url())
                .keyPrefix(TestRedis.uniquePrefix(name)).redisTimeout(Duration.ofSeconds(2));
        for (Rule r : rules) b.rule(r);
        return b.build();
    }

    @Test
    void aSlotIsHeldUntilItsLeaseIsClosedWhateverTheWorkDid() {
        try (Sluice sluice = Sluice.builder(config("slots", EXPORTS)).build()) {
            ClientKey acme = ClientKey.of("acme");
            try (Lease first = sluice.tryAcquireSlot("exports", acme)) {
                assertThat(first.allowed()).isTrue();
                try (Lease second = sluice.tryAcquireSlot("exports", acme); Lease third = sluice.tryAcquireSlot("exports", acme)) {
                    assertThat(second.allowed()).isTrue();
                    assertThat(third.allowed()).isFalse();
                    assertThat(third.decision().retryAfter()).isEqualTo(Duration.ofSeconds(1));
                    assertThat(sluice.metrics().getSlotsHeld()).isEqualTo(2);
                }
                assertThatThrownBy(() -> {
                    try (Lease failing = sluice.tryAcquireSlot("exports", acme)) {
                        assertThat(failing.allowed()).isTrue();
                        throw new IllegalStateException("the export failed");
                    }
                }).hasMessage("the export failed");
                assertThat(sluice.tryAcquireSlot("exports", ClientKey.of("other")).allowed()).as("another client's own slots")
                        .isTrue();
            }
            assertThat(sluice.metrics().getSlotsHeld()).as("the other client's lease was never closed").isEqualTo(1);
            Lease a = sluice.tryAcquireSlot("exports", acme);
            Lease b = sluice.tryAcquireSlot("exports", acme);
            assertThat(List.of(a.allowed(), b.allowed())).containsExactly(true, true);
            a.close();
            a.close();
            assertThat(sluice.tryAcquireSlot("exports", acme).allowed()).as("closed twice, freed once: 1 + 1 held").isTrue();
        }
    }

    @Test
    void aConcurrencyRuleIsNotTakenByTheRateMethodsNorARateRuleBySlot() {
        try (Sluice sluice = Sluice.builder(config("methods", EXPORTS, LLM)).build()) {
            assertThatThrownBy(() -> sluice.tryAcquire("exports", "acme")).hasMessageContaining("tryAcquireSlot");
            assertThatThrownBy(() -> sluice.acquire("exports", ClientKey.of("acme"), 1, Duration.ZERO))
                    .hasMessageContaining("tryAcquireSlot");
            assertThatThrownBy(() -> sluice.tryAcquireSlot("llm", ClientKey.of("acme"))).hasMessageContaining("tryAcquire");
            assertThatThrownBy(() -> new Acquisition(EXPORTS, ClientKey.of("acme"), 2)).hasMessageContaining("one slot");
        }
    }

    @Test
    void beginHoldsSlotsAndSettlesTheCostTheRequestReallyHad() {
        try (Sluice sluice = Sluice.builder(config("begin", EXPORTS, LLM)).build()) {
            ClientKey acme = ClientKey.of("acme");
            try (Lease call = sluice.begin(List.of(new Acquisition(EXPORTS, acme), new Acquisition(LLM, acme)))) {
                assertThat(call.allowed()).isTrue();
                assertThat(call.decision().rules().get(1).remaining()).isEqualTo(900);
                call.settle("llm", 700);
                call.settle("llm", 700); // once only: the same take settled again changes nothing
                assertThatThrownBy(() -> call.settle("api", 1)).hasMessageContaining("did not decide");
                for (int i = 0; i < 2; i++) { // every time: a refused settlement does not count as made
                    assertThatThrownBy(() -> call.settle("exports", 1)).as("a concurrency rule settles no cost")
                            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("settles no cost");
                }
            }
            Decision next = sluice.tryAcquire("llm", acme);
            assertThat(next.remaining()).as("1000 - 700 - 100").isEqualTo(200);
        }
    }

    @Test
    void aLeaseSettlesACostAboveTheRulesMaxActualCostAtTheBound() {
        RuleConfig bounded = RuleConfig.of(LLM).withActualCost(ActualCost.parse("response-header:X-Tokens-Used").withMax(400));
        SluiceConfig local = SluiceConfig.builder().backend(SluiceConfig.Backend.LOCAL).rule(bounded).build();
        try (Sluice sluice = Sluice.builder(local).build()) {
            ClientKey acme = ClientKey.of("acme");
            try (Lease call = sluice.begin(List.of(new Acquisition(LLM, acme)))) {
                call.settle("llm", 5_000_000);
            }
            assertThat(sluice.tryAcquire("llm", acme).remaining()).as("1000 - 400 - 100, not a debt of millions")
                    .isEqualTo(500);
        }
    }

    @Test
    void aMaxActualCostBelowTheRulesCostIsRefusedInCodeToo() {
        RuleConfig below = RuleConfig.of(LLM).withActualCost(ActualCost.parse("attr:tokens").withMax(99));
        assertThatThrownBy(() -> SluiceConfig.builder().backend(SluiceConfig.Backend.LOCAL).rule(below).build())
                .isInstanceOf(ConfigException.class).hasMessageContaining("rule.llm.max-actual-cost='99'")
                .hasMessageContaining("at least the rule's cost (rule.llm.cost=100)");
    }

    /** The local engine keeps no once key: the lease itself settles each rule once. */
    @Test
    void aLeaseSettlesEachRuleOnceOnTheLocalEngineToo() {
        SluiceConfig local = SluiceConfig.builder().backend(SluiceConfig.Backend.LOCAL).rule(EXPORTS).rule(LLM).build();
        try (Sluice sluice = Sluice.builder(local).build()) {
            ClientKey acme = ClientKey.of("acme");
            try (Lease call = sluice.begin(List.of(new Acquisition(EXPORTS, acme), new Acquisition(LLM, acme)))) {
                call.settle("llm", 300);
                call.settle("llm", 300);
                call.settle("llm", 0); // a later, different figure: the first settlement stands
            }
            assertThat(sluice.tryAcquire("llm", acme).remaining()).as("1000 - 300 - 100").isEqualTo(600);
        }
    }

    @Test
    void settleGivesBackWhatARequestDidNotUse() {
        try (Sluice sluice = Sluice.builder(config("settle", LLM)).build()) {
            ClientKey acme = ClientKey.of("acme");
            Acquisition estimate = new Acquisition(LLM, acme);
            Decision d = sluice.decide(List.of(estimate));
            sluice.settle(estimate, d.rules().get(0), 30);
            assertThat(sluice.tryAcquire("llm", acme).remaining()).as("1000 - 30 - 100").isEqualTo(870);
            assertThatThrownBy(() -> sluice.settle(estimate, d.rules().get(0), -1)).hasMessageContaining("0 or more");
        }
    }

    @Test
    void aSlotHeldLongerThanItsLeaseIsRenewedByTheLimitersOwnThread() throws Exception {
        Rule shortLease = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(1).lease(Duration.ofSeconds(1))
                .build();
        try (Sluice sluice = Sluice.builder(config("renewed", shortLease)).build()) {
            ClientKey acme = ClientKey.of("acme");
            try (Lease held = sluice.tryAcquireSlot("exports", acme)) {
                assertThat(held.allowed()).isTrue();
                long until = System.nanoTime() + Duration.ofMillis(2_500).toNanos();
                int asked = 0;
                while (System.nanoTime() < until) { // two and a half leases: renewed every third of one
                    assertThat(sluice.tryAcquireSlot("exports", acme).allowed()).as("still held after %d asks", asked).isFalse();
                    asked++;
                    Thread.sleep(50);
                }
                assertThat(asked).isGreaterThan(20);
                assertThat(sluice.metrics().getLeasesLost()).isZero();
            }
            assertThat(sluice.tryAcquireSlot("exports", acme).allowed()).as("released at once when closed").isTrue();
        }
    }

    @Test
    void theSlotsHeldAreAGaugeAndTheLostLeasesACounterInMicrometer() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (Sluice sluice = Sluice.builder(config("meters", EXPORTS)).meterRegistry(registry).build();
             Lease held = sluice.tryAcquireSlot("exports", ClientKey.of("acme"))) {
            assertThat(held.allowed()).isTrue();
            assertThat(registry.get("sluice.slots.held").gauge().value()).isEqualTo(1.0);
            assertThat(registry.get("sluice.leases.lost").functionCounter().count()).isZero();
            assertThat(registry.get("sluice.slots.released.late").functionCounter().count()).isZero();
            assertThat(registry.get("sluice.decisions").tag("rule", "exports").tag("outcome", "allowed")
                    .functionCounter().count()).isEqualTo(1.0);
        }
    }

    @Test
    void closingTheLimiterReleasesTheSlotsStillHeld() {
        SluiceConfig config = config("closed", EXPORTS);
        Sluice first = Sluice.builder(config).build();
        first.tryAcquireSlot("exports", ClientKey.of("acme"));
        first.tryAcquireSlot("exports", ClientKey.of("acme"));
        first.close();
        try (Sluice second = Sluice.builder(config).build()) {
            assertThat(second.tryAcquireSlot("exports", ClientKey.of("acme")).allowed()).isTrue();
            assertThat(second.tryAcquireSlot("exports", ClientKey.of("acme")).allowed()).as("both of the first's released")
                    .isTrue();
        }
    }
}
