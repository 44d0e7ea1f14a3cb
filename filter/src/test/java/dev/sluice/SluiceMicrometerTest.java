package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Collection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A programmatic user's own {@code MeterRegistry}, handed to {@link Sluice.Builder#meterRegistry}. */
class SluiceMicrometerTest {

    private static final Rule API = Rule.of("api", Algorithm.FIXED_WINDOW, 2, Duration.ofHours(1));
    /** The local engine's: no hour of the rule's fixed window ends among a test's requests. */
    private static final ManualClock CLOCK = new ManualClock(ManualClock.MINUTE_BOUNDARY);

    private static SluiceConfig.Builder local() {
        return SluiceConfig.builder().backend(SluiceConfig.Backend.LOCAL).rule(API);
    }

    @Test
    void theMetersGoToTheRegistryHandedInAndNotToTheGlobalOne() {
        SimpleMeterRegistry mine = new SimpleMeterRegistry();
        SimpleMeterRegistry global = new SimpleMeterRegistry();
        Metrics.addRegistry(global);
        try (Sluice sluice = Sluice.builder(local().build()).clock(CLOCK).meterRegistry(mine).build()) {
            sluice.tryAcquire("api", "batch-1");
            sluice.tryAcquire("api", "batch-1");
            sluice.tryAcquire("api", "batch-1");

            assertThat(decisions(mine, "sluice", "allowed")).isEqualTo(2);
            assertThat(decisions(mine, "sluice", "denied")).isEqualTo(1);
            assertThat(global.find("sluice.decisions").meters()).isEmpty();
        } finally {
            Metrics.removeRegistry(global);
        }
        assertThat(mine.getMeters()).as("close removes them").isEmpty();
    }

    @Test
    void registeringTheMBeansGivesTheMetersTheJmxNameAndKeepsTheirCounts() {
        SimpleMeterRegistry mine = new SimpleMeterRegistry();
        try (Sluice sluice = Sluice.builder(local().build()).clock(CLOCK).meterRegistry(mine).build()) {
            sluice.tryAcquire("api", "batch-1");

            String name = sluice.registerMBeans("mm-batch");
            sluice.tryAcquire("api", "batch-1");

            assertThat(name).isEqualTo("mm-batch");
            assertThat(decisions(mine, "mm-batch", "allowed")).as("the counters behind the meters go on").isEqualTo(2);
            assertThat(mine.getMeters()).extracting(m -> m.getId().getTag("instance")).containsOnly("mm-batch");
        }
    }

    @Test
    void aSecondSluiceInTheSameRegistryGetsASuffixInsteadOfSharingMeters() {
        SimpleMeterRegistry mine = new SimpleMeterRegistry();
        try (Sluice first = Sluice.builder(local().build()).clock(CLOCK).meterRegistry(mine).build();
             Sluice second = Sluice.builder(local().build()).clock(CLOCK).meterRegistry(mine).build()) {
            first.tryAcquire("api", "a");
            second.tryAcquire("api", "a");
            second.tryAcquire("api", "a");

            assertThat(decisions(mine, "sluice", "allowed")).isEqualTo(1);
            assertThat(decisions(mine, "sluice-2", "allowed")).isEqualTo(2);
        }
    }

    @Test
    void anythingButAMeterRegistryIsRefused() {
        assertThatThrownBy(() -> Sluice.builder(local().build()).meterRegistry("prometheus"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("io.micrometer.core.instrument.MeterRegistry").hasMessageContaining("java.lang.String");
    }

    @Test
    void aRegistryWithMetricsMicrometerFalseIsAContradictionNotASilentChoice() {
        SluiceConfig off = local().micrometer(false).build();
        Sluice.Builder builder = Sluice.builder(off).meterRegistry(new SimpleMeterRegistry());

        assertThatThrownBy(builder::build).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("metrics.micrometer=false");
    }

    @Test
    void theLatencyTimerTimesEveryDecision() {
        SimpleMeterRegistry mine = new SimpleMeterRegistry();
        try (Sluice sluice = Sluice.builder(local().build()).clock(CLOCK).meterRegistry(mine).build()) {
            for (int i = 0; i < 5; i++) sluice.tryAcquire("api", "c" + i);

            assertThat(mine.get("sluice.decision.latency").tags("instance", "sluice", "source", "local").timer().count())
                    .isEqualTo(5);
            Collection<Meter> timers = mine.find("sluice.decision.latency").meters();
            assertThat(timers).as("backend=local: one source").hasSize(1);
        }
    }

    private static double decisions(SimpleMeterRegistry registry, String instance, String outcome) {
        return registry.get("sluice.decisions").tags("instance", instance, "rule", "api", "outcome", outcome)
                .functionCounter().count();
    }
}
