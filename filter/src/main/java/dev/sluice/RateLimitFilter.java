package dev.sluice;

import dev.sluice.config.ConfigLoader;
import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.http.DelayedAdmission;
import dev.sluice.internal.http.QuotaExceededProblem;
import dev.sluice.internal.http.RateLimitHeaders;
import dev.sluice.http.RequestMatcher;
import dev.sluice.key.CidrSet;
import dev.sluice.key.ClientKey;
import dev.sluice.key.ClientAddress;
import dev.sluice.key.ClientIpResolver;
import dev.sluice.key.ClientKeyResolver;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.internal.metrics.SluiceMetrics;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The servlet filter: a thin HTTP adapter over {@link Sluice}. {@link #init} parses and validates
 * the whole configuration (init-params, and the properties file named by the {@code config}
 * init-param) and fails with a {@link ServletException} naming the bad key, so a typo never lets
 * the application serve unlimited traffic. {@link #doFilter} only decides:
 *
 * <ol>
 *   <li>a request already counted by this filter (forward, include, error or async dispatch) passes;</li>
 *   <li>excluded paths and exempt client addresses pass;</li>
 *   <li>every rule whose {@code match} applies and whose key resolves takes part in one decision;</li>
 *   <li>allowed: the rate-limit headers, then the chain (after a leaky-bucket slot's delay, if any);</li>
 *   <li>denied: {@code status-code}, {@code Retry-After}, {@code Cache-Control: no-store}, the
 *       headers and a {@code quota-exceeded} problem body; in {@code dry-run} mode the request
 *       passes with the headers and the denial is logged;</li>
 *   <li>a {@code closed} rule whose Redis is away: 503 with {@code Retry-After}.</li>
 * </ol>
 */
public class RateLimitFilter implements Filter {

    private static final Logger log = LoggerFactory.getLogger(RateLimitFilter.class);

    /** Init-param naming a properties file: {@code classpath:/x.properties}, {@code file:/x} or a path. */
    public static final String CONFIG_PARAM = "config";

    private Sluice sluice;
    private Clock clock = Clock.SYSTEM;
    private String countedAttribute;
    private Binding[] bindings;
    private RequestMatcher exclude;
    private CidrSet exemptIps;
    private ClientIpResolver clientIps;
    private RateLimitHeaders headers;
    private int statusCode;
    private boolean dryRun;
    private boolean needsClientAddress;
    /** Without trusted proxies the forwarded header is never believed, so it is never read. */
    private boolean readsForwardedHeader;
    private String forwardedHeader;
    private SluiceMetrics metrics;
    private DelayedAdmission delays;
    private final AtomicLong lastDryRunLog = new AtomicLong();
    private final AtomicLong dryRunDenials = new AtomicLong();

    /** A rule with its HTTP side, prepared once at init. */
    private record Binding(Rule rule, RequestMatcher matcher, ClientKeyResolver key, String policyItem,
                           String fallbackPolicyItem) {

        /** The policy the decision was made under: the backstop's while Redis is away. */
        String policyItemOf(RuleDecision decided) {
            return decided.rule().limit() == rule.limit() ? policyItem : fallbackPolicyItem;
        }
    }

    public RateLimitFilter() {
    }

    /** For tests: a filter whose instance clock is {@code clock}. */
    RateLimitFilter(Clock clock) {
        this.clock = clock;
    }

    @Override
    public void init(FilterConfig filterConfig) throws ServletException {
        String name = filterConfig.getFilterName();
        try {
            Map<String, String> params = new LinkedHashMap<>();
            for (Enumeration<String> e = filterConfig.getInitParameterNames(); e.hasMoreElements(); ) {
                String key = e.nextElement();
                params.put(key, filterConfig.getInitParameter(key));
            }
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            if (loader == null) loader = RateLimitFilter.class.getClassLoader();
            SluiceConfig config = ConfigLoader.fromInitParams(params, loader);
            start(name, jmxName(filterConfig), config, loader);
        } catch (RuntimeException e) {
            log.error("Sluice filter '{}' failed to start: {}", name, e.getMessage());
            throw new ServletException("Sluice filter '" + name + "' failed to start: " + e.getMessage(), e);
        }
    }

    /** The JMX instance name: the filter's name, after the context path unless it is the root context. */
    private static String jmxName(FilterConfig filterConfig) {
        String contextPath = filterConfig.getServletContext() == null ? null : filterConfig.getServletContext().getContextPath();
        String name = filterConfig.getFilterName();
        return contextPath == null || contextPath.isEmpty() ? name : contextPath.substring(1) + "/" + name;
    }

    private void start(String name, String jmxName, SluiceConfig config, ClassLoader loader) {
        this.countedAttribute = RateLimitFilter.class.getName() + ".counted." + name;
        this.clientIps = new ClientIpResolver(CidrSet.parse(config.trustedProxies()),
                config.clientIpHeader(), config.ipv6Prefix());
        this.readsForwardedHeader = !config.trustedProxies().isEmpty();
        this.forwardedHeader = clientIps.headerName();
        this.exemptIps = CidrSet.parse(config.exemptIps());
        this.exclude = config.exclude().isEmpty() ? null : RequestMatcher.parse(config.exclude());
        List<Binding> list = new ArrayList<>();
        boolean delaying = false;
        boolean needsAddress = !exemptIps.isEmpty();
        for (RuleConfig rc : config.rules()) {
            KeyExpression expression = KeyExpression.parse(rc.key());
            ClientKeyResolver key = new ClientKeyResolver(expression, clientIps, loader);
            list.add(new Binding(rc.rule(), RequestMatcher.parse(rc.match()), key,
                    RateLimitHeaders.policyItem(rc.rule()), RateLimitHeaders.policyItem(rc.rule().asFallback())));
            delaying |= !rc.rule().maxDelay().isZero();
            needsAddress |= expression.uses(KeyExpression.Kind.IP);
        }
        this.needsClientAddress = needsAddress;
        this.bindings = list.toArray(new Binding[0]);
        this.headers = new RateLimitHeaders(config.headers());
        this.statusCode = config.statusCode();
        this.dryRun = config.mode() == SluiceConfig.Mode.DRY_RUN;
        this.delays = delaying ? new DelayedAdmission(name) : null;
        Sluice created = Sluice.create(config, clock);
        try {
            created.metrics().register(jmxName, List.copyOf(created.rules().values()));
        } catch (RuntimeException e) {
            created.close(); // the container calls no destroy() after a failed init: release the pool here
            throw e;
        }
        this.sluice = created;
        this.metrics = created.metrics();
        log.info("Sluice filter '{}' started: rules {}, mode {}", name, config.rules().stream().map(RuleConfig::name).toList(),
                dryRun ? "dry-run" : "enforce");
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
        if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)
                || request.getAttribute(countedAttribute) != null) {
            chain.doFilter(req, res);
            return;
        }
        request.setAttribute(countedAttribute, Boolean.TRUE);

        String method = request.getMethod();
        String path = pathWithinApplication(request);
        if (exclude != null && exclude.matches(method, path)) {
            chain.doFilter(request, response);
            return;
        }
        ClientAddress client = needsClientAddress
                ? clientIps.resolve(request.getRemoteAddr(),
                        readsForwardedHeader ? request.getHeaders(forwardedHeader) : null)
                : null;
        if (client != null && !exemptIps.isEmpty() && exemptIps.contains(client.address())) {
            chain.doFilter(request, response);
            return;
        }

        List<Acquisition> acquisitions = null;
        List<Binding> applied = null;
        for (Binding b : bindings) {
            if (!b.matcher.matches(method, path)) continue;
            ClientKey key = b.key.resolve(request, client);
            if (key == null) continue;
            if (acquisitions == null) {
                acquisitions = new ArrayList<>(bindings.length);
                applied = new ArrayList<>(bindings.length);
            }
            acquisitions.add(new Acquisition(b.rule, key));
            applied.add(b);
        }
        if (acquisitions == null) {
            chain.doFilter(request, response);
            return;
        }

        long started = System.nanoTime();
        Decision decision = sluice.decide(acquisitions);
        metrics.recordDecision(decision, System.nanoTime() - started, dryRun);
        if (!decision.unavailable()) {
            // a refusal for want of Redis has no figures to show: RateLimit fields would mislead
            List<String> policyItems = new ArrayList<>(applied.size());
            for (int i = 0; i < applied.size(); i++) {
                policyItems.add(applied.get(i).policyItemOf(decision.rules().get(i)));
            }
            headers.write(response, decision, policyItems);
        }

        if (decision.allowed()) {
            long delay = decision.delayMs();
            if (delay > 0 && delays != null && !dryRun) { // dry-run never holds a request
                delays.admitAfter(delay, request, response, chain);
            } else {
                chain.doFilter(request, response);
            }
            return;
        }
        if (dryRun) {
            logDryRun(decision);
            chain.doFilter(request, response);
            return;
        }
        if (decision.unavailable()) {
            long retryAfter = RateLimitHeaders.retryAfterSeconds(unavailableRetryMs(decision));
            respond(response, HttpServletResponse.SC_SERVICE_UNAVAILABLE, retryAfter,
                    QuotaExceededProblem.unavailableBody(decision, retryAfter));
            return;
        }
        long retryAfter = RateLimitHeaders.retryAfterSeconds(decision.retryAfterMs());
        respond(response, statusCode, retryAfter, QuotaExceededProblem.body(decision, statusCode, retryAfter));
    }

    private static long unavailableRetryMs(Decision decision) {
        long max = 0;
        for (RuleDecision r : decision.rules()) {
            if (r.source() == RuleDecision.Source.UNAVAILABLE) max = Math.max(max, r.retryAfterMs());
        }
        return max;
    }

    private static void respond(HttpServletResponse response, int status, long retryAfterSeconds, String body)
            throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        response.setStatus(status);
        response.setHeader("Retry-After", Long.toString(retryAfterSeconds));
        response.setHeader("Cache-Control", "no-store");
        response.setContentType(QuotaExceededProblem.CONTENT_TYPE);
        response.setContentLength(bytes.length);
        response.getOutputStream().write(bytes);
    }

    /** The path the {@code match} and {@code exclude} patterns see: relative to the context path, decoded. */
    static String pathWithinApplication(HttpServletRequest request) {
        String servletPath = request.getServletPath();
        String pathInfo = request.getPathInfo();
        if (servletPath == null || servletPath.isEmpty()) {
            return pathInfo == null || pathInfo.isEmpty() ? "/" : pathInfo;
        }
        return pathInfo == null ? servletPath : servletPath + pathInfo;
    }

    /**
     * Dry-run denials are logged at most once a second, with how many there were. Only rule names
     * are logged: the path and the client key are chosen by the client.
     */
    private void logDryRun(Decision decision) {
        dryRunDenials.incrementAndGet();
        long now = System.nanoTime();
        long last = lastDryRunLog.get();
        if ((last == 0 || now - last >= 1_000_000_000L) && lastDryRunLog.compareAndSet(last, now)) {
            long count = dryRunDenials.getAndSet(0);
            List<String> names = new ArrayList<>();
            for (RuleDecision r : decision.violated()) names.add(r.rule().name());
            log.info("Sluice dry-run: {} request(s) would have been denied since the last report, the latest by {}",
                    count, names);
        }
    }

    /** For embedding and tests: the limiter behind this filter. */
    public Sluice sluice() {
        return sluice;
    }

    @Override
    public void destroy() {
        if (delays != null) delays.close();
        if (sluice != null) sluice.close();
    }
}
