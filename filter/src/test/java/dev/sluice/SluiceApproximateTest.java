package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.approximate.ApproximateEngine;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.Poll;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** The approximate mode through the programmatic API, on a real Redis: changing mode while running, and Redis away. */
class SluiceApproximateTest {

    private static final ClientKey CLIENT = ClientKey.of("tenant-7");

    private static Rule api(Duration sync, long fallbackLimit) {
        return Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(10).window(Duration.ofHours(1)).sync(sync)
                .fallbackLimit(fallbackLimit).build();
    }

    /**
     * The rule is a fixed window of an hour on Redis's clock (the approximate counts' and the backstop's
     * on this machine's): each test's counts, across its syncs and waits, in one window.
     */
    @BeforeEach
    void roomInTheHour() {
        WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(30));
    }

    private static ApproximateEngine engine(Sluice sluice) {
        return sluice.stack().approximate().engine();
    }

    private static void awaitSynced(Sluice sluice) {
        ApproximateEngine e = engine(sluice);
        Poll.until(Duration.ofSeconds(5), "every count sent and acknowledged", e::allSynced);
    }

    @Test
    void aRuleChangesBetweenExactAndApproximateWhileRunningAndKeepsEveryClientsCount() {
        SluiceConfig.Builder config = SluiceConfig.builder().redisUrl(TestRedis.url())
                .keyPrefix(TestRedis.uniquePrefix("approx-reload")).redisTimeout(Duration.ofSeconds(2));
        SluiceConfig exact = config.rule(api(Duration.ZERO, 10)).build();
        try (Sluice sluice = Sluice.builder(exact).build()) {
            for (int i = 0; i < 4; i++) assertThat(sluice.tryAcquire("api", CLIENT).allowed()).isTrue();

            SluiceConfig approximate = SluiceConfig.builder().redisUrl(TestRedis.url()).keyPrefix(exact.keyPrefix())
                    .redisTimeout(Duration.ofSeconds(2)).rule(api(Duration.ofMillis(100), 10)).build();
            sluice.reconfigure(approximate);
            RuleDecision first = sluice.tryAcquire("api", CLIENT).rules().get(0);
            assertThat(first.source()).isEqualTo(RuleDecision.Source.APPROXIMATE);
            assertThat(first.remaining()).as("before its first sync, the instance knows only its own count").isEqualTo(9);
            awaitSynced(sluice);
            assertThat(sluice.tryAcquire("api", CLIENT).rules().get(0).remaining()).as("the 4 exact ones, 2 approximate")
                    .isEqualTo(4);
            sluice.tryAcquire("api", CLIENT);
            sluice.tryAcquire("api", CLIENT);

            sluice.reconfigure(exact);
            awaitSynced(sluice); // what the approximate rule counted last still goes to Redis
            RuleDecision back = sluice.tryAcquire("api", CLIENT).rules().get(0);
            assertThat(back.source()).isEqualTo(RuleDecision.Source.REDIS);
            assertThat(back.remaining()).as("4 + 4 counted before, this one now").isEqualTo(1);
        }
    }

    @Test
    void whileRedisIsAwayApproximateRulesAreDecidedByTheBackstopWhoseCountsAreNeverSent() {
        try (RedisProcess redis = RedisProcess.start()) {
            SluiceConfig config = SluiceConfig.builder().redisUrl(redis.url()).redisTimeout(Duration.ofMillis(200))
                    .rule(api(Duration.ofMillis(50), 2)).build();
            try (Sluice sluice = Sluice.builder(config).build()) {
                for (int i = 0; i < 3; i++) sluice.tryAcquire("api", CLIENT);
                awaitSynced(sluice);

                redis.pause();
                sluice.tryAcquire("api", CLIENT); // admitted while Redis answered, as far as this instance knows
                Poll.until(Duration.ofSeconds(5), "a sync to fail", () -> !engine(sluice).available());
                long errors = sluice.metrics().getRedisErrors() + sluice.metrics().getRedisTimeouts();
                Decision[] away = new Decision[4];
                for (int i = 0; i < away.length; i++) away[i] = sluice.tryAcquire("api", CLIENT);
                assertThat(away[0].rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
                assertThat(away[0].allowed()).isTrue();
                assertThat(away[1].allowed()).isTrue();
                assertThat(away[2].allowed()).as("the backstop's fallback-limit of 2 per instance").isFalse();
                assertThat(sluice.metrics().getRedisErrors() + sluice.metrics().getRedisTimeouts())
                        .as("no Redis call per request").isEqualTo(errors);

                redis.resume();
                Poll.until(Duration.ofSeconds(5), "a sync to succeed", () -> engine(sluice).available());
                awaitSynced(sluice);
                RuleDecision back = sluice.tryAcquire("api", CLIENT).rules().get(0);
                assertThat(back.source()).isEqualTo(RuleDecision.Source.APPROXIMATE);
                // the 4 counted while Redis answered were sent (the 4th twice if the paused Redis ran the sync that
                // timed out once it woke: a lost reply errs low); the backstop's 2 never
                assertThat(back.remaining()).isBetween(10L - 5 - 1, 10L - 4 - 1);
            } finally {
                redis.resume();
            }
        }
    }
}
