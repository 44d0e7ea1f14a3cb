package dev.sluice.internal.redis;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision.Source;
import dev.sluice.testing.RedisProcess;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisDataException;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Redis that reached {@code maxmemory} under {@code noeviction} refuses writes with {@code OOM}. For
 * Sluice that is a Redis failure like any other (the failure policy decides), and a request is never
 * half-charged: the script decides every rule before it writes, and Redis refuses a script's first write,
 * never a later one (so nothing is written at all).
 */
class RedisOutOfMemoryIT {

    private static final Rule WINDOW = Rule.of("api", Algorithm.FIXED_WINDOW, 100, Duration.ofMinutes(1));
    private static final Rule LOG = Rule.of("log", Algorithm.SLIDING_WINDOW_LOG, 100, Duration.ofMinutes(1));
    private static final Rule LOGIN = new Rule("login", Algorithm.FIXED_WINDOW, 5, Duration.ofMinutes(1), 5, 1,
            FailurePolicy.CLOSED, 5, Duration.ZERO);

    @Test
    void anOomReplyIsARedisFailureAndChargesNoRuleOfTheRequest() {
        try (RedisProcess redis = RedisProcess.start("--maxmemory", "3mb", "--maxmemory-policy", "noeviction");
             Jedis admin = new Jedis("127.0.0.1", redis.port())) {
            SluiceConfig config = SluiceConfig.builder().rule(WINDOW).rule(LOG).rule(LOGIN).redisUrl(redis.url())
                    .keyPrefix("oom:").redisTimeout(Duration.ofSeconds(1)).build();
            SluiceMetrics metrics = new SluiceMetrics();
            try (LimiterStack stack = LimiterStack.build(config, Clock.SYSTEM, null, metrics)) {
                ClientKey client = ClientKey.parse("ip=198.51.100.1");
                List<Acquisition> request = List.of(new Acquisition(WINDOW, client), new Acquisition(LOG, client));
                assertThat(stack.limiter().decide(request).rules().get(0).source()).isEqualTo(Source.REDIS);
                admin.del(stack.redis().key(WINDOW, client), stack.redis().key(LOG, client));

                fillUntilOutOfMemory(admin);
                // well below what is used now: Redis's own housekeeping (Lua's garbage collector, query
                // buffers shrunk by its cron) can free a few KB, and at the margin a later write would pass
                admin.configSet("maxmemory", "1mb");

                Decision open = stack.limiter().decide(request);
                assertThat(open.allowed()).as("failure-policy open: the backstop decides").isTrue();
                assertThat(open.rules()).allSatisfy(r -> assertThat(r.source()).isEqualTo(Source.BACKSTOP));
                assertThat(admin.exists(stack.redis().key(WINDOW, client))).as("first rule charged").isFalse();
                assertThat(admin.exists(stack.redis().key(LOG, client))).as("second rule charged").isFalse();

                Decision closed = stack.limiter().decide(List.of(new Acquisition(LOGIN, client)));
                assertThat(closed.unavailable()).as("failure-policy closed: refused, 503").isTrue();
                assertThat(metrics.view().getRedisErrors()).as("counted as Redis errors").isPositive();
            }
        }
    }

    private static void fillUntilOutOfMemory(Jedis admin) {
        String value = "v".repeat(200);
        for (int i = 0; i < 1_000_000; i++) {
            try {
                admin.set("fill:" + i, value);
            } catch (JedisDataException oom) {
                assertThat(oom).hasMessageStartingWith("OOM");
                return;
            }
        }
        throw new AssertionError("Redis never reached maxmemory");
    }
}
