package dev.sluice.internal.failover;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A flood of distinct client identities while Redis is down, through the production composition
 * (denied-client cache, failure handling, Redis engine): the local backstop decides them all and keeps
 * at most {@code local.max-keys} states, so its heap stays bounded. (The HTTP version, with
 * spoofed forwarded headers, is the filter's.)
 */
class HostileKeysIT {

    private static final int MAX_KEYS = 10_000;
    private static final int IDENTITIES = 1_000_000;

    @Test
    void aMillionDistinctClientsWithRedisDownKeepTheBackstopBounded() {
        Rule rule = Rule.of("api", Algorithm.TOKEN_BUCKET, 100, Duration.ofMinutes(1));
        int deadPort = RedisProcess.freePort();
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        SluiceConfig config = SluiceConfig.builder().rule(rule).redisUrl("redis://127.0.0.1:" + deadPort)
                .keyPrefix("hostile:").localMaxKeys(MAX_KEYS).build();
        try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, new SluiceMetrics())) {
            RateLimiter limiter = stack.limiter();
            LocalEngine local = stack.local();
            limiter.decide(List.of(new Acquisition(rule, ClientKey.parse("warm-up"))));
            System.gc();
            long heapBefore = memory.getHeapMemoryUsage().getUsed();
            int maxSeen = 0;
            long local429s = 0;

            for (int i = 0; i < IDENTITIES; i++) {
                Decision d = limiter.decide(List.of(new Acquisition(rule, ClientKey.parse("ip=" + (i >>> 16) + "." + ((i >>> 8) & 255)
                        + "." + (i & 255) + ".7"))));
                if (d.rules().get(0).source() != Source.BACKSTOP) {
                    throw new AssertionError("decision " + i + " not by the backstop: " + d);
                }
                if (!d.allowed()) local429s++;
                if ((i & 0xffff) == 0) maxSeen = Math.max(maxSeen, local.keyCount());
            }
            maxSeen = Math.max(maxSeen, local.keyCount());
            System.gc();
            long heapGrowth = memory.getHeapMemoryUsage().getUsed() - heapBefore;

            System.out.printf("HOSTILE keys: identities=%d max-local-keys=%d heap-growth-mb=%.1f%n",
                    IDENTITIES, maxSeen, heapGrowth / 1e6);
            assertThat(local429s).as("every new identity starts with a full bucket").isZero();
            assertThat(maxSeen).isLessThanOrEqualTo(MAX_KEYS);
            assertThat(heapGrowth).as("heap retained after a million identities (bytes)").isLessThan(64L << 20);
        }
    }
}
