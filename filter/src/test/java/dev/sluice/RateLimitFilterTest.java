package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.StandardError;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The filter's own decisions about which rules apply to a request (backend=local: no Redis needed). */
class RateLimitFilterTest {

    @Test
    void aRuleOnPostLoginAlsoLimitsLoginWithATrailingSlash() throws Exception {
        RateLimitFilter filter = started("login", "rules", "login", "backend", "local", "rule.login.limit", "2",
                "rule.login.window", "1h", "rule.login.match", "POST /login");
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> last = new HashMap<>();
            filter.doFilter(FakeServlet.request("POST", "/login", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            filter.doFilter(FakeServlet.request("POST", "/login", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            filter.doFilter(FakeServlet.request("POST", "/login/", "192.0.2.1"), FakeServlet.response(last), chain);

            assertThat(chain.passed).isEqualTo(2);
            assertThat(last.get("status")).as("/login/ is the same login: no bypass").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aRuleWithAStarLimitsItsPathsWithATrailingSlashToo() throws Exception {
        RateLimitFilter filter = started("glob-slash", "rules", "reset", "backend", "local", "rule.reset.limit", "3",
                "rule.reset.window", "1h", "rule.reset.match", "POST /users/*/password-reset");
        try {
            CountingChain chain = new CountingChain();
            for (int i = 0; i < 100; i++) {
                String path = i % 2 == 0 ? "/users/alice/password-reset" : "/users/alice/password-reset/";
                filter.doFilter(FakeServlet.request("POST", path, "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            }
            assertThat(chain.passed).as("3 an hour, however the path ends (53 before 0.3's review)").isEqualTo(3);
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aPeerThatIsNotAnIpAddressSkipsIpRulesSaysSoOnceAndIsCounted() throws Exception {
        RateLimitFilter filter = started("unix", "rules", "api, apikey", "backend", "local", "rule.api.limit", "1",
                "rule.api.window", "1h", "rule.apikey.limit", "1", "rule.apikey.window", "1h",
                "rule.apikey.key", "header:X-Api-Key");
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> last = new HashMap<>();
            String log = StandardError.capture(() -> {
                try {
                    for (int i = 0; i < 3; i++) {
                        filter.doFilter(FakeServlet.get("/x", "unix:/run/app.sock", "X-Api-Key", "k" + i),
                                FakeServlet.response(last), chain);
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });

            assertThat(chain.passed).as("the ip rule does not apply; each request has its own API key").isEqualTo(3);
            assertThat(filter.sluice().metrics().getNonIpPeers()).isEqualTo(3);
            assertThat(log.split("not an IP address", -1)).as("logged once").hasSize(2);
            assertThat(log).contains("unix:/run/app.sock");
        } finally {
            filter.destroy();
        }
    }

    private static RateLimitFilter started(String name, String... params) throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig(name, FakeServlet.params(params)));
        return filter;
    }

}
