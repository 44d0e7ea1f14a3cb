package dev.sluice;

import dev.sluice.config.ConfigException;
import dev.sluice.config.ConfigLoader;
import dev.sluice.config.Durations;
import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.http.AsyncListenerAdapter;
import dev.sluice.internal.http.DelayedAdmission;
import dev.sluice.internal.http.GatedRequest;
import dev.sluice.internal.http.QuotaExceededProblem;
import dev.sluice.internal.http.RateLimitHeaders;
import dev.sluice.internal.lease.Leases;
import dev.sluice.http.ActualCost;
import dev.sluice.http.RequestMatcher;
import dev.sluice.http.ResponseStatuses;
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
import dev.sluice.limiter.Settlement;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * The servlet filter: a thin HTTP adapter over {@link Sluice}. {@link #init} parses and validates
 * the whole configuration (init-params, and the properties file named by the {@code config}
 * init-param) and fails with a {@link ServletException} naming the bad key, so a typo never lets
 * the application serve unlimited traffic. {@link #doFilter} only decides:
 *
 * <ol>
 *   <li>excluded paths and exempt client addresses pass;</li>
 *   <li>every rule whose {@code match} applies and whose key resolves takes part in one decision;</li>
 *   <li>the request goes on wrapped in a {@link GatedRequest}: a forward or include through its
 *       dispatchers is decided by the rules its target path newly matches before it goes on, as is
 *       any later dispatch the mapping lists; each rule decides a client request once;</li>
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
    /** The JMX instance name ({@code shop/sluice}), which every log line and thread of this filter carries. */
    private String instance;
    /** The request attribute holding a client request's {@link ClientRequest}, for this filter instance. */
    private String clientRequestAttribute;
    private Map<String, String> initParams;
    private ClassLoader loader;
    /** The web application's {@code ServletContext.getRealPath}, to say where the config file is; or null. */
    private UnaryOperator<String> realPath;
    /** Everything a request needs, built once from the configuration; a request reads it once. */
    private volatile Setup setup;
    private volatile DelayedAdmission delays;
    private ConfigReloader reloader;
    private final LogThrottle dryRunDenials = new LogThrottle(1_000_000_000L);
    private final LogThrottle costsNotStated = new LogThrottle(60_000_000_000L);
    private final LogThrottle costsCapped = new LogThrottle(60_000_000_000L);
    private final AtomicBoolean nonIpPeerLogged = new AtomicBoolean();

    /**
     * A rule's figures as a request uses them (the rule's own, or one plan's): the text of its rate-limit
     * fields, computed once, and what it settles when a request completes.
     */
    private static final class Figures extends RateLimitHeaders.RuleFields {
        /** The statuses that count, or null for all. */
        final ResponseStatuses count;
        /** Where its actual cost is stated, or null (its cost stands). */
        final ActualCost actualCost;
        /** Whether an admitted request of this rule has anything to do once complete: settle, or release a slot. */
        final boolean completes;

        Figures(Rule rule, ResponseStatuses count, ActualCost actualCost) {
            super(rule);
            this.count = count;
            this.actualCost = actualCost;
            this.completes = settles() || rule.algorithm().isConcurrency();
        }

        /** Whether an admitted request of this rule settles what it took once complete (its count, its cost). */
        boolean settles() {
            return count != null || actualCost != null;
        }
    }

    /** A rule with its HTTP side, prepared once. */
    private record Binding(Figures own, RequestMatcher matcher, ClientKeyResolver key, ClientKeyResolver plan,
                           Map<String, Figures> plans) {

        /**
         * The figures for this request: the plan's named by the request, else the rule's own;
         * {@code null} for an {@code unlimited} plan (the rule does not apply).
         */
        Figures figuresFor(HttpServletRequest request, ClientAddress client) {
            if (plan == null) return own;
            String planName = plan.resolveValue(request, client);
            if (planName == null || !plans.containsKey(planName)) return own;
            return plans.get(planName);
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
                Map<String, Figures> plans = new HashMap<>();
                for (RuleConfig.Plan p : rc.plans()) {
                    plans.put(p.name(), p.isUnlimited() ? null : new Figures(p.rule(), rc.count(), rc.actualCost()));
                    delaying |= !p.isUnlimited() && !p.rule().maxDelay().isZero();
                }
                String name = rc.rule().name();
                ClientKeyResolver plan = rc.planKey() == null ? null
                        : resolver("rule." + name + ".plan", rc.planKey(), () -> new ClientKeyResolver(rc.planKey(), clientIps, loader));
                list.add(new Binding(new Figures(rc.rule(), rc.count(), rc.actualCost()), rc.match(),
                        resolver("rule." + name + ".key", expression,
                                () -> new ClientKeyResolver(expression, clientIps, loader, rc.keyCase())), plan, plans));
                delaying |= !rc.rule().maxDelay().isZero();
                needsAddress |= expression.uses(KeyExpression.Kind.IP)
                        || (rc.planKey() != null && rc.planKey().uses(KeyExpression.Kind.IP));
            }
            this.needsClientAddress = needsAddress;
            this.bindings = list.toArray(new Binding[0]);
            this.headers = new RateLimitHeaders(config.headers());
            this.statusCode = config.statusCode();
            this.delays = delaying;
        }
    }

    /** A key resolver, or the configuration error of {@code key} (a {@code class:} source not found or not made). */
    private static ClientKeyResolver resolver(String key, KeyExpression expression,
                                              java.util.function.Supplier<ClientKeyResolver> made) {
        try {
            return made.get();
        } catch (IllegalArgumentException bad) {
            throw new ConfigException(key, String.valueOf(expression), bad.getMessage(), bad);
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
        String jmxName = instanceName(filterConfig.getServletContext(), filterName);
        try {
            Map<String, String> params = new LinkedHashMap<>();
            for (Enumeration<String> e = filterConfig.getInitParameterNames(); e.hasMoreElements(); ) {
                String key = e.nextElement();
                params.put(key, filterConfig.getInitParameter(key));
            }
            ClassLoader classLoader = Thread.currentThread().getContextClassLoader();
            if (classLoader == null) classLoader = RateLimitFilter.class.getClassLoader();
            ConfigLoader.FileContent loaded = ConfigLoader.read(params, classLoader);
            this.initParams = Map.copyOf(params);
            this.loader = classLoader;
            ServletContext context = filterConfig.getServletContext();
            this.realPath = context == null ? null : context::getRealPath;
            start(filterName, jmxName, loaded);
        } catch (RuntimeException e) {
            log.error("Sluice [{}] failed to start: {}", jmxName, e.getMessage());
            throw new ServletException("Sluice [" + jmxName + "] failed to start: " + e.getMessage(), e);
        }
    }

    /**
     * The instance's name, in JMX, in Micrometer's {@code instance} tag and in every log line and
     * thread name: the filter's name, after the context path unless it is the root context
     * ({@code shop/sluice}, or {@code sluice}).
     */
    static String instanceName(ServletContext context, String filterName) {
        String contextPath = context == null ? null : context.getContextPath();
        return contextPath == null || contextPath.isEmpty() ? filterName : contextPath.substring(1) + "/" + filterName;
    }

    private void start(String filterName, String jmxName, ConfigLoader.FileContent loaded) {
        SluiceConfig config = loaded.config();
        this.clientRequestAttribute = RateLimitFilter.class.getName() + ".request." + filterName;
        Setup prepared = new Setup(config, loader);
        Sluice created = Sluice.builder(config).clock(clock).name(jmxName).withoutStartLine().build();
        try {
            this.instance = created.registerMBeans(jmxName);
        } catch (RuntimeException e) {
            created.close(); // the container calls no destroy() after a failed init: release the pool here
            throw e;
        }
        try {
            started(created, prepared, loaded);
        } catch (RuntimeException e) {
            // the container calls no destroy() after a failed init: nothing may stay registered or running
            if (sluice == null) {
                created.close();
            } else {
                destroy();
            }
            throw e;
        }
        log.info("Sluice [{}] started: {}{}", instance, created.summary(), configFile(config));
    }

    /** The rest of {@link #start}, once the instance is registered. */
    private void started(Sluice created, Setup prepared, ConfigLoader.FileContent loaded) {
        SluiceConfig config = loaded.config();
        if (!config.reload().isZero() && loaded.fingerprint() == null) {
            throw new ConfigException("reload", Durations.format(config.reload()),
                    "reload watches the file named by the init-param " + CONFIG_PARAM + " (config=file:..., or a resource),"
                            + " and there is none: name the file, or leave reload out");
        }
        this.delays = prepared.delays ? new DelayedAdmission(instance) : null;
        this.sluice = created;
        this.setup = prepared;
        this.reloader = new ConfigReloader(instance, loaded.fingerprint(), initParams, loader, this::apply,
                created.recorder());
        created.recorder().operations(new SluiceMetrics.Operations() {
            @Override
            public int clearDeniedCache() {
                return created.clearDeniedCache();
            }

            @Override
            public String resetClient(String rule, String clientKey) {
                return created.resetThroughJmx(rule, clientKey);
            }

            @Override
            public String reload() {
                return reloader.reloadNow();
            }
        });
        reloader.start(config.reload());
    }

    /** Where the configuration file is, for the start-up line: the file a user edits to change the limits. */
    private String configFile(SluiceConfig config) {
        String where;
        try {
            where = ConfigLoader.whereIs(initParams, loader, realPath);
        } catch (RuntimeException goneSinceRead) {
            where = initParams.get(CONFIG_PARAM);
        }
        if (where == null) return "";
        return "; config file " + where + (config.reload().isZero() ? ""
                : ", checked for changes every " + Durations.format(config.reload()));
    }

    /**
     * Puts a new configuration in force: the limiter checks that it may replace the running one (or
     * throws, changing nothing), then requests that start from now on use it. Requests in flight
     * finish under the configuration they started with.
     */
    private String apply(SluiceConfig next) {
        SluiceConfig running = setup.config;
        Setup prepared = new Setup(next, loader); // may throw (a class: key source): nothing changed yet
        sluice.reconfigure(next);
        synchronized (this) {
            if (prepared.delays && delays == null) delays = new DelayedAdmission(instance);
        }
        setup = prepared;
        return ConfigChanges.describe(running, next);
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain) throws IOException, ServletException {
        if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)) {
            chain.doFilter(req, res);
            return;
        }
        if (request.getAttribute(clientRequestAttribute) instanceof ClientRequest seen) {
            // a later dispatch of a client request this filter has seen, through a mapping that lists its type
            String path = request.getDispatcherType() == DispatcherType.INCLUDE
                    ? GatedRequest.currentPath(request) : pathWithinApplication(request);
            HttpServletRequest next = GatedRequest.isGated(request) ? request : GatedRequest.of(request, seen);
            dispatch(seen, request, response, path, () -> chain.doFilter(next, response));
            return;
        }
        // one configuration for the whole client request; the request the chain gets, its dispatchers gated
        ClientRequest state = new ClientRequest(request, setup);
        request.setAttribute(clientRequestAttribute, state);

        Outcome outcome = decide(state, request, response, pathWithinApplication(request));
        if (outcome instanceof Refused refused) {
            respond(response, refused);
            return;
        }
        Admitted admitted = (Admitted) outcome;
        Completion completion = admitted.completion;
        DelayedAdmission held = delays;
        try {
            if (admitted.delayMs > 0 && held != null) {
                if (!held.admitAfter(admitted.delayMs, state.setup.config.maxHeldRequests(), state, response, chain)) {
                    refuseHeldAtCapacity(state.setup, response, admitted);
                    return;
                }
            } else {
                chain.doFilter(state, response);
            }
        } catch (IOException | ServletException | RuntimeException | Error failed) {
            // What the client saw: the status already sent (a client that disconnected while the
            // application wrote its answer), else the 500 the container will send.
            List<Completion> later = state.firstDispatchDone();
            if (!request.isAsyncStarted()) {
                int status = response.isCommitted() ? response.getStatus() : HttpServletResponse.SC_INTERNAL_SERVER_ERROR;
                if (completion != null) completion.settle(status, request, response);
                for (int i = 0; i < later.size(); i++) later.get(i).settle(status, request, response);
            } else {
                // gone asynchronous, then failed: settled when the container completes it (after its onError)
                if (completion != null) completion.settleWhenComplete(request, response);
                for (int i = 0; i < later.size(); i++) later.get(i).settleWhenComplete(request, response);
            }
            throw failed;
        }
        if (completion != null) completion.settleWhenComplete(request, response);
        List<Completion> later = state.firstDispatchDone();
        for (int i = 0; i < later.size(); i++) later.get(i).settleWhenComplete(request, response);
    }

    /**
     * A dispatch after the first (a forward or include through the gated request's dispatchers, or
     * any dispatch the filter's mapping lists): the rules the path newly matches decide, then the
     * target runs, or the refusal stands in its place.
     */
    private void dispatch(ClientRequest state, HttpServletRequest request, HttpServletResponse response, String path,
                          GatedRequest.Target target) throws IOException, ServletException {
        Outcome outcome = decide(state, request, response, path);
        if (outcome instanceof Refused refused) {
            // the container's include ignores a status and headers; the body stands in place of the target
            if (!response.isCommitted() && request.getDispatcherType() != DispatcherType.INCLUDE) response.resetBuffer();
            respond(response, refused);
            return;
        }
        Admitted admitted = (Admitted) outcome;
        DelayedAdmission held = delays;
        try {
            // a dispatch cannot be suspended in the middle of the servlet that makes it: its thread waits
            if (admitted.delayMs > 0 && held != null) {
                DelayedAdmission.ThreadHold hold = held.holdThread(admitted.delayMs, state.setup.config.maxHeldRequests(), response);
                if (hold == DelayedAdmission.ThreadHold.AT_CAPACITY) {
                    if (!response.isCommitted() && request.getDispatcherType() != DispatcherType.INCLUDE) response.resetBuffer();
                    state.refuse(refuseHeldAtCapacity(state.setup, response, admitted), null);
                    return;
                }
                if (hold == DelayedAdmission.ThreadHold.ANSWERED) {
                    // answered in place of the target (a 503: the wait was cut short): settled as any answer
                    if (admitted.completion != null) state.settleWhenDone(admitted.completion, request, response);
                    return;
                }
            }
            target.run();
        } catch (IOException | ServletException | RuntimeException | Error failed) {
            // the hold or the target failed: settled with the request's final status when the first dispatch is
            // still running (the servlet that dispatched may catch it and answer), else with what the client saw
            if (admitted.completion != null && !state.settleAfterFirstDispatch(admitted.completion)) {
                if (!request.isAsyncStarted()) {
                    admitted.completion.settle(response.isCommitted() ? response.getStatus()
                            : HttpServletResponse.SC_INTERNAL_SERVER_ERROR, request, response);
                } else {
                    admitted.completion.settleWhenComplete(request, response); // at the completion, after its onError
                }
            }
            throw failed;
        }
        if (admitted.completion != null) state.settleWhenDone(admitted.completion, request, response);
    }

    /** What deciding one dispatch came to. */
    private sealed interface Outcome permits Admitted, Refused {
    }

    /** Admitted (or no rule applied): what it settles once it is complete, how long it waits for its drain slot. */
    private record Admitted(Completion completion, long delayMs, List<Acquisition> acquisitions, Decision decision)
            implements Outcome {
        /** Admitted (or no rule applied) with nothing to settle and no drain slot to wait for. */
        static final Admitted AT_ONCE = new Admitted(null, 0, null, null);
    }

    /** Refused: the answer to send in place of the application's. */
    private record Refused(int status, long retryAfterSeconds, String body) implements Outcome {
    }

    /**
     * The rules {@code path} matches that have not decided this client request yet decide it, in
     * one decision; each rule decides a client request once, whatever its dispatches.
     */
    private Outcome decide(ClientRequest state, HttpServletRequest request, HttpServletResponse response, String path) {
        Setup s = state.setup;
        String method = request.getMethod();
        if (s.exclude != null && s.exclude.matches(method, path)) return Admitted.AT_ONCE;
        if (!s.exemptIps.isEmpty()) {
            ClientAddress client = state.client(request);
            if (state.exempt) {
                recordExempt(state, request, method, path, client);
                return Admitted.AT_ONCE;
            }
        }

        Binding[] bindings = s.bindings;
        if (state.refusal != null) {
            // a rule that refused this client request refuses every later dispatch it matches, as it refused the
            // first (an include after a refused include, a forward after it): the same answer, nothing decided again
            for (int i = 0; i < bindings.length; i++) {
                if (state.refused(i) && bindings[i].matcher.matches(method, path)) return state.refusal;
            }
        }

        // most requests have one rule: it goes as a list of one, its figures alone, without lists to grow
        state.startDecision();
        Acquisition one = null;
        Figures oneFigures = null;
        List<Acquisition> acquisitions = null;
        List<Figures> figures = null;
        boolean completes = false; // whether a rule of the request has anything to do once it is complete
        for (int i = 0; i < bindings.length; i++) {
            Binding b = bindings[i];
            if (state.decided(i) || !b.matcher.matches(method, path)) continue;
            ClientAddress client = state.client(request); // resolved once, when a rule first needs it
            Figures f = b.figuresFor(request, client);
            if (f == null) continue; // an unlimited plan: the rule does not apply to this client
            ClientKey key = b.key.resolve(request, client);
            if (key == null) continue;
            state.markDecided(i);
            completes |= f.completes;
            Acquisition a = new Acquisition(f.rule(), key);
            if (one == null) {
                one = a;
                oneFigures = f;
                continue;
            }
            if (acquisitions == null) {
                acquisitions = new ArrayList<>(bindings.length);
                figures = new ArrayList<>(bindings.length);
                acquisitions.add(one);
                figures.add(oneFigures);
            }
            acquisitions.add(a);
            figures.add(f);
        }
        if (one == null) return Admitted.AT_ONCE;
        if (acquisitions == null) acquisitions = List.of(one); // figures stays null: one rule

        Decision decision = sluice.decide(acquisitions);
        if (!decision.unavailable() && s.headers.writes()) {
            // a refusal for want of Redis has no figures to show: RateLimit fields would mislead
            if (figures == null) {
                s.headers.write(response, decision, oneFigures);
            } else {
                s.headers.write(response, decision, figures);
            }
        }
        if (decision.allowed()) {
            if (anyShadowDenied(decision)) logDryRun(decision);
            Completion completion = completes
                    ? Completion.of(this, figures == null ? List.of(oneFigures) : figures, acquisitions, decision) : null;
            return completion == null && decision.delayMs() <= 0 ? Admitted.AT_ONCE
                    : new Admitted(completion, decision.delayMs(), acquisitions, decision);
        }
        Refused refused;
        if (decision.unavailable()) {
            long retryAfter = RateLimitHeaders.retryAfterSeconds(unavailableRetryMs(decision));
            refused = new Refused(HttpServletResponse.SC_SERVICE_UNAVAILABLE, retryAfter,
                    QuotaExceededProblem.unavailableBody(decision, retryAfter));
        } else {
            long retryAfter = RateLimitHeaders.retryAfterSeconds(decision.retryAfterMs());
            refused = new Refused(s.statusCode, retryAfter, QuotaExceededProblem.body(decision, s.statusCode, retryAfter));
        }
        state.refuse(refused, decision);
        return refused;
    }

    /** Whether a shadow rule would have denied the request ({@link Decision#shadowDenied()}, without a list). */
    private static boolean anyShadowDenied(Decision decision) {
        List<RuleDecision> rules = decision.rules();
        for (int i = 0, n = rules.size(); i < n; i++) {
            RuleDecision r = rules.get(i);
            if (!r.allowed() && r.rule().dryRun()) return true;
        }
        return false;
    }

    /**
     * One client request across its dispatches (forward, include, error, async): the configuration it
     * started under, its client address (resolved once), the rules that have decided it, and what the
     * rules decided in later dispatches give back once the first dispatch is over. A request
     * attribute, so that the container's dispatch wrappers, and the filter itself on a mapping that
     * lists every dispatcher type, see the same one; and the request its first dispatch hands on,
     * whose dispatchers it decides itself (a {@link GatedRequest} that is its own gate).
     */
    private final class ClientRequest extends GatedRequest implements GatedRequest.Gate {
        private static final byte DECIDED = 1, NOW = 2, REFUSED = 4;
        final Setup setup;
        /** Per binding of {@link #setup} (a bit each): whether that rule has decided this request (or counted it exempt). */
        private long decided;
        /** The bindings marked decided for the decision being made. */
        private long decidedNow;
        /** The bindings whose rules were in a refused decision: each refuses the later dispatches it matches. */
        private long refusedBy;
        /** The same three for bindings from the 65th on ({@link #DECIDED}, {@link #NOW}, {@link #REFUSED}), if there are so many; else null. */
        private final byte[] beyond;
        private boolean resolved;
        private ClientAddress client;
        boolean exempt;
        private List<Completion> later;
        private boolean firstDispatchDone;
        /** The first refusal of this client request, or null: what a later dispatch its rules match is answered. */
        Refused refusal;

        ClientRequest(HttpServletRequest request, Setup setup) {
            super(request);
            this.setup = setup;
            this.beyond = setup.bindings.length > Long.SIZE ? new byte[setup.bindings.length] : null;
        }

        boolean decided(int binding) {
            return binding < Long.SIZE ? (decided & 1L << binding) != 0 : (beyond[binding] & DECIDED) != 0;
        }

        /** {@code binding}'s rule decides this request, in the decision being made. */
        void markDecided(int binding) {
            if (binding < Long.SIZE) {
                decided |= 1L << binding;
                decidedNow |= 1L << binding;
            } else {
                beyond[binding] |= DECIDED | NOW;
            }
        }

        /**
         * The decision of the bindings marked decided since {@link #startDecision} refused this client
         * request with {@code refused}: each rule that denied it (every rule of it when {@code decision} is
         * null: Redis was away, or too many requests were held) refuses it the same way wherever it
         * dispatches next. A rule that admitted took nothing, a refused request taking nothing: it has not
         * decided this client request, and decides the next dispatch it matches.
         */
        void refuse(Refused refused, Decision decision) {
            if (refusal == null) refusal = refused;
            List<RuleDecision> rules = decision == null || decision.unavailable() ? null : decision.rules();
            int k = 0; // the acquisitions were made in the order of their bindings
            for (int i = 0, n = setup.bindings.length; i < n; i++) {
                boolean now = i < Long.SIZE ? (decidedNow & 1L << i) != 0 : (beyond[i] & NOW) != 0;
                if (!now) continue;
                RuleDecision r = rules == null ? null : rules.get(k);
                k++;
                boolean denied = r == null || !r.allowed() && !r.rule().dryRun();
                if (i < Long.SIZE) {
                    if (denied) refusedBy |= 1L << i; else decided &= ~(1L << i);
                } else {
                    beyond[i] = (byte) (denied ? beyond[i] | REFUSED : beyond[i] & ~DECIDED);
                }
            }
            startDecision();
        }

        /** A decision begins: the bindings it marks decided are its own. */
        void startDecision() {
            decidedNow = 0;
            if (beyond != null) {
                for (int i = 0; i < beyond.length; i++) beyond[i] &= ~NOW;
            }
        }

        boolean refused(int binding) {
            return binding < Long.SIZE ? (refusedBy & 1L << binding) != 0 : (beyond[binding] & REFUSED) != 0;
        }

        @Override
        protected GatedRequest.Gate gate() {
            return this;
        }

        @Override
        public void dispatch(HttpServletRequest request, HttpServletResponse response, String path,
                             GatedRequest.Target target) throws IOException, ServletException {
            RateLimitFilter.this.dispatch(this, request, response, path, target);
        }

        /** The client's address, resolved at the first dispatch that needs it. */
        ClientAddress client(HttpServletRequest request) {
            if (resolved || !setup.needsClientAddress) return client;
            resolved = true;
            client = setup.clientIps.resolve(request.getRemoteAddr(),
                    setup.readsForwardedHeader ? request.getHeaders(setup.forwardedHeader) : null);
            if (client == null) {
                nonIpPeer(request.getRemoteAddr());
            } else {
                exempt = !setup.exemptIps.isEmpty() && setup.exemptIps.contains(client.address());
            }
            return client;
        }

        /**
         * What a later dispatch settles: settled by the first dispatch once the application is done
         * with the request (an include's status is the including servlet's to set), or now if that
         * first dispatch has already returned (a dispatch from an asynchronous cycle).
         */
        void settleWhenDone(Completion completion, HttpServletRequest request, HttpServletResponse response) {
            if (!settleAfterFirstDispatch(completion)) completion.settleWhenComplete(request, response);
        }

        /**
         * Leaves {@code completion} for the first dispatch to settle when it is over, as {@link #settleWhenDone}
         * does; false, leaving it, when the first dispatch is over already.
         */
        synchronized boolean settleAfterFirstDispatch(Completion completion) {
            if (firstDispatchDone) return false;
            if (later == null) later = new ArrayList<>(2);
            later.add(completion);
            return true;
        }

        /** The first dispatch is over: what its later dispatches settle, for it to settle. */
        synchronized List<Completion> firstDispatchDone() {
            firstDispatchDone = true;
            List<Completion> mine = later == null ? List.of() : later;
            later = null;
            return mine;
        }
    }

    /**
     * A request admitted with a delay while {@code max-held-requests} are held already: refused at
     * once, as a full queue refuses it, naming the rules that would have held it, and what its rules
     * took given back (a refused request takes nothing; its concurrency slots are released).
     */
    private Refused refuseHeldAtCapacity(Setup s, HttpServletResponse response, Admitted admitted) throws IOException {
        List<Acquisition> acquisitions = admitted.acquisitions;
        Decision decision = admitted.decision;
        List<Acquisition> took = new ArrayList<>(acquisitions.size());
        List<RuleDecision> taken = new ArrayList<>(acquisitions.size());
        List<RuleDecision> delaying = new ArrayList<>(1);
        for (int i = 0, n = acquisitions.size(); i < n; i++) {
            RuleDecision r = decision.rules().get(i);
            if (!r.allowed()) continue; // a shadow rule that denied took nothing
            took.add(acquisitions.get(i));
            taken.add(r);
            if (r.delayMs() > 0 && !r.rule().dryRun()) delaying.add(r);
        }
        if (admitted.completion != null) admitted.completion.cancel(); // given back here, whatever it would have settled
        sluice.giveBack(took, taken);
        sluice.recorder().recordHeldRefused();
        long retryAfter = RateLimitHeaders.retryAfterSeconds(decision.delayMs());
        Refused refused = new Refused(s.statusCode, retryAfter, QuotaExceededProblem.body(delaying, s.statusCode, retryAfter));
        respond(response, refused);
        return refused;
    }

    /**
     * An exempt client's request is limited by no rule; each rule that would have applied (as in
     * {@link #decide}: its match, a plan that is not unlimited, its key) counts it as exempt, once.
     */
    private void recordExempt(ClientRequest state, HttpServletRequest request, String method, String path,
                              ClientAddress client) {
        Binding[] bindings = state.setup.bindings;
        for (int i = 0; i < bindings.length; i++) {
            Binding b = bindings[i];
            if (state.decided(i) || !b.matcher.matches(method, path)) continue;
            Figures f = b.figuresFor(request, client);
            if (f != null && b.key.resolve(request, client) != null) {
                state.markDecided(i);
                sluice.recorder().recordExempt(f.rule());
            }
        }
    }

    /**
     * What an admitted request settles once it is complete and its final status known, in one call for
     * all its rules: a rule whose {@code count} does not include the status gives back what it took; a
     * rule with an {@code actual-cost} settles the difference between the cost the application stated and
     * what it took (nothing when the status did not count); a concurrency rule releases its slot. Once,
     * whichever way the request ends. The container tells of an asynchronous request's completion through
     * an {@link AsyncListenerAdapter}.
     */
    private static final class Completion implements AsyncListenerAdapter.Events {
        private final RateLimitFilter filter;
        /** The rules that count only some statuses or settle their cost, as decided, and what each took. */
        private final List<Acquisition> acquisitions;
        private final List<RuleDecision> taken;
        /** Per rule above: the statuses that count, or null for all. */
        private final ResponseStatuses[] counts;
        /** Per rule above: where its actual cost is stated, or null (its cost stands). */
        private final ActualCost[] actualCosts;
        /** The request's concurrency slots, or null. */
        private final Leases.Held slots;
        private final AtomicBoolean settled = new AtomicBoolean();

        private Completion(RateLimitFilter filter, List<Acquisition> acquisitions, List<RuleDecision> taken,
                           ResponseStatuses[] counts, ActualCost[] actualCosts, Leases.Held slots) {
            this.filter = filter;
            this.acquisitions = acquisitions;
            this.taken = taken;
            this.counts = counts;
            this.actualCosts = actualCosts;
            this.slots = slots;
        }

        private static final ResponseStatuses[] NO_COUNTS = new ResponseStatuses[0];
        private static final ActualCost[] NO_COSTS = new ActualCost[0];

        /** What this admitted request settles when complete, or {@code null} when nothing. */
        static Completion of(RateLimitFilter filter, List<Figures> figures, List<Acquisition> acquisitions, Decision decision) {
            List<Acquisition> a = null;
            List<RuleDecision> t = null;
            List<ResponseStatuses> c = null;
            List<ActualCost> costs = null;
            for (int i = 0, n = figures.size(); i < n; i++) {
                Figures f = figures.get(i);
                RuleDecision r = decision.rules().get(i);
                if (!f.settles() || !r.taken()) continue;
                if (a == null) {
                    a = new ArrayList<>(n);
                    t = new ArrayList<>(n);
                    c = new ArrayList<>(n);
                    costs = new ArrayList<>(n);
                }
                a.add(acquisitions.get(i));
                t.add(r);
                c.add(f.count);
                costs.add(f.actualCost);
            }
            Leases.Held slots = filter.sluice.leases().hold(acquisitions, decision);
            if (a == null && slots == null) return null;
            return a == null ? new Completion(filter, List.of(), List.of(), NO_COUNTS, NO_COSTS, slots)
                    : new Completion(filter, a, t, c.toArray(NO_COUNTS), costs.toArray(NO_COSTS), slots);
        }

        /** Settles now, or when the request completes if it went asynchronous. */
        void settleWhenComplete(HttpServletRequest request, HttpServletResponse response) {
            if (request.isAsyncStarted()) {
                request.getAsyncContext().addListener(new AsyncListenerAdapter(this), request, response);
            } else {
                settle(response.getStatus(), request, response);
            }
        }

        /** Settles, once, for a response of {@code status}: see the class comment. */
        void settle(int status, ServletRequest request, ServletResponse response) {
            if (!settled.compareAndSet(false, true)) return;
            List<Settlement> out = new ArrayList<>(counts.length + 1);
            if (slots != null) out.addAll(slots.release());
            for (int i = 0; i < counts.length; i++) {
                Acquisition a = acquisitions.get(i);
                if (counts[i] != null && !counts[i].contains(status)) {
                    out.add(Settlement.giveBack(a, taken.get(i))); // a response that does not count costs nothing
                } else if (actualCosts[i] != null) {
                    long actual = request instanceof HttpServletRequest http && response instanceof HttpServletResponse r
                            ? actualCosts[i].read(http, r) : ActualCost.NONE;
                    if (actual == ActualCost.NONE) {
                        filter.costNotStated(a.rule(), actualCosts[i]);
                        continue;
                    }
                    if (actual > actualCosts[i].max()) {
                        filter.costCapped(a.rule(), actualCosts[i], actual);
                        actual = actualCosts[i].max();
                    }
                    Settlement difference = Settlement.ofActualCost(a, taken.get(i), actual);
                    if (difference != null) out.add(difference);
                }
            }
            if (out.isEmpty()) return;
            try {
                filter.sluice.settle(out);
            } catch (RuntimeException e) {
                log.debug("Sluice [{}]: settling a request failed (what it took stands; its slots free with their"
                        + " leases)", filter.sluice.name(), e);
            }
        }

        /**
         * Settles nothing: the request was refused after all and its caller gives back everything it took,
         * its slots' releases among them (a concurrency rule's give-back is the release); its slots are
         * only no longer renewed here.
         */
        void cancel() {
            if (settled.compareAndSet(false, true) && slots != null) slots.release();
        }

        @Override
        public void onComplete(AsyncEvent event) {
            settle(((HttpServletResponse) event.getSuppliedResponse()).getStatus(), event.getSuppliedRequest(),
                    event.getSuppliedResponse());
        }

        @Override
        public void onStartAsync(AsyncEvent event) {
            event.getAsyncContext().addListener(new AsyncListenerAdapter(this), event.getSuppliedRequest(),
                    event.getSuppliedResponse());
        }
    }

    /**
     * A response of a rule with {@code actual-cost} stated no usable cost: its estimate stands. Logged at
     * most once a minute, with how many since.
     */
    private void costNotStated(Rule rule, ActualCost source) {
        long count = costsNotStated.due();
        if (count > 0) {
            log.warn("Sluice [{}]: {} of rule {} stated no cost in {} (absent, negative or not a whole"
                    + " number): the estimate, cost={}, stood. Logged at most once a minute.", instance,
                    count == 1 ? "a response" : count + " responses", rule.name(), source, rule.cost());
        }
    }

    /**
     * A response of a rule with {@code max-actual-cost} stated more: it is settled at the bound. Logged at
     * most once a minute, with how many since and the last cost stated.
     */
    private void costCapped(Rule rule, ActualCost source, long stated) {
        long count = costsCapped.due();
        if (count > 0) {
            log.warn("Sluice [{}]: {} stated a cost above {} rule's max-actual-cost, settled at the bound (the last:"
                    + " {} in {} of rule {}, settled at rule.{}.max-actual-cost={}). Logged at most once a minute.",
                    instance, count == 1 ? "a response" : count + " responses", count == 1 ? "its" : "their", stated,
                    source, rule.name(), rule.name(), source.max());
        }
    }

    /** Counts events, and says when one may be logged: at most once an interval. */
    private static final class LogThrottle {
        private final long intervalNanos;
        private final AtomicLong last = new AtomicLong();
        private final AtomicLong count = new AtomicLong();

        LogThrottle(long intervalNanos) {
            this.intervalNanos = intervalNanos;
        }

        /** Counts one; how many since the last log when a log is due now, else 0. */
        long due() {
            count.incrementAndGet();
            long now = System.nanoTime();
            long at = last.get();
            if ((at == 0 || now - at >= intervalNanos) && last.compareAndSet(at, now)) {
                return count.getAndSet(0);
            }
            return 0;
        }
    }

    /**
     * A peer without an IP address (a Unix-socket connector, say) has no {@code ip} key: the rules
     * keyed on it do not apply to its requests. Said once in the log, counted always.
     */
    private void nonIpPeer(String peer) {
        sluice.recorder().recordNonIpPeer();
        if (nonIpPeerLogged.compareAndSet(false, true)) {
            log.warn("Sluice [{}]: a request came from a peer that is not an IP address ({}), e.g. through a"
                    + " Unix-socket connector; rules keyed on ip do not apply to such requests (counted in the"
                    + " NonIpPeers metric). Put a proxy that sets X-Forwarded-For in trusted-proxies, or key those"
                    + " rules on something else. Logged once.", instance, peer == null ? "none" : peer.length() > 64
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

    /**
     * Sends a refusal: its status, {@code Retry-After}, {@code Cache-Control: no-store} and the
     * problem body, through the writer if the application has taken it (a refused forward or include).
     * Its body fills the content length it states, which closes the response (Servlet 5.6): what the
     * application writes after a refused dispatch is not sent.
     */
    private static void respond(HttpServletResponse response, Refused refused) throws IOException {
        byte[] bytes = refused.body.getBytes(StandardCharsets.UTF_8);
        response.setStatus(refused.status);
        response.setHeader("Retry-After", RateLimitHeaders.decimal(refused.retryAfterSeconds));
        response.setHeader("Cache-Control", "no-store");
        response.setContentType(QuotaExceededProblem.CONTENT_TYPE);
        response.setContentLength(bytes.length);
        ServletOutputStream out;
        try {
            out = response.getOutputStream();
        } catch (IllegalStateException writerTaken) {
            PrintWriter writer = response.getWriter();
            writer.write(refused.body);
            writer.flush();
            return;
        }
        out.write(bytes);
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
        long count = dryRunDenials.due();
        if (count > 0) {
            List<String> names = new ArrayList<>();
            for (RuleDecision r : decision.shadowDenied()) names.add(r.rule().name());
            log.info("Sluice [{}] dry-run: {} {} have been denied since the last report, the latest by {}",
                    instance, count, count == 1 ? "request would" : "requests would", String.join(", ", names));
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

    /**
     * Reads the {@code config} file again now and applies it if it changed and is valid (what the
     * JMX operation {@code reload()} does); returns the outcome.
     */
    public String reload() {
        return reloader.reloadNow();
    }

    @Override
    public void destroy() {
        if (reloader != null) reloader.close();
        DelayedAdmission held = delays;
        if (held != null) held.close();
        if (sluice != null) sluice.close();
    }
}
