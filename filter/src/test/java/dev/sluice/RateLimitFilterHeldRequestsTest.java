package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.Poll;
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

            Map<String, String> heldAnswer = new HashMap<>();
            parked = new Thread(() -> {
                try {
                    filter.doFilter(FakeServlet.get("/x", "192.0.2.1"), FakeServlet.response(heldAnswer), new CountingChain());
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            parked.start();
            Thread waiting = parked;
            Poll.until(Duration.ofSeconds(5), "the second request to be parked for its slot",
                    () -> waiting.getState() == Thread.State.TIMED_WAITING);

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
}
