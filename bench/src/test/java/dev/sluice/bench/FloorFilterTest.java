package dev.sluice.bench;

import dev.sluice.bench.webapp.FloorFilter;
import jakarta.servlet.ServletException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The floor the distribution benchmark holds Sluice to is what issue 17 defines: exactly one
 * EVALSHA of {@code return 1} per request, each request thread on a connection of its own that it
 * keeps, and a request whose call fails is not passed on.
 */
class FloorFilterTest {

    private static RedisServer redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    private static FloorFilter floor() throws ServletException {
        FloorFilter f = new FloorFilter();
        f.init(FakeExchange.filterConfig("floor", Map.of("redis.port", Integer.toString(redis.hostAndPort().getPort()))));
        return f;
    }

    @Test
    void eachRequestIsOneEvalshaOfReturn1OnTheRequestThreadsOwnConnection() throws Exception {
        FloorFilter floor = floor();
        try (Jedis admin = new Jedis(redis.hostAndPort())) {
            long evalshaBefore = BenchRedis.commandCalls(admin).getOrDefault("evalsha", 0L);
            int clientsBefore = admin.clientList().split("\n").length;
            int threads = 4;
            int perThread = 250;
            CountDownLatch done = new CountDownLatch(threads);
            Throwable[] failure = new Throwable[1];
            int[] chained = new int[threads];
            for (int t = 0; t < threads; t++) {
                int me = t;
                new Thread(() -> {
                    try {
                        FakeExchange mine = new FakeExchange("GET", "/", "127.0.0.1");
                        for (int i = 0; i < perThread; i++) floor.doFilter(mine.request, mine.response, mine.chain);
                        chained[me] = mine.chained;
                    } catch (Throwable e) {
                        failure[0] = e;
                    } finally {
                        done.countDown();
                    }
                }).start();
            }
            done.await();
            assertThat(failure[0]).isNull();
            assertThat(chained).containsOnly(perThread);
            assertThat(BenchRedis.commandCalls(admin).get("evalsha") - evalshaBefore).isEqualTo(threads * perThread);
            assertThat(admin.clientList().split("\n")).hasSize(clientsBefore + threads);
        } finally {
            floor.destroy();
        }
    }

    @Test
    void aRequestWhoseCallFailsIsNotPassedOn() throws Exception {
        FloorFilter floor = floor();
        try (Jedis admin = new Jedis(redis.hostAndPort())) {
            FakeExchange exchange = new FakeExchange("GET", "/", "127.0.0.1");
            floor.doFilter(exchange.request, exchange.response, exchange.chain);
            admin.scriptFlush(); // the script is gone: EVALSHA answers NOSCRIPT
            assertThatThrownBy(() -> floor.doFilter(exchange.request, exchange.response, exchange.chain))
                    .isInstanceOf(ServletException.class).hasRootCauseMessage("EVALSHA answered -NOS");
            assertThat(exchange.chained).isEqualTo(1);
        } finally {
            floor.destroy();
        }
    }
}
