package dev.sluice.bench;

import dev.sluice.RateLimitFilter;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import jakarta.servlet.ServletException;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@link RateLimitFilter#doFilter} per request with Redis out of the picture ({@code backend=local}):
 * path matching, the client key (the peer address), the decision by the local engine, the
 * rate-limit headers, and for a denial the 429 body. The request, response and chain are
 * {@link FakeExchange}s, so the figure is the filter's own work (the local engine alone is
 * {@link LocalEngineBenchmark}).
 *
 * <ul>
 *   <li>{@code unmatched}: no rule's {@code match} applies (a path outside {@code /api/**});</li>
 *   <li>{@code allowed}: one rule applies and admits, {@code headers=both};</li>
 *   <li>{@code allowed-no-headers}: the same with {@code headers=none};</li>
 *   <li>{@code denied}: one rule applies and denies: 429, Retry-After, headers, problem body.</li>
 * </ul>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class FilterOverheadBenchmark {

    @Param({"unmatched", "allowed", "allowed-no-headers", "denied"})
    public String variant;

    private RateLimitFilter filter;
    private FakeExchange exchange;

    @Setup(Level.Trial)
    public void setUp() throws ServletException, IOException {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("backend", "local");
        p.put("rules", "api");
        p.put("rule.api.match", "/api/**");
        p.put("rule.api.algorithm", "token-bucket");
        boolean denied = variant.equals("denied");
        p.put("rule.api.limit", denied ? "1" : Long.toString(Workload.HOT.limit));
        p.put("rule.api.window", denied ? "1h" : "1000s");
        p.put("headers", variant.equals("allowed-no-headers") ? "none" : "both");
        filter = new RateLimitFilter();
        filter.init(FakeExchange.filterConfig("sluice", p));
        exchange = new FakeExchange("GET", variant.equals("unmatched") ? "/static/app.js" : "/api/orders/42", "203.0.113.7");
        filter.doFilter(exchange.request, exchange.response, exchange.chain);
        exchange.reset();
        filter.doFilter(exchange.request, exchange.response, exchange.chain);
        int expected = denied ? 429 : 200;
        if (exchange.response.status != expected) {
            throw new IllegalStateException(variant + ": expected status " + expected + ", got " + exchange.response.status);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        filter.destroy();
        if (!FakeExchange.UNEXPECTED.isEmpty()) {
            System.err.println("FilterOverheadBenchmark: the filter called unmodelled methods " + FakeExchange.UNEXPECTED);
        }
    }

    @Benchmark
    public int doFilter() throws ServletException, IOException {
        FakeExchange e = exchange;
        e.reset();
        filter.doFilter(e.request, e.response, e.chain);
        return e.response.status + e.response.headers;
    }
}
