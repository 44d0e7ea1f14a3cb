package dev.sluice;

import dev.sluice.config.ConfigLoader;
import dev.sluice.config.RuleConfig;
import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.LimiterStack;
import dev.sluice.internal.lease.Leases;
import dev.sluice.internal.metrics.Micrometer;
import dev.sluice.internal.metrics.SluiceMetrics;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.metrics.RateLimiterMXBean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The programmatic entry point: the same limiter the filter uses, for code outside a servlet
 * container (batch jobs, message consumers, other frameworks).
 *
 * <pre>{@code
 * SluiceConfig config = SluiceConfig.builder()
 *         .rule(Rule.builder("api").limit(100).window(Duration.ofMinutes(1)).build())
 *         .redisUrl("redis://cache:6379")
 *         .build();
 * try (Sluice sluice = Sluice.builder(config).build()) {
 *     Decision d = sluice.tryAcquire("api", "customer-42");          // never waits
 *     if (!d.allowed()) { ... d.retryAfter() ... }
 *     sluice.acquire("api", ClientKey.of("batch-7"), 1, Duration.ofSeconds(5)); // waits up to 5 s
 * }
 * }</pre>
 *
 * <p>Or from properties with the keys of the configuration reference: {@link #create(Properties)}.
 * A client's key is a {@link ClientKey}; a plain string passed to {@link #tryAcquire(String, String)}
 * is {@link ClientKey#of(String)}, so the same customer is one counter through every method.
 *
 * <p>Thread-safe. {@link #close()} releases the Redis pool it created (never a client handed in).
 */
public final class Sluice implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Sluice.class);
    private static final AtomicInteger THREADS = new AtomicInteger();

    private volatile SluiceConfig config;
    private volatile Map<String, Rule> rules;
    private final LimiterStack stack;
    private final RateLimiter limiter;
    private final SluiceMetrics metrics;
    /** The concurrency slots held by this limiter's requests, renewed while they run. */
    private final Leases leases;
    private final Executor asyncExecutor;
    /** Created on first use of the asynchronous methods: a filter never starts it. */
    private ScheduledExecutorService ownThreads; // guarded by this
    private boolean closed; // guarded by this

    private Sluice(Builder b) {
        this.config = b.config;
        this.rules = rulesOf(config);
        this.metrics = new SluiceMetrics(b.name);
        metrics.updateRules(List.copyOf(rules.values()));
        this.stack = LimiterStack.build(config, b.clock, b.redis, metrics);
        this.limiter = stack.limiter();
        this.leases = new Leases(limiter, metrics::name, System::nanoTime, true);
        metrics.leases(leases::slotsHeld, leases::lost);
        this.asyncExecutor = b.asyncExecutor != null ? b.asyncExecutor : task -> ownThreads().execute(task);
        metrics.operations(new SluiceMetrics.Operations() {
            @Override
            public int clearDeniedCache() {
                return Sluice.this.clearDeniedCache();
            }

            @Override
            public String resetClient(String rule, String clientKey) {
                return resetThroughJmx(rule, clientKey);
            }
        });
        try {
            Micrometer.bind(metrics, b.meterRegistry, config);
        } catch (RuntimeException | LinkageError e) {
            stack.close(); // nobody else will: the caller gets no Sluice to close
            throw e;
        }
        if (b.startLine) log.info("Sluice [{}] started: {}", metrics.name(), summary());
    }

    /**
     * What this limiter is, for the start-up line: {@code 2 rules (api, login), backend=redis at
     * localhost:6379, clock=redis}.
     */
    String summary() {
        SluiceConfig c = config;
        List<String> names = c.rules().stream().map(r -> r.name() + (r.rule().dryRun() ? " (dry-run)" : "")).toList();
        String rulesPart = names.size() + (names.size() == 1 ? " rule (" : " rules (") + String.join(", ", names) + ")";
        return c.backend() == SluiceConfig.Backend.LOCAL
                ? rulesPart + ", backend=local: limits are per instance"
                : rulesPart + ", backend=redis at " + c.redis().describe() + ", clock="
                + c.clock().name().toLowerCase(Locale.ROOT);
    }

    /** The name of this limiter in its log lines and its threads' names ({@link Builder#name}), as JMX shows it once registered. */
    public String name() {
        return metrics.name();
    }

    /** Builds a limiter from properties (keys as in the configuration reference). */
    public static Sluice create(Properties properties) {
        return builder(ConfigLoader.load(properties)).build();
    }

    /** Builds a limiter from a map (keys as in the configuration reference). */
    public static Sluice create(Map<String, String> configuration) {
        return builder(ConfigLoader.load(configuration)).build();
    }

    /** A builder for a limiter of this configuration. */
    public static Builder builder(SluiceConfig config) {
        return new Builder(config);
    }

    private static Map<String, Rule> rulesOf(SluiceConfig config) {
        Map<String, Rule> byName = new LinkedHashMap<>();
        for (RuleConfig rc : config.rules()) {
            byName.put(rc.name(), rc.rule());
        }
        return Collections.unmodifiableMap(byName);
    }

    /** The configuration in force. */
    public SluiceConfig config() {
        return config;
    }

    /**
     * Replaces the configuration while running: rules added, removed or changed (limits, windows,
     * plans, modes, ...) apply to every decision that starts after this returns, and every client's
     * state in Redis is kept. A change of a key that cannot change while running (Redis connection,
     * key prefix, clock, engine sizes) is refused, and then nothing changes.
     *
     * @throws dev.sluice.config.ConfigException naming the key that cannot change while running
     */
    public synchronized void reconfigure(SluiceConfig next) {
        Objects.requireNonNull(next, "next");
        next.checkReplaces(config);
        Map<String, Rule> nextRules = rulesOf(next);
        metrics.updateRules(List.copyOf(nextRules.values()));
        this.rules = nextRules;
        this.config = next;
    }

    /** The limiter all decisions go through (the denied-client cache, the failure handling, Redis). */
    public RateLimiter limiter() {
        return limiter;
    }

    /** What this limiter counts (decisions, who answered them, Redis errors, breaker, latency). */
    public RateLimiterMXBean metrics() {
        return metrics.view();
    }

    /** For the filter: the recording side of the metrics. */
    SluiceMetrics recorder() {
        return metrics;
    }

    /** For the filter and tests: the layers. */
    LimiterStack stack() {
        return stack;
    }

    /**
     * Registers this limiter's MXBeans ({@code dev.sluice:type=RateLimiter,name=<name>} and one
     * {@code type=Rule} per rule) on the platform MBean server; {@link #close()} unregisters them.
     * Its Micrometer meters (if any) take the name used as their {@code instance} tag (before, it is
     * the {@link Builder#name name}, {@code sluice} by default), and so do its log lines; call this
     * before deciding, as the filter does, or the latency timer's first figures go with the old tag.
     *
     * @return the name used: {@code name}, or with a suffix if another Sluice in this JVM has it
     */
    public String registerMBeans(String name) {
        return metrics.register(name, List.copyOf(rules.values()));
    }

    /** The configured rule named {@code name}. */
    public Rule rule(String name) {
        Rule rule = rules.get(name);
        if (rule == null) {
            throw new IllegalArgumentException("no rule '" + name + "'; configured: " + rules.keySet());
        }
        return rule;
    }

    /** The configured rules by name, in configuration order. */
    public Map<String, Rule> rules() {
        return rules;
    }

    /**
     * The figures a client on {@code plan} gets from the rule: the plan's, or the rule's own when the
     * plan is {@code null} or not listed; {@code null} for an {@code unlimited} plan (the rule does not
     * apply). A client's counters belong to the rule and the client, whatever its plan.
     */
    public Rule rule(String ruleName, String plan) {
        return withPlan(rule(ruleName), plan);
    }

    /** {@code own}'s figures for the clients of {@code plan} (null: none; unknown: its own), or null when unlimited. */
    private Rule withPlan(Rule own, String plan) {
        if (plan == null) return own;
        RuleConfig.Plan p = config.rule(own.name()).plan(plan);
        return p == null ? own : p.rule();
    }

    /**
     * Takes the configured cost of the rule, with the figures of the client's {@code plan}, for
     * {@code clientKey}. Never waits. For an {@code unlimited} plan nothing is counted: the decision
     * admits, with no rule in it.
     */
    public Decision tryAcquire(String ruleName, String plan, ClientKey clientKey) {
        Rule figures = withPlan(rateRule(rule(ruleName)), plan);
        return figures == null ? Decision.none() : decide(List.of(new Acquisition(figures, clientKey, figures.cost())));
    }

    /** Takes the rule's configured cost for the client named {@code clientKey} ({@link ClientKey#of}). Never waits. */
    public Decision tryAcquire(String ruleName, String clientKey) {
        return tryAcquire(ruleName, ClientKey.of(clientKey));
    }

    /** Takes the rule's configured cost for {@code clientKey}. Never waits. */
    public Decision tryAcquire(String ruleName, ClientKey clientKey) {
        Rule rule = rule(ruleName);
        return tryAcquire(ruleName, clientKey, rule.cost());
    }

    /** Takes {@code cost} tokens of the rule for {@code clientKey}. Never waits. */
    public Decision tryAcquire(String ruleName, ClientKey clientKey, long cost) {
        return decide(List.of(new Acquisition(rateRule(rule(ruleName)), clientKey, cost)));
    }

    /**
     * {@code rule}, if it counts a rate: a concurrency rule's slot must be released when its request is
     * over, which a bare decision cannot do ({@link #tryAcquireSlot} holds and releases it).
     */
    private static Rule rateRule(Rule rule) {
        if (rule.algorithm().isConcurrency()) {
            throw new IllegalArgumentException("rule " + rule.name() + " is a concurrency rule: take its slot with"
                    + " tryAcquireSlot (or begin), which releases it when the lease is closed");
        }
        return rule;
    }

    /**
     * Decides several rules for one request atomically: either every rule admits it and each
     * takes its cost, or it is denied and no rule takes anything (see {@link RateLimiter#decide}).
     * A concurrency rule's slot taken here is held until it is given back ({@link #giveBack}) or its
     * lease ends, and is not renewed: {@link #begin} holds and renews it until the lease is closed.
     */
    public Decision decide(List<Acquisition> acquisitions) {
        long started = System.nanoTime();
        Decision decision = limiter.decide(acquisitions);
        metrics.recordDecision(decision, System.nanoTime() - started);
        return decision;
    }

    /**
     * Gives back what an admitted request took from some of its rules, as if it had not counted: for
     * results that should not count against a client (a login that succeeded, say). Each client's
     * state ends never better than if the request had not happened. Best effort: if Redis cannot be
     * reached, nothing is given back. Call it once per decision: on Redis the same give-back sent
     * again within a minute changes nothing (a resend underneath), but one asked again later is
     * applied again, and the local engine and an approximate rule ({@code sync}) keep no such record at all.
     *
     * @param acquisitions the acquisitions to give back, as they were decided
     * @param taken        the {@link RuleDecision} of each, in the same order, from the decision that admitted them
     */
    public void giveBack(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        if (acquisitions.size() != taken.size()) {
            throw new IllegalArgumentException("one rule decision per acquisition: " + acquisitions.size() + " vs "
                    + taken.size());
        }
        if (acquisitions.isEmpty()) return;
        // bounded by the figures in force now (a reload, a plan's new figures, since the request was decided)
        List<Acquisition> inForce = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) inForce.add(inForce(a, false));
        limiter.giveBack(inForce, taken);
    }

    /**
     * {@code a} with the figures its rule (and plan) has now; as it is if the rule is gone or changed its
     * algorithm, but for a {@code charge}: a charge is taken as a request now is, so under another algorithm
     * it is taken on the state the rule keeps now (charged with the old one, it wrote its own state over the
     * client's count), or not at all (null) when the rule's algorithm now settles no cost.
     */
    private Acquisition inForce(Acquisition a, boolean charge) {
        Rule decided = a.rule();
        Rule own = rules.get(decided.name());
        if (own == null || own == decided) return a; // gone, or the rule's own figures unchanged: nothing to look up
        RuleConfig rule = config.rule(decided.name());
        RuleConfig.Plan plan = decided.plan() == null || rule == null ? null : rule.plan(decided.plan());
        Rule now = plan == null ? own : plan.rule();
        if (now == null || now == decided) return a;
        if (now.algorithm() != decided.algorithm()) {
            if (!charge) return a;
            return now.algorithm().settlesCost() && !now.approximate() ? new Acquisition(now, a.clientKey(), a.cost()) : null;
        }
        return new Acquisition(now, a.clientKey(), a.cost());
    }

    /**
     * Takes a slot of the concurrency rule {@code ruleName} ({@code algorithm=concurrency}) for
     * {@code clientKey}, if fewer than its limit of that client's requests are in flight, fleet-wide.
     * Never waits. The slot is held, and renewed in the background, until the returned lease is closed:
     * use it in a try-with-resources. A denied request's lease holds nothing.
     *
     * @throws IllegalArgumentException if the rule is not a concurrency rule
     */
    public Lease tryAcquireSlot(String ruleName, ClientKey clientKey) {
        return tryAcquireSlot(ruleName, null, clientKey);
    }

    /** {@link #tryAcquireSlot(String, ClientKey)} with the limit of the client's {@code plan}. */
    public Lease tryAcquireSlot(String ruleName, String plan, ClientKey clientKey) {
        Rule figures = rule(ruleName, plan);
        if (!rule(ruleName).algorithm().isConcurrency()) {
            throw new IllegalArgumentException("rule " + ruleName + " is " + rule(ruleName).algorithm().id()
                    + ", not a concurrency rule: use tryAcquire");
        }
        return figures == null ? new Lease(this, List.of(), Decision.none(), null)
                : begin(List.of(new Acquisition(figures, clientKey)));
    }

    /**
     * Decides several rules for one request atomically, as {@link #decide}, and holds what the request
     * needs until it completes: the slots of its concurrency rules (renewed while it runs, released when
     * the lease is closed), and what each rule took, for {@link Lease#settle} once its actual cost is known.
     */
    public Lease begin(List<Acquisition> acquisitions) {
        List<Acquisition> request = List.copyOf(acquisitions);
        Decision decision = decide(request);
        return new Lease(this, request, decision, decision.allowed() ? leases.hold(request, decision) : null);
    }

    /**
     * Settles the cost a request admitted by {@code taken} really had on its rule, once on Redis (the same
     * settlement sent again within a minute changes nothing there; the local engine, {@code backend=local} and the backstop,
     * keep no such record: call it once, as {@link Lease#settle} does): the difference from {@code acquisition}'s cost (what it took, an estimate) is
     * charged, past the limit if need be, or given back (never leaving the client better off than if the
     * request had cost that much); nothing when they are equal. Best effort, as {@link #giveBack}. A cost
     * above the rule's {@code max-actual-cost} (where its configuration sets one) counts as that bound.
     *
     * @throws IllegalArgumentException if {@code actualCost} is negative, or the rule cannot settle a cost
     *                                  (sliding-window-log, leaky-bucket, concurrency, or an approximate rule)
     */
    public void settle(Acquisition acquisition, RuleDecision taken, long actualCost) {
        Rule rule = acquisition.rule();
        requireSettlesCost(rule);
        if (!taken.taken()) {
            if (actualCost < 0) throw new IllegalArgumentException("an actual cost is 0 or more, not " + actualCost);
            return;
        }
        RuleConfig configured = config.rule(rule.name());
        if (configured != null && configured.actualCost() != null && actualCost > configured.actualCost().max()) {
            actualCost = configured.actualCost().max(); // rule.<r>.max-actual-cost
        }
        Settlement settlement = Settlement.ofActualCost(acquisition, taken, actualCost);
        if (settlement != null) settle(List.of(settlement));
    }

    /** @throws IllegalArgumentException if {@code rule} cannot settle a cost after the response */
    static void requireSettlesCost(Rule rule) {
        if (!rule.algorithm().settlesCost() || rule.approximate()) {
            throw new IllegalArgumentException("rule " + rule.name() + " (" + rule.algorithm().id()
                    + (rule.approximate() ? ", approximate" : "") + ") settles no cost after the response");
        }
    }

    /**
     * For the filter: settles a request's settlements (give-backs, releases, charges) in one call, each
     * bounded by the figures its rule has now, as {@link #giveBack}.
     */
    void settle(List<Settlement> settlements) {
        if (settlements.isEmpty()) return;
        List<Settlement> inForce = new ArrayList<>(settlements.size());
        for (Settlement s : settlements) {
            Acquisition now = inForce(s.acquisition(), s.charge());
            if (now == null) continue; // a charge the rule's algorithm can no longer take
            inForce.add(now == s.acquisition() ? s : new Settlement(now, s.taken(), s.charge()));
        }
        if (!inForce.isEmpty()) limiter.settle(inForce);
    }

    /** For the filter: the slots a request holds until it completes. */
    Leases leases() {
        return leases;
    }

    /**
     * Takes {@code cost} tokens of the rule for {@code clientKey}, waiting up to {@code maxWait} for
     * them: for batch jobs that must slow down, not fail. Returns as soon as the tokens are taken
     * (after the leaky bucket's drain slot, if the rule delays), or, without waiting further, as
     * soon as it is clear they cannot be had within {@code maxWait}: the returned decision is then
     * the denial (or a {@code closed} rule's refusal while Redis is away), with its retry-after.
     * Other instances may take tokens meanwhile, so a wait may be followed by another.
     *
     * @throws InterruptedException if the thread is interrupted while waiting (nothing was taken)
     */
    public Decision acquire(String ruleName, ClientKey clientKey, long cost, Duration maxWait) throws InterruptedException {
        List<Acquisition> request = List.of(new Acquisition(rateRule(rule(ruleName)), clientKey, cost));
        long deadline = System.nanoTime() + nonNegative(maxWait).toNanos();
        while (true) {
            Decision d = decide(request);
            if (d.allowed()) {
                long delay = d.delayMs();
                if (delay > 0) TimeUnit.MILLISECONDS.sleep(delay);
                return d;
            }
            long waitNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, d.retryAfterMs()));
            if (System.nanoTime() + waitNanos - deadline > 0) return d;
            TimeUnit.NANOSECONDS.sleep(waitNanos);
        }
    }

    /**
     * {@link #decide} on the asynchronous executor (Sluice's own thread, or the builder's
     * {@link Builder#asyncExecutor}): the caller's thread never waits for Redis. The future fails
     * only with a caller's mistake (e.g. a rule asked twice); a Redis outage is answered by the
     * failure policy as usual.
     */
    public CompletableFuture<Decision> decideAsync(List<Acquisition> acquisitions) {
        List<Acquisition> request = List.copyOf(acquisitions);
        return CompletableFuture.supplyAsync(() -> decide(request), asyncExecutor);
    }

    /**
     * {@link #acquire} without blocking any thread: the future completes when the tokens are taken
     * (and the leaky bucket's slot has come), or with the denial as soon as they cannot be had
     * within {@code maxWait}. Waits are scheduled on a timer, never slept.
     */
    public CompletableFuture<Decision> acquireAsync(String ruleName, ClientKey clientKey, long cost, Duration maxWait) {
        List<Acquisition> request = List.of(new Acquisition(rateRule(rule(ruleName)), clientKey, cost));
        long deadline = System.nanoTime() + nonNegative(maxWait).toNanos();
        CompletableFuture<Decision> result = new CompletableFuture<>();
        attempt(request, deadline, result);
        return result;
    }

    private void attempt(List<Acquisition> request, long deadline, CompletableFuture<Decision> result) {
        decideAsync(request).whenComplete((d, failure) -> {
            if (failure != null) {
                result.completeExceptionally(failure);
            } else if (d.allowed()) {
                if (d.delayMs() > 0) later(d.delayMs(), () -> result.complete(d), result);
                else result.complete(d);
            } else {
                long waitMs = Math.max(1, d.retryAfterMs());
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs) - deadline > 0) result.complete(d);
                else later(waitMs, () -> attempt(request, deadline, result), result);
            }
        });
    }

    private void later(long delayMs, Runnable task, CompletableFuture<Decision> result) {
        try {
            ownThreads().schedule(task, delayMs, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException closed) {
            result.completeExceptionally(new IllegalStateException("this Sluice is closed", closed));
        }
    }

    /**
     * Resets one client of one rule: its remembered denial, its Redis key and its backstop state are
     * forgotten, so its next request starts with a full quota (what Bucket4j's {@code reset()} does
     * for one bucket).
     *
     * @throws LimiterUnavailableException if Redis could not delete the key (the local state is gone already)
     */
    public void reset(String ruleName, ClientKey clientKey) {
        limiter.reset(rule(ruleName), clientKey);
    }

    /** Forgets every denial the denied-client cache remembers (the JMX operation); returns how many. */
    int clearDeniedCache() {
        if (stack.cache() == null) return 0;
        int held = stack.cache().size();
        stack.cache().clear();
        log.info("Sluice [{}]: the denied-client cache was cleared through JMX ({} denials forgotten)", name(), held);
        return held;
    }

    String resetThroughJmx(String ruleName, String clientKey) {
        Rule rule = rules.get(ruleName);
        if (rule == null) return "no rule '" + ruleName + "'; configured: " + rules.keySet();
        ClientKey key;
        try {
            key = ClientKey.parse(clientKey);
        } catch (IllegalArgumentException bad) {
            return bad.getMessage();
        }
        try {
            limiter.reset(rule, key);
        } catch (LimiterUnavailableException e) {
            return "reset on this instance; Redis did not answer: " + e.getMessage();
        }
        log.info("Sluice [{}]: rule {} was reset for client {} through JMX", name(), ruleName, key);
        return "reset rule " + ruleName + " for client " + key;
    }

    /** Sluice's own daemon threads for the asynchronous methods: as many as there are cores, at least 2. */
    private synchronized ScheduledExecutorService ownThreads() {
        if (closed) throw new RejectedExecutionException("this Sluice is closed");
        if (ownThreads == null) {
            int n = Math.max(2, Runtime.getRuntime().availableProcessors());
            ownThreads = Executors.newScheduledThreadPool(n, r -> {
                Thread t = new Thread(r, "sluice-async-" + name() + "-" + THREADS.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }
        return ownThreads;
    }

    private static Duration nonNegative(Duration d) {
        Objects.requireNonNull(d, "maxWait");
        if (d.isNegative()) throw new IllegalArgumentException("maxWait must not be negative: " + d);
        return d;
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            if (ownThreads != null) ownThreads.shutdownNow();
        }
        try {
            leases.close();
            metrics.unregister();
        } finally {
            stack.close();
        }
    }

    /** Builds a {@link Sluice}. Not thread-safe. */
    public static final class Builder {
        private final SluiceConfig config;
        private Clock clock = Clock.SYSTEM;
        private UnifiedJedis redis;
        private Executor asyncExecutor;
        private Object meterRegistry;
        private String name = SluiceMetrics.DEFAULT_NAME;
        private boolean startLine = true;

        private Builder(SluiceConfig config) {
            this.config = Objects.requireNonNull(config, "config");
        }

        /**
         * The name this limiter's log lines and threads carry ({@code Sluice [billing] started: ...},
         * {@code sluice-async-billing-1}), so that several limiters in one JVM can be told apart; also
         * its Micrometer meters' {@code instance} tag until {@link Sluice#registerMBeans} names it.
         * Default {@code sluice}. The filter gives its JMX instance name ({@code shop/sluice}).
         */
        public Builder name(String name) {
            Objects.requireNonNull(name, "name");
            if (name.isBlank()) throw new IllegalArgumentException("name must not be blank");
            this.name = name;
            return this;
        }

        /** For the filter, which logs a start-up line of its own once it has started. */
        Builder withoutStartLine() {
            this.startLine = false;
            return this;
        }

        /**
         * The instance's clock: the local engine's, and the scripts' with {@code clock=local}; default
         * the system clock. Tests pass a fake one.
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Your own Jedis client ({@code JedisPooled}, {@code JedisSentineled}, {@code JedisCluster}: any
         * {@link UnifiedJedis}) instead of one built from the configuration's {@code redis.*} settings.
         * Sluice never closes it. Its timeouts are yours: keep them short (Sluice's default is 50 ms),
         * since every decision waits for it. For a {@code JedisCluster} the configuration must say
         * {@code redis.cluster.nodes} too, so that a request's rules are decided one slot at a time.
         * Concurrent decisions share round trips on a {@code JedisPooled}'s connections (as on the
         * clients Sluice builds itself, of every topology); with another client each decision makes
         * a call of its own.
         */
        public Builder redis(UnifiedJedis client) {
            this.redis = Objects.requireNonNull(client, "client");
            return this;
        }

        /** Where {@link #decideAsync} and {@link #acquireAsync} call Redis; default one Sluice thread. */
        public Builder asyncExecutor(Executor executor) {
            this.asyncExecutor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * The Micrometer {@code io.micrometer.core.instrument.MeterRegistry} to register Sluice's meters
         * in, instead of Micrometer's global registry (the default when Micrometer is on the class path).
         * Typed {@code Object} so that this class needs no Micrometer; {@link Sluice#close()} removes the meters.
         *
         * @throws IllegalArgumentException if {@code registry} is not a {@code MeterRegistry}, or
         *                                  Micrometer is not on Sluice's class path
         */
        public Builder meterRegistry(Object registry) {
            Objects.requireNonNull(registry, "registry");
            Micrometer.requireRegistry(registry);
            this.meterRegistry = registry;
            return this;
        }

        /**
         * Builds the limiter; with {@code backend=redis} and no client of yours, creates the pool (it connects lazily).
         *
         * @throws IllegalStateException if a {@link #meterRegistry} was given and {@code metrics.micrometer} is false
         */
        public Sluice build() {
            if (meterRegistry != null && !config.micrometer()) {
                throw new IllegalStateException("a meter registry was given, but the configuration says"
                        + " metrics.micrometer=false: drop one or the other");
            }
            return new Sluice(this);
        }
    }
}
