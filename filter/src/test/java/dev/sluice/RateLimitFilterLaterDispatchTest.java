package dev.sluice;

import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.ManualClock;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Rules decided at a forward or include are settled with the request's final status, whatever the
 * target does (found in a review of 0.3: a target that threw was settled as a 500 at once, and a held
 * include whose hold failed kept its concurrency slot until the filter was destroyed).
 */
class RateLimitFilterLaterDispatchTest {

    /**
     * login counts only failed logins (401), 1 per hour; it matches only the include/forward target /login-check.
     * On a fake clock: no hour ends between the counted attempt and the one it refuses.
     */
    private static RateLimitFilter loginCheck() throws Exception {
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY));
        filter.init(FakeServlet.filterConfig("review", FakeServlet.params("rules", "login", "backend", "local",
                "rule.login.algorithm", "fixed-window", "rule.login.limit", "1", "rule.login.window", "1h",
                "rule.login.count", "401", "rule.login.match", "/login-check", "rule.login.key", "global")));
        return filter;
    }

    /** A request the container dispatches: its dispatcher type and async state are the test's to set. */
    static final class Raw {
        final Map<String, Object> attributes = new HashMap<>();
        final List<AsyncListener> listeners = new ArrayList<>();
        DispatcherType type = DispatcherType.REQUEST;
        boolean asyncStarted;
        /** What a dispatch to a path runs (the target servlet). */
        BiConsumer<ServletRequest, ServletResponse> target = (rq, rs) -> { };
        AsyncContext context;
        final HttpServletRequest request;

        Raw(String path) {
            context = (AsyncContext) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[]{AsyncContext.class},
                    (p, m, a) -> switch (m.getName()) {
                        case "addListener" -> listeners.add((AsyncListener) a[0]);
                        default -> throw new UnsupportedOperationException(m.getName());
                    });
            request = (HttpServletRequest) Proxy.newProxyInstance(getClass().getClassLoader(),
                    new Class<?>[]{HttpServletRequest.class}, (p, m, a) -> switch (m.getName()) {
                        case "getMethod" -> "POST";
                        case "getServletPath" -> path;
                        case "getPathInfo", "getQueryString", "getUserPrincipal" -> null;
                        case "getRemoteAddr" -> "192.0.2.7";
                        case "getHeader" -> null;
                        case "getAttribute" -> attributes.get((String) a[0]);
                        case "setAttribute" -> attributes.put((String) a[0], a[1]);
                        case "getDispatcherType" -> type;
                        case "isAsyncSupported" -> true;
                        case "isAsyncStarted" -> asyncStarted;
                        case "getAsyncContext" -> context;
                        case "getRequestDispatcher" -> new RequestDispatcher() {
                            @Override
                            public void forward(ServletRequest rq, ServletResponse rs) {
                                target.accept(rq, rs);
                            }

                            @Override
                            public void include(ServletRequest rq, ServletResponse rs) {
                                target.accept(rq, rs);
                            }
                        };
                        default -> throw new UnsupportedOperationException(m.getName());
                    });
        }
    }

    private static String direct(RateLimitFilter filter) throws Exception {
        Map<String, String> r = new HashMap<>();
        filter.doFilter(FakeServlet.request("POST", "/login-check", "192.0.2.7"), FakeServlet.response(r), (rq, rs) -> { });
        return r.getOrDefault("status", "200");
    }

    /** The page includes /login-check, then answers 401 (a failed login): that counts. */
    private static final FilterChain INCLUDE_THEN_401 = (rq, rs) -> {
        ((HttpServletRequest) rq).getRequestDispatcher("/login-check").include(rq, rs);
        ((HttpServletResponse) rs).setStatus(401);
    };

    @Test
    void anIncludeIsSettledWithTheFinalStatus() throws Exception {
        RateLimitFilter filter = loginCheck();
        try {
            Raw raw = new Raw("/login");
            Map<String, String> r = new HashMap<>();
            filter.doFilter(raw.request, FakeServlet.response(r), INCLUDE_THEN_401);
            assertThat(r.get("status")).isEqualTo("401");
            assertThat(direct(filter)).as("the failed login counted").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    /**
     * A forward target throws; the forwarding servlet catches it and answers 401: the rule decided at the forward
     * counts the 401 (it was settled at once as a 500, and given back).
     */
    @Test
    void aForwardTargetThatThrowsIsSettledWithTheFinalStatusNotA500() throws Exception {
        RateLimitFilter filter = loginCheck();
        try {
            Raw raw = new Raw("/login");
            raw.target = (rq, rs) -> {
                throw new IllegalStateException("bad credentials");
            };
            Map<String, String> r = new HashMap<>();
            filter.doFilter(raw.request, FakeServlet.response(r), (rq, rs) -> {
                try {
                    ((HttpServletRequest) rq).getRequestDispatcher("/login-check").forward(rq, rs);
                } catch (IllegalStateException failed) {
                    ((HttpServletResponse) rs).setStatus(401);
                }
            });
            assertThat(r.get("status")).isEqualTo("401");
            assertThat(direct(filter)).as("the failed login (final status 401) counted").isEqualTo("429");
        } finally {
            filter.destroy();
        }
    }

    /** A response whose writer the application has taken (a JSP including a fragment): no output stream any more. */
    private static HttpServletResponse writerTaken(Map<String, String> into) {
        HttpServletResponse plain = FakeServlet.response(into);
        return (HttpServletResponse) Proxy.newProxyInstance(RateLimitFilterLaterDispatchTest.class.getClassLoader(),
                new Class<?>[]{HttpServletResponse.class}, (p, m, a) -> switch (m.getName()) {
                    case "getOutputStream" -> throw new IllegalStateException("getWriter() has already been called");
                    case "getWriter" -> new java.io.PrintWriter(java.io.Writer.nullWriter());
                    case "resetBuffer" -> null;
                    default -> m.invoke(plain, a);
                });
    }

    /**
     * An include held for its leaky-bucket slot (a thread hold: dispatches cannot be suspended) whose hold is cut
     * short (the thread's interrupt flag is set) on a response whose writer is taken: the 503 goes through the
     * writer, and the include's concurrency slot is released when the request is over (it was held, renewed,
     * until the filter was destroyed, when the refusal threw outside the settling code).
     */
    @Test
    void aHeldIncludeCutShortOnAResponseWhoseWriterIsTakenStillReleasesItsSlot() throws Exception {
        RateLimitFilter filter = new RateLimitFilter();
        filter.init(FakeServlet.filterConfig("review", FakeServlet.params("rules", "pace, slots", "backend", "local",
                "rule.pace.algorithm", "leaky-bucket", "rule.pace.limit", "1", "rule.pace.window", "2s",
                "rule.pace.burst", "5", "rule.pace.max-delay", "10s", "rule.pace.match", "/fragment", "rule.pace.key", "global",
                "rule.slots.algorithm", "concurrency", "rule.slots.limit", "1", "rule.slots.match", "/fragment",
                "rule.slots.key", "global")));
        try {
            Map<String, String> first = new HashMap<>();
            filter.doFilter(FakeServlet.get("/fragment", "192.0.2.7"), FakeServlet.response(first), (rq, rs) -> { });
            assertThat(first.getOrDefault("status", "200")).isEqualTo("200");
            assertThat(filter.sluice().metrics().getSlotsHeld()).isZero();

            Raw raw = new Raw("/page");
            Map<String, String> r = new HashMap<>();
            try {
                filter.doFilter(raw.request, writerTaken(r), (rq, rs) -> {
                    rs.getWriter();
                    Thread.currentThread().interrupt(); // e.g. restored after catching an InterruptedException
                    ((HttpServletRequest) rq).getRequestDispatcher("/fragment").include(rq, rs);
                });
            } finally {
                Thread.interrupted();
            }
            assertThat(filter.sluice().metrics().getSlotsHeld()).as("the request is over: its slot is free").isZero();
        } finally {
            filter.destroy();
        }
    }

    /**
     * frag: 1 per hour on /fragment/**; any: 3 per hour on /fragment/** and /other/**; one count for all clients;
     * after {@code fillers} rules that match nothing (64: frag and any are the 65th and 66th, past a long's bits).
     */
    private static RateLimitFilter fragments(int fillers) throws Exception {
        Map<String, String> params = FakeServlet.params("backend", "local",
                "rule.frag.algorithm", "fixed-window", "rule.frag.limit", "1", "rule.frag.window", "1h",
                "rule.frag.match", "/fragment/**", "rule.frag.key", "global",
                "rule.any.algorithm", "fixed-window", "rule.any.limit", "3", "rule.any.window", "1h",
                "rule.any.match", "/fragment/**, /other/**", "rule.any.key", "global");
        StringBuilder rules = new StringBuilder();
        for (int i = 0; i < fillers; i++) {
            rules.append("filler").append(i).append(',');
            params.put("rule.filler" + i + ".limit", "1");
            params.put("rule.filler" + i + ".window", "1h");
            params.put("rule.filler" + i + ".match", "/never-" + i);
        }
        params.put("rules", rules + "frag,any");
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY)); // no hour ends among a test's dispatches
        filter.init(FakeServlet.filterConfig("review-refused", params));
        return filter;
    }

    /** A client request to /page whose servlet runs {@code page}; the dispatch targets record their paths in {@code ran}. */
    private static String page(RateLimitFilter filter, List<String> ran, FilterChain page) throws Exception {
        Raw raw = new Raw("/page");
        raw.target = (rq, rs) -> ran.add((String) rq.getAttribute("target"));
        Map<String, String> r = new HashMap<>();
        filter.doFilter(raw.request, FakeServlet.response(r), page);
        return r.getOrDefault("status", "200");
    }

    private static void include(ServletRequest rq, ServletResponse rs, String path) throws java.io.IOException,
            jakarta.servlet.ServletException {
        rq.setAttribute("target", path);
        ((HttpServletRequest) rq).getRequestDispatcher(path).include(rq, rs);
    }

    /**
     * Found by an attacker's review of 0.3: a page including three fragments under a spent limit had the first
     * refused and ran the other two, uncounted (the rule had "decided" the client request).
     */
    @ParameterizedTest(name = "after {0} other rules")
    @ValueSource(ints = {0, 64})
    void aRuleThatRefusedADispatchRefusesEveryLaterDispatchItMatches(int fillers) throws Exception {
        RateLimitFilter filter = fragments(fillers);
        try {
            List<String> ran = new ArrayList<>();
            page(filter, ran, (rq, rs) -> include(rq, rs, "/fragment/a"));
            assertThat(ran).containsExactly("/fragment/a");

            ran.clear();
            page(filter, ran, (rq, rs) -> {
                include(rq, rs, "/fragment/a");
                include(rq, rs, "/fragment/b");
                rq.setAttribute("target", "/fragment/c");
                ((HttpServletRequest) rq).getRequestDispatcher("/fragment/c").forward(rq, rs);
            });
            assertThat(ran).as("frag refused this client request: none of its paths runs").isEmpty();
        } finally {
            filter.destroy();
        }
    }

    /**
     * A refused request takes nothing: a rule that admitted in the refused decision has not counted the client request,
     * so the next dispatch it matches is decided and counted, neither refused for the other rule nor let through free.
     */
    @ParameterizedTest(name = "after {0} other rules")
    @ValueSource(ints = {0, 64})
    void aRuleThatAdmittedInARefusedDecisionDecidesTheNextDispatchItMatches(int fillers) throws Exception {
        RateLimitFilter filter = fragments(fillers);
        try {
            List<String> ran = new ArrayList<>();
            page(filter, ran, (rq, rs) -> include(rq, rs, "/fragment/a")); // frag 1 -> 0, any 3 -> 2

            ran.clear();
            page(filter, ran, (rq, rs) -> {
                include(rq, rs, "/fragment/a"); // frag denies; any admitted, took nothing
                include(rq, rs, "/other/x");    // any decides here: 2 -> 1
            });
            assertThat(ran).as("any has quota left and did not refuse").containsExactly("/other/x");

            ran.clear();
            page(filter, ran, (rq, rs) -> include(rq, rs, "/other/y")); // any 1 -> 0
            assertThat(ran).containsExactly("/other/y");
            ran.clear();
            page(filter, ran, (rq, rs) -> include(rq, rs, "/other/z"));
            assertThat(ran).as("/other/x counted once: any is spent").isEmpty();
        } finally {
            filter.destroy();
        }
    }
}
