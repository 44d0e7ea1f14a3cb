package dev.sluice.it.support;

import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * 10,000 distinct clients (addresses forwarded by a trusted proxy, the test) through the example
 * WAR's filter: each is counted, each has one Redis key that expires with its window, and the
 * denied-client cache stays within its bound however many of them are denied. Which client a
 * request is comes from Sluice, not from the container: src-it runs this on embedded Jetty only.
 */
public interface ManyIdentitiesContract extends ContainerTest {

    int IDENTITIES = 10_000;
    int DENIED = 300;
    int DENIED_CACHE = 100;

    @Test
    default void tenThousandIdentitiesAreEachCountedWithBoundedKeysAndCache() throws Exception {
        ExampleApp many = ExampleApp.named("many").with("trusted-proxies", "127.0.0.1/32, ::1/128",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "1", "rule.api.window", "1h",
                "denied-cache.max-keys", Integer.toString(DENIED_CACHE));
        try (Deployment app = container().deploy(many, 1)) {
            URI uri = app.uri(0, "/api/x");
            assertThat(statuses(uri, 0, IDENTITIES)).as("every new identity counted and allowed its one")
                    .containsOnly(200).hasSize(IDENTITIES);
            assertThat(statuses(uri, 0, DENIED)).as("and refused its second").containsOnly(429).hasSize(DENIED);

            assertThat(app.redisKeys()).as("one key per identity, none per request").isEqualTo(IDENTITIES);
            try (Jedis jedis = new Jedis(URI.create(app.app().redisUrl()))) {
                String sample = jedis.scan(ScanParams.SCAN_POINTER_START,
                        new ScanParams().match(app.app().keyPrefix() + "*").count(100)).getResult().get(0);
                assertThat(jedis.pttl(sample)).as("%s expires with its window", sample).isBetween(1L, 3_660_000L); // the window and a margin
            }
            assertThat(app.mxbeanTotal("DeniedCacheSize")).as("the denied-client cache at most its bound")
                    .isBetween(1L, (long) DENIED_CACHE);
        }
    }

    /** The statuses of one GET of {@code uri} from each of the identities {@code from} to {@code to} (exclusive). */
    private static List<Integer> statuses(URI uri, int from, int to) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(16);
        try {
            List<Future<Integer>> answers = new ArrayList<>();
            for (int i = from; i < to; i++) {
                String address = "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255);
                answers.add(clients.submit(() -> Http.get(uri, "X-Forwarded-For", address).statusCode()));
            }
            List<Integer> statuses = new ArrayList<>();
            for (Future<Integer> a : answers) statuses.add(a.get());
            return statuses;
        } finally {
            clients.shutdownNow();
        }
    }
}
