package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Settling a request's cost after a reload changed its rule (issue 16's settlements under issue 14's reload). */
class SluiceReloadSettlementTest {

    private static SluiceConfig config(boolean redis, String prefix, Rule rule) {
        SluiceConfig.Builder b = SluiceConfig.builder();
        if (redis) {
            b.redisUrl(TestRedis.url()).keyPrefix(prefix).redisTimeout(Duration.ofSeconds(2)).deniedCache(false);
        } else {
            b.backend(SluiceConfig.Backend.LOCAL);
        }
        return b.rule(rule).build();
    }

    /**
     * Found by a review of 0.3's settlements. A request admitted under a token bucket (estimate 100) is still running when a reload switches the rule to
     * a fixed window of 1,000 a minute. The client then uses its whole new window (10 x 100). The old request
     * completes and states 700 (600 more to charge). Contract: "more is charged even past the limit (the client is
     * then in debt: refused ...)". It was taken with the OLD rule (the algorithm had changed): as a token bucket, over a
     * key holding a fixed window's count, which the bucket read as absent and overwrote (force): the count of
     * 1,000 was wiped and the client had a second full window. A charge is now taken under the rule in force.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aChargeAfterAReloadChangedTheAlgorithmIsTakenOnTheClientsCountNotOverIt(boolean redis) {
        Rule bucket = Rule.builder("llm").algorithm(Algorithm.TOKEN_BUCKET).limit(1000).window(Duration.ofDays(1))
                .cost(100).build();
        Rule window = Rule.builder("llm").algorithm(Algorithm.FIXED_WINDOW).limit(1000).window(Duration.ofHours(1))
                .cost(100).build();
        String prefix = TestRedis.uniquePrefix("review-f1");
        ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
        try (Sluice sluice = Sluice.builder(config(redis, prefix, bucket)).clock(clock).build()) {
            ClientKey acme = ClientKey.of("acme");
            Lease running = sluice.begin(List.of(new Acquisition(sluice.rule("llm"), acme)));
            assertThat(running.allowed()).isTrue();

            sluice.reconfigure(config(redis, prefix, window));
            int admitted = 0;
            for (int i = 0; i < 10; i++) {
                if (sluice.tryAcquire("llm", acme).allowed()) admitted++;
            }
            assertThat(admitted).as("the new window's 1,000").isEqualTo(10);
            assertThat(sluice.tryAcquire("llm", acme).allowed()).as("the window is used up").isFalse();

            running.settle("llm", 700); // the old request cost 600 more than its estimate

            assertThat(sluice.tryAcquire("llm", acme).allowed())
                    .as("after a charge of 600 more the client must still be refused (count >= 1,000)").isFalse();
        }
    }
}
