package dev.sluice.internal.failover;

import dev.sluice.testing.StandardError;
import dev.sluice.key.ClientKey;
import dev.sluice.config.SluiceConfig;
import dev.sluice.config.SluiceConfig.RedisSettings;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.internal.redis.RedisClients;
import dev.sluice.internal.redis.RedisEngine;
import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedisSettings;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Reads what Sluice really logs (slf4j-simple writes to System.err in the tests) while it meets a
 * wrong password and a dying Redis, and finds no password in it.
 */
class SecretsNotLoggedTest {

    private static final String PASSWORD = "S3cr3t-Pa55word";
    private static final String WRONG_PASSWORD = "Wr0ng-Pa55word";
    private static final Rule API = Rule.of("api", Algorithm.FIXED_WINDOW, 100, Duration.ofMinutes(1));
    private static final SluiceConfig.BreakerSettings BREAKER =
            new SluiceConfig.BreakerSettings(3, Duration.ofMillis(100), Duration.ofSeconds(1));

    @Test
    void neitherTheRightNorAWrongPasswordAppearsInTheLog() {
        String log;
        try (RedisProcess server = RedisProcess.start()) {
            try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
                admin.aclSetUser("sluice", "on", ">" + PASSWORD, "~*", "+@all");
                admin.aclSetUser("default", "off");
            }
            log = StandardError.capture(() -> {
                RedisSettings wrong = TestRedisSettings.standalone("redis://sluice:" + WRONG_PASSWORD + "@127.0.0.1:"
                        + server.port()).timeout(Duration.ofSeconds(1)).build();
                assertThat(decideOnce(wrong)).as("a wrong password falls back").isEqualTo(Source.BACKSTOP);

                RedisSettings right = TestRedisSettings.standalone("redis://sluice:" + PASSWORD + "@127.0.0.1:"
                        + server.port()).timeout(Duration.ofSeconds(1)).build();
                LoggerFactory.getLogger(SecretsNotLoggedTest.class).info("settings as an application might log them: {}", right);
                try (UnifiedJedis jedis = RedisClients.create(right);
                     FailoverLimiter limiter = limiter(jedis, right)) {
                    assertThat(limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))).rules().get(0).source())
                            .isEqualTo(Source.REDIS);
                    server.kill();
                    assertThat(limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))).rules().get(0).source())
                            .isEqualTo(Source.BACKSTOP);
                }
            });
        }

        assertThat(log).as("the log was captured").contains("WARN", "WRONGPASS", "is unavailable", "password=****");
        assertThat(log).doesNotContain(PASSWORD).doesNotContain(WRONG_PASSWORD);
    }

    private static Source decideOnce(RedisSettings settings) {
        try (UnifiedJedis jedis = RedisClients.create(settings);
             FailoverLimiter limiter = limiter(jedis, settings)) {
            return limiter.decide(List.of(new Acquisition(API, ClientKey.parse("ip=1")))).rules().get(0).source();
        }
    }

    private static FailoverLimiter limiter(UnifiedJedis jedis, RedisSettings settings) {
        return new FailoverLimiter(new RedisEngine(jedis, "secrets:", true, Clock.SYSTEM, false),
                new LocalEngine(Clock.SYSTEM, 100), BREAKER, settings.describe(), new SluiceMetrics());
    }

}
