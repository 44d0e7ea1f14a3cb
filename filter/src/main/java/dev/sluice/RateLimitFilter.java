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
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
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
import java.util.concurrent.atomic.AtomicBoolean;
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
    private String name;
    private String countedAttribute;
    /** Everything a request needs, built once from the configuration; a request reads it once. */
    private volatile Setup setup;
    private SluiceMetrics metrics;
    private DelayedAdmission delays;
    private final AtomicLong lastDryRunLog = new AtomicLong();
    private final AtomicLong dryRunDenials = new AtomicLong();
    private final AtomicBoolean nonIpPeerLogged = new AtomicBoolean();

    /** A rule with its HTTP side, prepared once. */
    private record Binding(Rule rule, RequestMatcher matcher, ClientKeyResolver key, boolean usesIp, String policyItem,
                           String fallbackPolicyItem) {

        /** The policy the decision was made under: the backstop's while Redis is away. */
        String policyItemOf(RuleDecision decided) {
            return decided.source() == RuleDecision.Source.BACKSTOP ? fallbackPolicyItem : policyItem;
        }
    }

    /**
     * The request side of one configuration: matchers, resolvers and header writers, derived once from
     * the parsed {@link SluiceConfig}; nothing is parsed here again.
     */
    private static final class Setup {
        final SluiceConfig config;
        final Binding[] bindings;
        final RequestMatcher exclude;
        final CidrSet exemptIps;
        final ClientIpResolver clientIps;
        final RateLimitHeaders headers;
        final int statusCode;
        final boolean dryRun;
        final boolean needsClientAddress;
        /** Without trusted proxies the forwarded header is never believed, so it is never read. */
        final boolean readsForwardedHeader;
        final String forwardedHeader;
        final boolean delays;

        Setup(SluiceConfig config, ClassLoader loader) {
            this.config = config;
            this.clientIps = new ClientIpResolver(config.trustedProxies(), config.clientIpHeader(), config.ipv6Prefix());
            this.readsForwardedHeader = !config.trustedProxies().isEmpty();
            this.forwardedHeader = clientIps.headerName();
            this.exemptIps = config.exemptIps();
            this.exclude = config.exclude().isEmpty() ? null : config.exclude();
            List<Binding> list = new ArrayList<>();
            boolean delaying = false;
            boolean needsAddress = !exemptIps.isEmpty();
            for (RuleConfig rc : config.rules()) {
                KeyExpression expression = rc.key();
                boolean usesIp = expression.uses(KeyExpression.Kind.IP);
                list.add(new Binding(rc.rule(), rc.match(), new ClientKeyResolver(expression, clientIps, loader), usesIp,
                        RateLimitHeaders.policyItem(rc.rule()), RateLimitHeaders.policyItem(rc.rule().asFallback())));
                delaying |= !rc.rule().maxDelay().isZero();
                needsAddress |= usesIp;
            }
            this.needsClientAddress = needsAddress;
            this.bindings = list.toArray(new Binding[0]);
            this.headers = new RateLimitHeaders(config.headers());
            this.statusCode = config.statusCode();
            this.dryRun = config.mode() == SluiceConfig.Mode.DRY_RUN;
            this.delays = delaying;
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
        String filterName = filterConfig.getFilterName();
        try {
            Map<String, String> params = new LinkedHashMap<>();
            for (Enumeration<String> e = filterConfig.getInitParameterNames(); e.hasMoreElements(); ) {
                String key = e.nextElement();
                params.put(key, filterConfig.getInitParameter(key));
            }
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            if (loader == null) loader = RateLimitFilter.class.getClassLoader();
            SluiceConfig config = ConfigLoader.fromInitParams(params, loader);
            start(filterName, jmxName(filterConfig), config, loader);
        } catch (RuntimeException e) {
            log.error("Sluice filter '{}' failed to start: {}", filterName, e.getMessage());
            throw new ServletException("Sluice filter '" + filterName + "' failed to start: " + e.getMessage(), e);
        }
    }

    /** The JMX instance name: the filter's name, after the context path unless it is the root context. */
    private static String jmxName(FilterConfig filterConfig) {
        String contextPath = filterConfig.getServletContext() == null ? null : filterConfig.getServletContext().getContextPath();
        String name = filterConfig.getFilterName();
        return contextPath == null || contextPath.isEmpty() ? name : contextPath.substring(1) + "/" + name;
    }

    private void start(String filterName, String jmxName, SluiceConfig config, ClassLoader loader) {
        this.name = filterName;
        this.countedAttribute = RateLimitFilter.class.getName() + ".counted." + filterName;
        Setup prepared = new Setup(config, loader);
        Sluice created = Sluice.builder(config).clock(clock).build();
        try {
            created.registerMBeans(jmxName);
        } catch (RuntimeException e) {
            created.close(); // the container calls no destroy() after a failed init: release the pool here
            throw e;
        }
        this.delays = prepared.delays ? new DelayedAdmission(filterName) : null;
        this.sluice = created;
        this.metrics = created.recorder();
        this.setup = prepared;
        log.info("Sluice filter '{}' started: rules {}, mode {}", filterName,
                config.rules().stream().map(RuleConfig::name).toList(), prepared.dryRun ? "dry-run" : "enforce");
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
        if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)
                || request.getAttribute(countedAttribute) != null) {
            chain.doFilter(req, res);
            return;
        }
        request.setAttribute(countedAttribute, Boolean.TRUE);
        Setup s = setup; // one configuration for the whole request

        String method = request.getMethod();
        String path = pathWithinApplication(request);
        if (s.exclude != null && s.exclude.matches(method, path)) {
            chain.doFilter(request, response);
            return;
        }
        ClientAddress client = null;
        if (s.needsClientAddress) {
            client = s.clientIps.resolve(request.getRemoteAddr(),
                    s.readsForwardedHeader ? request.getHeaders(s.forwardedHeader) : null);
            if (client == null) {
                nonIpPeer(request.getRemoteAddr());
            } else if (!s.exemptIps.isEmpty() && s.exemptIps.contains(client.address())) {
                chain.doFilter(request, response);
                return;
            }
        }

        List<Acquisition> acquisitions = null;
        List<Binding> applied = null;
        Binding[] bindings = s.bindings;
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

        Decision decision = sluice.decide(acquisitions, s.dryRun);
        if (!decision.unavailable()) {
            // a refusal for want of Redis has no figures to show: RateLimit fields would mislead
            List<String> policyItems = new ArrayList<>(applied.size());
            for (int i = 0; i < applied.size(); i++) {
                policyItems.add(applied.get(i).policyItemOf(decision.rules().get(i)));
            }
            s.headers.write(response, decision, policyItems);
        }

        if (decision.allowed()) {
            long delay = decision.delayMs();
            if (delay > 0 && delays != null && !s.dryRun) { // dry-run never holds a request
                delays.admitAfter(delay, request, response, chain);
            } else {
                chain.doFilter(request, response);
            }
            return;
        }
        if (s.dryRun) {
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
        respond(response, s.statusCode, retryAfter, QuotaExceededProblem.body(decision, s.statusCode, retryAfter));
    }

    /**
     * A peer without an IP address (a Unix-socket connector, say) has no {@code ip} key: the rules
     * keyed on it do not apply to its requests. Said once in the log, counted always.
     */
    private void nonIpPeer(String peer) {
        metrics.recordNonIpPeer();
        if (nonIpPeerLogged.compareAndSet(false, true)) {
            log.warn("Sluice filter '{}': a request came from a peer that is not an IP address ({}), e.g. through a"
                    + " Unix-socket connector; rules keyed on ip do not apply to such requests (counted in the"
                    + " NonIpPeers metric). Put a proxy that sets X-Forwarded-For in trusted-proxies, or key those"
                    + " rules on something else. Logged once.", name, peer == null ? "none" : peer.length() > 64
                    ? peer.substring(0, 64) + "..." : peer);
        }
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

    /** The configuration in force. */
    public SluiceConfig config() {
        return setup.config;
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
