package dev.sluice.internal.metrics;

import dev.sluice.metrics.RateLimiterMXBean;
import dev.sluice.metrics.RuleMXBean;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * What one Sluice instance counts, exported over JMX (readable with {@code jconsole} or any JMX
 * agent, no extra dependency):
 * <ul>
 *   <li>{@code dev.sluice:type=RateLimiter,name=<instance>}: {@link RateLimiterMXBean};</li>
 *   <li>{@code dev.sluice:type=Rule,name=<instance>,rule=<rule>}: {@link RuleMXBean}, one per rule.</li>
 * </ul>
 * An instance or rule name containing one of {@code , = : " * ? \n} appears quoted
 * ({@link ObjectName#quote}). If another Sluice in the same JVM already uses the instance name
 * (two web applications with the same filter name), this one registers as {@code <instance>-2},
 * {@code -3}, ... and says so in the log.
 *
 * <p>The filter creates one at init, {@link #register registers} it, records every decision with
 * {@link #recordDecision}, and {@link #unregister unregisters} it on destroy so that nothing keeps the
 * web application's class loader. The failover limiter records Redis failures, fallbacks, refusals and
 * the breaker's state. Recording is allocation-free ({@link LongAdder}s; one hash lookup per rule) and
 * works whether or not the beans are registered.
 *
 * <p>The same counters back Sluice's Micrometer meters, when Micrometer is present
 * ({@link Micrometer#bind}): the meters read these adders, so there is one count of each thing, and
 * the only recording Micrometer adds is the latency timer's, in {@link #recordDecision}. Without
 * Micrometer that is one volatile read of a null.
 */
public final class SluiceMetrics {

    public static final String DOMAIN = "dev.sluice";

    private static final Logger LOG = LoggerFactory.getLogger(SluiceMetrics.class);
    private static final long LATENCY_WINDOW_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final int MAX_NAME_SUFFIX = 100;
    /** The name of an instance nobody named (a programmatic {@code Sluice}), in logs and meters. */
    public static final String DEFAULT_NAME = "sluice";

    private final MBeanServer server;
    private final String name;

    final LongAdder allowed = new LongAdder();
    final LongAdder denied = new LongAdder();
    final LongAdder dryRunDenied = new LongAdder();
    final LongAdder fallback = new LongAdder();
    final LongAdder refused = new LongAdder();
    final LongAdder redisErrors = new LongAdder();
    final LongAdder redisTimeouts = new LongAdder();
    final LongAdder breakerOpenings = new LongAdder();
    final LongAdder decisions = new LongAdder();
    final LongAdder byRedis = new LongAdder();
    final LongAdder byCache = new LongAdder();
    final LongAdder byBackstop = new LongAdder();
    final LongAdder byApproximate = new LongAdder();
    final LongAdder nonIpPeers = new LongAdder();
    final LongAdder heldRefused = new LongAdder();
    final LongAdder reloads = new LongAdder();
    final LongAdder reloadFailures = new LongAdder();
    private volatile String lastReloadOutcome = "none";
    private volatile long lastReloadAt;
    private volatile IntSupplier deniedCacheSize = () -> 0;
    private volatile IntSupplier slotsHeld = () -> 0;
    private volatile LongSupplier leasesLost = () -> 0;
    private volatile LongSupplier slotsReleasedLate = () -> 0;
    private volatile Operations operations = Operations.NONE;
    private final InstanceView view = new InstanceView();
    final LatencyHistogram latency = new LatencyHistogram(LATENCY_WINDOW_NANOS);
    private volatile String breakerState = "NONE";
    /** Each Redis node's breaker state by node, from the failover limiter; null without one (backend=local). */
    private volatile Supplier<Map<String, String>> breakers;

    private volatile Map<String, RuleCounters> rules = Map.of();
    private final List<ObjectName> registered = new ArrayList<>(); // guarded by this
    private volatile String instanceName;
    /** Micrometer's meters over these counters, or null (no Micrometer, metrics.micrometer=false, unregistered). */
    private volatile MeterBinding meters;

    /** Metrics for the platform MBean server, of an instance named {@value #DEFAULT_NAME}. */
    public SluiceMetrics() {
        this(DEFAULT_NAME);
    }

    /**
     * Metrics for the platform MBean server.
     *
     * @param name the instance's name until it is {@link #register registered}: what its log lines say
     */
    public SluiceMetrics(String name) {
        this.server = ManagementFactory.getPlatformMBeanServer();
        this.name = name;
    }

    /** {@code dev.sluice:type=RateLimiter,name=<instance>}. */
    public static ObjectName instanceObjectName(String instance) {
        return objectName("type=RateLimiter,name=" + quoteIfNeeded(instance));
    }

    /** {@code dev.sluice:type=Rule,name=<instance>,rule=<rule>}. */
    public static ObjectName ruleObjectName(String instance, String rule) {
        return objectName("type=Rule,name=" + quoteIfNeeded(instance) + ",rule=" + quoteIfNeeded(rule));
    }

    /**
     * Registers the instance's and its rules' MXBeans.
     *
     * @return the instance name used: {@code instanceName}, or with a suffix if it was taken
     * @throws IllegalStateException if already registered, or if JMX refuses the beans
     */
    public synchronized String register(String instanceName, List<Rule> ruleList) {
        if (!registered.isEmpty()) {
            throw new IllegalStateException("Sluice metrics already registered as " + this.instanceName);
        }
        updateRules(ruleList);
        for (int attempt = 1; attempt <= MAX_NAME_SUFFIX; attempt++) {
            String name = attempt == 1 ? instanceName : instanceName + "-" + attempt;
            if (tryRegister(name)) {
                if (attempt > 1) {
                    // not a warning: two versions of one application (Tomcat's parallel deployment),
                    // two hosts or two embedded servers in one JVM are good deployments
                    LOG.info("Sluice [{}]: JMX name '{}' is used by another Sluice in this JVM; registered as {}",
                            name, instanceName, instanceObjectName(name));
                }
                MeterBinding m = meters;
                if (m != null) m.rename(name); // the meters' instance tag is the JMX name
                return name;
            }
        }
        throw new IllegalStateException("Sluice metrics: no free JMX name for instance '" + instanceName + "'");
    }

    private boolean tryRegister(String name) {
        try {
            server.registerMBean(view, instanceObjectName(name));
            registered.add(instanceObjectName(name));
            for (Map.Entry<String, RuleCounters> rule : rules.entrySet()) {
                ObjectName on = ruleObjectName(name, rule.getKey());
                server.registerMBean(rule.getValue(), on);
                registered.add(on);
            }
        } catch (InstanceAlreadyExistsException taken) {
            unregisterBeans();
            return false;
        } catch (JMException e) {
            unregisterBeans();
            throw new IllegalStateException("Sluice metrics: JMX registration of '" + name + "' failed", e);
        }
        this.instanceName = name;
        return true;
    }

    /**
     * The rules counted: at start, and again after a reload. A rule kept (by name) keeps its counts and
     * shows its new figures; a new rule gets fresh counters; a dropped rule's counters go. The MXBeans
     * (when registered) and the Micrometer meters follow.
     */
    public synchronized void updateRules(List<Rule> ruleList) {
        Map<String, RuleCounters> old = rules;
        Map<String, RuleCounters> next = new LinkedHashMap<>();
        for (Rule r : ruleList) {
            RuleCounters c = old.get(r.name());
            if (c == null) {
                c = new RuleCounters(this, r);
            } else {
                c.rule(r);
            }
            next.put(r.name(), c);
        }
        if (!registered.isEmpty()) {
            for (String gone : old.keySet()) {
                if (!next.containsKey(gone)) unregisterBean(ruleObjectName(instanceName, gone));
            }
            for (Map.Entry<String, RuleCounters> rule : next.entrySet()) {
                if (!old.containsKey(rule.getKey())) registerBean(rule.getValue(), ruleObjectName(instanceName, rule.getKey()));
            }
        }
        rules = Collections.unmodifiableMap(next);
        MeterBinding m = meters;
        if (m != null) m.rulesChanged();
    }

    private void registerBean(Object bean, ObjectName on) {
        try {
            server.registerMBean(bean, on);
            registered.add(on);
        } catch (JMException e) {
            LOG.warn("Sluice [{}]: could not register {}: {}", name(), on, e.toString());
        }
    }

    private void unregisterBean(ObjectName on) {
        registered.remove(on);
        try {
            server.unregisterMBean(on);
        } catch (InstanceNotFoundException gone) {
            // someone else removed it: nothing to do
        } catch (JMException e) {
            LOG.debug("Sluice [{}]: could not unregister {}", name(), on, e);
        }
    }

    /**
     * Unregisters every bean this object registered and removes its Micrometer meters (a registry
     * shared by the server must not keep them, nor through them the web application's class loader);
     * counting goes on. Safe to call twice.
     */
    public synchronized void unregister() {
        unregisterBeans();
        MeterBinding m = meters;
        meters = null;
        if (m != null) m.close();
    }

    private void unregisterBeans() {
        for (ObjectName on : List.copyOf(registered)) unregisterBean(on);
        registered.clear();
    }

    /** Micrometer's meters over these counters, from {@link Micrometer#bind}; replaces (and closes) earlier ones. */
    synchronized void meters(MeterBinding binding) {
        MeterBinding old = meters;
        meters = binding;
        if (old != null) old.close();
    }

    /** The counters of each rule, by rule name, in configuration order. */
    Map<String, RuleCounters> ruleCounters() {
        return rules;
    }

    /** A read-only view of these figures (what the instance's MXBean shows), whether registered or not. */
    public RateLimiterMXBean view() {
        return view;
    }

    /** The instance name registered, or null before {@link #register}. */
    public String instanceName() {
        return instanceName;
    }

    /**
     * The instance's name as its log lines and threads carry it, so that two applications on one
     * server can be told apart: the name registered ({@code shop/sluice}, as JMX shows it), or before
     * that the name it was created with.
     */
    public String name() {
        String registeredAs = instanceName;
        return registeredAs != null ? registeredAs : name;
    }

    /**
     * Records one decision of the filter (or any caller of the limiter).
     *
     * @param decision the decision
     * @param nanos    how long deciding took
     */
    public void recordDecision(Decision decision, long nanos) {
        decisions.increment();
        latency.record(nanos);
        boolean ok = decision.allowed();
        boolean unavailable = false;
        boolean shadowDenied = false;
        Map<String, RuleCounters> byName = rules;
        List<RuleDecision> list = decision.rules();
        if (!list.isEmpty()) {
            RuleDecision.Source source = list.get(0).source(); // one source answers a whole request
            switch (source) {
                case REDIS -> byRedis.increment();
                case CACHE -> byCache.increment();
                case BACKSTOP -> byBackstop.increment();
                case APPROXIMATE -> byApproximate.increment();
                default -> { }
            }
            MeterBinding m = meters;
            if (m != null) m.recordLatency(source, nanos);
        }
        for (int i = 0, n = list.size(); i < n; i++) { // indexed: an iterator would be an allocation per request
            RuleDecision r = list.get(i);
            boolean shadow = r.rule().dryRun();
            if (!r.allowed() && shadow) shadowDenied = true;
            if (r.source() == RuleDecision.Source.UNAVAILABLE) {
                unavailable |= !r.allowed() && !shadow; // the request is counted as a refusal by the failover limiter
            }
            RuleCounters c = byName.get(r.rule().name());
            if (c != null) c.record(r, ok);
        }
        if (ok) {
            (shadowDenied ? dryRunDenied : allowed).increment();
        } else if (!unavailable) {
            denied.increment();
        }
    }

    /** A reload of the configuration: {@code outcome} says what changed, or which key was refused and why. */
    public void recordReload(boolean applied, String outcome) {
        (applied ? reloads : reloadFailures).increment();
        lastReloadOutcome = outcome;
        lastReloadAt = System.currentTimeMillis();
    }

    /** A Redis call failed; {@code timeout} when it was too slow rather than refused or broken. */
    public void recordRedisFailure(boolean timeout) {
        (timeout ? redisTimeouts : redisErrors).increment();
    }

    /**
     * The local backstop decided this request because Redis could not answer. Each rule's part is
     * counted with the decision ({@link #recordDecision}: its source says the backstop decided).
     */
    public void recordFallback() {
        fallback.increment();
    }

    /**
     * This request was refused because Redis could not answer and some of its rules fail closed. Each
     * rule's part is counted with the decision ({@link #recordDecision}: its source says unavailable).
     */
    public void recordRefusal() {
        refused.increment();
    }

    /**
     * A request from an {@code exempt-ips} client that {@code rule} would have applied to: let through
     * unlimited, counted as the rule's {@code exempt} outcome.
     */
    public void recordExempt(Rule rule) {
        RuleCounters c = rules.get(rule.name());
        if (c != null) c.exempt.increment();
    }

    /** A node's circuit breaker changed state ({@code CLOSED}, {@code OPEN}, {@code HALF_OPEN}). */
    public void recordBreakerState(String from, String to) {
        if ("CLOSED".equals(from) && "OPEN".equals(to)) breakerOpenings.increment();
    }

    /** Where each Redis node's breaker state comes from: node ({@code host:port}) to state name. */
    public void breakers(Supplier<Map<String, String>> states) {
        this.breakers = states;
        breakersChanged();
    }

    /** A node came into the topology or left it: the meters follow. */
    public void breakersChanged() {
        MeterBinding m = meters;
        if (m != null) m.breakersChanged();
    }

    /** Each Redis node's breaker state, by node; empty with backend=local. */
    Map<String, String> breakerStates() {
        Supplier<Map<String, String>> b = breakers;
        return b == null ? Map.of() : b.get();
    }

    /** The worst breaker state over the nodes ({@code OPEN}, then {@code HALF_OPEN}, then {@code CLOSED}); {@code NONE} without Redis. */
    String breakerState() {
        Supplier<Map<String, String>> b = breakers;
        if (b == null) return breakerState;
        String worst = "CLOSED";
        for (String s : b.get().values()) {
            if (s.equals("OPEN")) return s;
            if (s.equals("HALF_OPEN")) worst = s;
        }
        return worst;
    }

    /** A request's peer was not an IP address (e.g. a Unix-socket connector): its {@code ip} rules did not apply. */
    public void recordNonIpPeer() {
        nonIpPeers.increment();
    }

    /**
     * A request a leaky-bucket rule admitted with a delay was refused because {@code max-held-requests}
     * requests were held already.
     */
    public void recordHeldRefused() {
        heldRefused.increment();
    }

    /** The concurrency slots held now by this instance's requests, and how many leases ended before they were renewed. */
    public void leases(IntSupplier held, LongSupplier lost) {
        this.slotsHeld = held;
        this.leasesLost = lost;
    }

    int slotsHeld() {
        return slotsHeld.getAsInt();
    }

    long leasesLost() {
        return leasesLost.getAsLong();
    }

    /** How many concurrency slots were released late: Redis answered their release only when it was sent again. */
    public void slotsReleasedLate(LongSupplier released) {
        this.slotsReleasedLate = released;
    }

    long slotsReleasedLate() {
        return slotsReleasedLate.getAsLong();
    }

    /** How many denials the denied-client cache holds now. */
    public void deniedCache(IntSupplier size) {
        this.deniedCacheSize = size;
    }

    /** What the MXBean's operations do. */
    public interface Operations {
        /** Forgets every remembered denial; returns how many there were. */
        int clearDeniedCache();

        /** Resets one client of one rule; returns what was done, for the operator. */
        String resetClient(String rule, String clientKey);

        /** Reads the configuration file again now; returns the outcome. */
        default String reload() {
            return "nothing to reload: this limiter was not configured from a file";
        }

        Operations NONE = new Operations() {
            @Override
            public int clearDeniedCache() {
                return 0;
            }

            @Override
            public String resetClient(String rule, String clientKey) {
                return "nothing to reset";
            }
        };
    }

    /** Connects the MXBean's operations to the limiter. */
    public void operations(Operations ops) {
        this.operations = java.util.Objects.requireNonNull(ops, "ops");
    }

    /** The breaker's initial state, set by the failover limiter that owns it. */
    public void breakerState(String state) {
        breakerState = state;
    }

    /** The state of {@code node}'s breaker as a gauge's number (-1: the node has left the topology). */
    int breakerStateCode(String node) {
        return stateCode(breakerStates().getOrDefault(node, "NONE"));
    }

    private static int stateCode(String state) {
        return switch (state) {
            case "CLOSED" -> 0;
            case "HALF_OPEN" -> 1;
            case "OPEN" -> 2;
            default -> -1;
        };
    }

    int deniedCacheSize() {
        return deniedCacheSize.getAsInt();
    }

    private static ObjectName objectName(String properties) {
        try {
            return new ObjectName(DOMAIN + ":" + properties);
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException("not a valid JMX name: " + properties, e);
        }
    }

    private static String quoteIfNeeded(String value) {
        if (value.isEmpty() || !value.strip().equals(value)) return ObjectName.quote(value);
        for (int i = 0; i < value.length(); i++) {
            switch (value.charAt(i)) {
                case ',', '=', ':', '"', '*', '?', '\n', '\\' -> {
                    return ObjectName.quote(value);
                }
                default -> { }
            }
        }
        return value;
    }

    /** The instance's MXBean: a read-only view of the counters above. */
    private final class InstanceView implements RateLimiterMXBean {
        @Override public String getInstanceName() { return instanceName; }
        @Override public long getAllowed() { return allowed.sum(); }
        @Override public long getDenied() { return denied.sum(); }
        @Override public long getDryRunDenied() { return dryRunDenied.sum(); }
        @Override public long getFallbackDecisions() { return fallback.sum(); }
        @Override public long getClosedRuleRefusals() { return refused.sum(); }
        @Override public long getRedisErrors() { return redisErrors.sum(); }
        @Override public long getRedisTimeouts() { return redisTimeouts.sum(); }
        @Override public String getBreakerState() { return breakerState(); }
        @Override public Map<String, String> getBreakerStates() { return breakerStates(); }
        @Override public long getBreakerOpenings() { return breakerOpenings.sum(); }
        @Override public long getDecisions() { return decisions.sum(); }
        @Override public long getRedisDecisions() { return byRedis.sum(); }
        @Override public long getDeniedCacheHits() { return byCache.sum(); }
        @Override public long getApproximateDecisions() { return byApproximate.sum(); }
        @Override public int getDeniedCacheSize() { return deniedCacheSize.getAsInt(); }
        @Override public long getNonIpPeers() { return nonIpPeers.sum(); }
        @Override public long getHeldRefused() { return heldRefused.sum(); }
        @Override public int getSlotsHeld() { return slotsHeld(); }
        @Override public long getLeasesLost() { return leasesLost(); }
        @Override public long getSlotsReleasedLate() { return slotsReleasedLate(); }
        @Override public int clearDeniedCache() { return operations.clearDeniedCache(); }
        @Override public String resetClient(String rule, String clientKey) { return operations.resetClient(rule, clientKey); }
        @Override public String reload() { return operations.reload(); }
        @Override public long getReloads() { return reloads.sum(); }
        @Override public long getReloadFailures() { return reloadFailures.sum(); }
        @Override public String getLastReloadOutcome() { return lastReloadOutcome; }
        @Override public long getLastReloadTime() { return lastReloadAt; }
        @Override public double getLatencyMeanMillis() { return latency.snapshot().meanMillis(); }
        @Override public double getLatencyMaxMillis() { return latency.snapshot().maxMillis(); }
        @Override public double getLatencyP99Millis() { return latency.snapshot().percentileMillis(0.99); }
        @Override public long getLatencyWindowCount() { return latency.snapshot().count(); }
    }
}
