package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.ScanParams;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code rule.<r>.key-case=insensitive} on Redis: every case variant of a user name is one client, one key. */
class RateLimitFilterKeyCaseTest {

    private static final List<String> VARIANTS = List.of("Alice", "ALICE", "alice", "aLiCe");

    @Test
    void everyCaseVariantOfAnInsensitiveKeyIsOneClientWithOneRedisKey() throws Exception {
        String prefix = TestRedis.uniquePrefix("key-case");
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("key-case", FakeServlet.params("rules", "login, account",
                "redis.url", TestRedis.url(), "redis.timeout", "1s", "key-prefix", prefix,
                "rule.login.algorithm", "fixed-window", "rule.login.limit", "3", "rule.login.window", "1h",
                "rule.login.key", "header:X-User", "rule.login.key-case", "insensitive",
                "rule.account.algorithm", "fixed-window", "rule.account.limit", "100", "rule.account.window", "1h",
                "rule.account.key", "attr:account", "rule.account.key-case", "insensitive")));
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> last = new HashMap<>();
            WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(10)); // the four attempts in one window
            for (String user : VARIANTS) {
                HttpServletRequest request = FakeServlet.get("/login", "198.51.100.7", "X-User", user);
                request.setAttribute("account", user + "@Example.com");
                filter.doFilter(request, FakeServlet.response(last), chain);
            }
            assertThat(chain.passed).as("three attempts for one user however it is written").isEqualTo(3);
            assertThat(last.get("status")).isEqualTo("429");
            assertThat(keys(prefix)).as("one key per rule").hasSize(2);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void caseSensitiveIsTheDefault() throws Exception {
        String prefix = TestRedis.uniquePrefix("key-case-default");
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("key-case-default", FakeServlet.params("rules", "login",
                "redis.url", TestRedis.url(), "redis.timeout", "1s", "key-prefix", prefix,
                "rule.login.algorithm", "fixed-window", "rule.login.limit", "3", "rule.login.window", "1h",
                "rule.login.key", "header:X-User")));
        try {
            CountingChain chain = new CountingChain();
            for (String user : VARIANTS) {
                filter.doFilter(FakeServlet.get("/login", "198.51.100.7", "X-User", user),
                        FakeServlet.response(new HashMap<>()), chain);
            }
            assertThat(chain.passed).isEqualTo(4);
            assertThat(keys(prefix)).hasSize(4);
        } finally {
            filter.destroy();
        }
    }

    private static Set<String> keys(String prefix) {
        try (JedisPooled jedis = new JedisPooled(TestRedis.host(), TestRedis.port())) {
            Set<String> keys = new TreeSet<>();
            String cursor = ScanParams.SCAN_POINTER_START;
            do {
                var page = jedis.scan(cursor, new ScanParams().match(prefix + "*").count(1000));
                keys.addAll(page.getResult());
                cursor = page.getCursor();
            } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            return keys;
        }
    }
}
