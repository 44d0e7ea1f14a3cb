package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.ManualClock;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Plans and shadow rules as the filter applies them (backend=local: no Redis needed). */
class RateLimitFilterPlansTest {

    /** On a fake clock: the rules' fixed windows (the pro plan's of a minute) never end among a test's requests. */
    private static RateLimitFilter started(String name, String... params) throws Exception {
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY));
        filter.init(FakeServlet.filterConfig(name, FakeServlet.params(params)));
        return filter;
    }

    private static HttpServletRequest onPlan(String plan, String apiKey) {
        HttpServletRequest request = FakeServlet.get("/api/x", "192.0.2.1", "X-Api-Key", apiKey);
        if (plan != null) request.setAttribute("plan", plan);
        return request;
    }

    private static final String[] PLANS = {"rules", "api", "backend", "local", "rule.api.algorithm", "fixed-window",
            "rule.api.limit", "2", "rule.api.window", "1h", "rule.api.key", "header:X-Api-Key",
            "rule.api.plan", "attr:plan", "rule.api.plans", "pro, internal",
            "rule.api.plan.pro.limit", "5", "rule.api.plan.pro.window", "1m", "rule.api.plan.internal.limit", "unlimited"};

    @Test
    void aRequestGetsTheFiguresOfItsPlanAndTheHeadersShowThem() throws Exception {
        RateLimitFilter filter = started("plans", PLANS);
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> pro = new HashMap<>();
            for (int i = 0; i < 6; i++) filter.doFilter(onPlan("pro", "k-pro"), FakeServlet.response(pro), chain);
            assertThat(chain.passed).as("the pro plan's 5").isEqualTo(5);
            assertThat(pro.get("RateLimit-Policy")).isEqualTo("\"api\";q=5;w=60");

            Map<String, String> free = new HashMap<>();
            for (int i = 0; i < 3; i++) filter.doFilter(onPlan(null, "k-free"), FakeServlet.response(free), chain);
            assertThat(chain.passed).as("no plan: the rule's own 2").isEqualTo(7);
            assertThat(free.get("RateLimit-Policy")).isEqualTo("\"api\";q=2;w=3600");

            Map<String, String> unknown = new HashMap<>();
            filter.doFilter(onPlan("platinum", "k-free"), FakeServlet.response(unknown), chain);
            assertThat(unknown.get("status")).as("an unlisted plan is the default plan").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void anUnlimitedPlansClientIsNotCountedAndGetsNoFieldsOfTheRule() throws Exception {
        RateLimitFilter filter = started("unlimited", PLANS);
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> headers = new HashMap<>();
            for (int i = 0; i < 50; i++) filter.doFilter(onPlan("internal", "k-int"), FakeServlet.response(headers), chain);
            assertThat(chain.passed).isEqualTo(50);
            assertThat(headers).doesNotContainKeys("RateLimit", "RateLimit-Policy", "X-RateLimit-Limit");
        } finally {
            filter.destroy();
        }
    }

    @Test
    void aPlanHeaderSetByATrustedHopNamesThePlanOnceSaidTrusted() throws Exception {
        RateLimitFilter filter = started("trusted-plan", "rules", "api", "backend", "local",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "2", "rule.api.window", "1h",
                "rule.api.plan", "header:X-Plan", "rule.api.plan.source-trusted", "true", "rule.api.plans", "pro",
                "rule.api.plan.pro.limit", "5");
        try {
            Map<String, String> headers = new HashMap<>();
            filter.doFilter(FakeServlet.get("/api/x", "192.0.2.7", "X-Plan", "pro"), FakeServlet.response(headers),
                    new CountingChain());
            assertThat(headers.get("RateLimit-Policy")).isEqualTo("\"api\";q=5;w=3600");
        } finally {
            filter.destroy();
        }
    }

    /** A shadow rule decides, counts and sends its fields; its denial refuses nothing; the other rule enforces. */
    @Test
    void aShadowRuleNeverRefusesWhileTheOthersEnforce() throws Exception {
        RateLimitFilter filter = started("shadow", "rules", "api, strict", "backend", "local",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "4", "rule.api.window", "1h",
                "rule.strict.algorithm", "fixed-window", "rule.strict.limit", "1", "rule.strict.window", "1h",
                "rule.strict.mode", "dry-run");
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> last = new HashMap<>();
            for (int i = 0; i < 5; i++) filter.doFilter(FakeServlet.get("/x", "192.0.2.9"), FakeServlet.response(last), chain);

            assertThat(chain.passed).as("api's 4; strict would have allowed 1").isEqualTo(4);
            assertThat(last.get("status")).isEqualTo("429");
            assertThat(last.get("RateLimit")).contains("\"strict\";r=0");
            assertThat(filter.sluice().metrics().getDryRunDenied()).as("requests the shadow rule would have denied")
                    .isEqualTo(3);
            assertThat(filter.sluice().metrics().getAllowed()).isEqualTo(1);
            assertThat(filter.sluice().metrics().getDenied()).isEqualTo(1);
        } finally {
            filter.destroy();
        }
    }
}
