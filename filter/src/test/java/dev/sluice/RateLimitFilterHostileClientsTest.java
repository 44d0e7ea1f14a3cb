package dev.sluice;

import dev.sluice.testing.TestRedis;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.RedisProcess;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

import java.util.HashMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile client chooses the values Sluice keys on. Whatever it sends, the heap and the number
 * of Redis keys stay bounded.
 */
class RateLimitFilterHostileClientsTest {

    static final int IDENTITIES = 1_000_000;

    @Test
    void aMillionDistinctApiKeysKeepTheLocalEngineBounded() throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("hostile-local", FakeServlet.params("rules", "api", "backend", "local",
                "local.max-keys", "10000", "rule.api.limit", "5", "rule.api.window", "1h", "rule.api.key", "header:X-Api-Key")));
        try {
            long heapBefore = usedHeapAfterGc();
            CountingChain chain = new CountingChain();
            HttpServletResponse response = FakeServlet.response(new HashMap<>());
            for (int i = 0; i < IDENTITIES; i++) {
                filter.doFilter(FakeServlet.get("/api/x", "192.0.2.1", "X-Api-Key", "key-" + i), response, chain);
            }
            LocalEngine local = (LocalEngine) filter.sluice().limiter();
            long heapGrowth = usedHeapAfterGc() - heapBefore;
            System.out.printf("HOSTILE local: %d identities, %d keys kept (max %d), heap growth %d KiB%n",
                    IDENTITIES, local.keyCount(), local.maxKeys(), heapGrowth / 1024);
            assertThat(chain.passed).as("each new key has its own quota").isEqualTo(IDENTITIES);
            assertThat(local.keyCount()).isLessThanOrEqualTo(10_000);
            assertThat(heapGrowth).as("heap growth after a million identities").isLessThan(64L * 1024 * 1024);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aMillionDistinctIdentitiesWithRedisDownKeepTheBackstopBounded() throws Exception {
        int deadPort = RedisProcess.freePort(); // nothing listens there
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("hostile-down", FakeServlet.params("rules", "api",
                "redis.url", "redis://127.0.0.1:" + deadPort, "local.max-keys", "10000",
                "rule.api.limit", "5", "rule.api.window", "1h", "rule.api.key", "header:X-Api-Key")));
        int identities = 200_000; // twenty times the backstop's bound
        try {
            long heapBefore = usedHeapAfterGc();
            CountingChain chain = new CountingChain();
            HttpServletResponse response = FakeServlet.response(new HashMap<>());
            for (int i = 0; i < identities; i++) {
                filter.doFilter(FakeServlet.get("/api/x", "192.0.2.1", "X-Api-Key", "key-" + i), response, chain);
            }
            long heapGrowth = usedHeapAfterGc() - heapBefore;
            long fallbacks = fallbackDecisions(filter);
            System.out.printf("HOSTILE redis-down: %d identities, %d fallback decisions, heap growth %d KiB%n",
                    identities, fallbacks, heapGrowth / 1024);
            assertThat(chain.passed).isEqualTo(identities);
            assertThat(fallbacks).as("every decision was the backstop's").isEqualTo(identities);
            assertThat(heapGrowth).as("the backstop keeps at most local.max-keys clients").isLessThan(32L * 1024 * 1024);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void spoofedForwardedForFromAnUntrustedPeerNeverMintsRedisKeys() throws Exception {
        String prefix = TestRedis.uniquePrefix("hostile-xff");
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("hostile-xff", FakeServlet.params("rules", "api",
                "redis.url", TestRedis.url(), "redis.timeout", "1s", "key-prefix", prefix,
                "rule.api.limit", "5", "rule.api.window", "1m")));
        try {
            CountingChain chain = new CountingChain();
            HttpServletResponse response = FakeServlet.response(new HashMap<>());
            for (int i = 0; i < 20_000; i++) {
                String spoofed = (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ".9";
                filter.doFilter(FakeServlet.get("/api/x", "198.51.100.7", "X-Forwarded-For", spoofed), response, chain);
            }
            assertThat(chain.passed).as("20,000 spoofed identities are one client").isEqualTo(5);
            try (JedisPooled jedis = new JedisPooled(TestRedis.host(), TestRedis.port())) {
                assertThat(countKeys(jedis, prefix)).isEqualTo(1);
            }
        } finally {
            filter.destroy();
        }
    }

    @Test
    void distinctApiKeysFromOneAddressAreBoundedByAnIpRuleOnTheSameRequest() throws Exception {
        // a rule keyed on a client-chosen header mints a key per value; an ip rule on the same
        // request bounds that, because a denied request writes nothing to any rule
        String prefix = TestRedis.uniquePrefix("hostile-apikey");
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("hostile-apikey", FakeServlet.params("rules", "perip, apikey",
                "redis.url", TestRedis.url(), "redis.timeout", "1s", "key-prefix", prefix,
                "rule.perip.limit", "5", "rule.perip.window", "1m",
                "rule.apikey.limit", "100", "rule.apikey.window", "1m", "rule.apikey.key", "header:X-Api-Key")));
        try {
            CountingChain chain = new CountingChain();
            HttpServletResponse response = FakeServlet.response(new HashMap<>());
            for (int i = 0; i < 20_000; i++) {
                filter.doFilter(FakeServlet.get("/api/x", "198.51.100.7", "X-Api-Key", "minted-" + i), response, chain);
            }
            assertThat(chain.passed).isEqualTo(5);
            try (JedisPooled jedis = new JedisPooled(TestRedis.host(), TestRedis.port())) {
                // the ip key, and at most the five admitted api keys (those expire as their buckets refill)
                assertThat(countKeys(jedis, prefix)).isBetween(1L, 6L);
            }
        } finally {
            filter.destroy();
        }
    }

    private static long fallbackDecisions(RateLimitFilter filter) throws Exception {
        var server = java.lang.management.ManagementFactory.getPlatformMBeanServer();
        var name = dev.sluice.internal.metrics.SluiceMetrics.instanceObjectName("hostile-down");
        return (Long) server.getAttribute(name, "FallbackDecisions");
    }

    private static long countKeys(JedisPooled jedis, String prefix) {
        long n = 0;
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, new ScanParams().match(prefix + "*").count(1000));
            n += page.getResult().size();
            cursor = page.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
        return n;
    }

    private static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) System.gc();
        return rt.totalMemory() - rt.freeMemory();
    }
}
