package dev.sluice;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Decision;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.Poll;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code max-held-requests}: past it, a request a leaky-bucket rule would hold is refused at once,
 * counted, and gives back its drain slot. Without async (as here) each held request parks a thread.
 */
class RateLimitFilterHeldRequestsTest {

    @Test
    void pastTheCapADelayedRequestIsRefusedAtOnceCountedAndGivesItsSlotBack() throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("held-cap", FakeServlet.params("rules", "shaped", "backend", "local",
                "max-held-requests", "1", "rule.shaped.algorithm", "leaky-bucket", "rule.shaped.limit", "1",
                "rule.shaped.window", "10s", "rule.shaped.burst", "10", "rule.shaped.max-delay", "1m")));
        Thread parked = null;
        try {
            CountingChain chain = new CountingChain();
            filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            assertThat(chain.passed).as("the first request's slot is now").isEqualTo(1);

            parked = parkSecondRequest(filter);

            Map<String, String> third = new HashMap<>();
            long start = System.nanoTime();
            filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(third), chain);
            assertThat((System.nanoTime() - start) / 1_000_000).as("refused at once").isLessThan(5_000);
            assertThat(third.get("status")).isEqualTo("429");
            assertThat(third.get("Retry-After")).isEqualTo("20");
            assertThat(filter.sluice().metrics().getHeldRefused()).isEqualTo(1);

            Map<String, String> fourth = new HashMap<>();
            filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(fourth), chain);
            assertThat(fourth.get("status")).isEqualTo("429");
            assertThat(fourth.get("Retry-After")).as("the third's slot was given back: the fourth gets it")
                    .isEqualTo("20");
            assertThat(fourth.get("RateLimit")).isEqualTo(third.get("RateLimit"));
            assertThat(filter.sluice().metrics().getHeldRefused()).isEqualTo(2);
            assertThat(chain.passed).isEqualTo(1);
        } finally {
            filter.destroy(); // answers the parked request with 503 at once
            if (parked != null) parked.join(5_000);
        }
    }

    /** A request of the client the leaky bucket holds for its drain slot, on a thread of its own, once parked. */
    private static Thread parkSecondRequest(RateLimitFilter filter) {
        Thread parked = new Thread(() -> {
            try {
                filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(new HashMap<>()), new CountingChain());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        parked.start();
        Poll.until(Duration.ofSeconds(5), "the second request to be parked for its slot",
                () -> parked.getState() == Thread.State.TIMED_WAITING);
        return parked;
    }

    /**
     * On Redis, with an approximate rule ({@code sync}) beside the leaky bucket: a request refused past the
     * cap gives back what the approximate rule counted on the instance too, as it does the bucket's slot.
     */
    @Test
    void pastTheCapARefusedRequestGivesBackWhatAnApproximateRuleCounted() throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("held-cap-sync", FakeServlet.params("rules", "shaped, api",
                "redis.url", TestRedis.url(), "key-prefix", TestRedis.uniquePrefix("held-sync"), "max-held-requests", "1",
                "rule.shaped.algorithm", "leaky-bucket", "rule.shaped.limit", "1", "rule.shaped.window", "10s",
                "rule.shaped.burst", "10", "rule.shaped.max-delay", "1m",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "3", "rule.api.window", "1h", "rule.api.sync", "1s")));
        Thread parked = null;
        try {
            WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofMinutes(1)); // the api rule's 3 in one hour
            CountingChain chain = new CountingChain();
            filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            assertThat(chain.passed).isEqualTo(1);
            parked = parkSecondRequest(filter);
            for (int i = 0; i < 3; i++) {
                Map<String, String> refused = new HashMap<>();
                filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(refused), chain);
                assertThat(refused.get("status")).as("refused past the cap, request %d", i).isEqualTo("429");
            }
            assertThat(filter.sluice().metrics().getHeldRefused()).isEqualTo(3);
            // api: the first and the parked one counted; the three refused gave theirs back
            Decision api = filter.sluice().tryAcquire("api", ClientKey.parse("ip=192.0.2.1"));
            assertThat(api.allowed()).as("the third of api's 3 is left").isTrue();
            assertThat(api.rules().get(0).remaining()).isZero();
        } finally {
            filter.destroy();
            if (parked != null) parked.join(5_000);
        }
    }
}
