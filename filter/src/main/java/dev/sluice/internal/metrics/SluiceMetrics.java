package dev.sluice.internal.metrics;

import dev.sluice.Sluice;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

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
 */
public final class SluiceMetrics {

    public static final String DOMAIN = "dev.sluice";

    private static final Logger LOG = LoggerFactory.getLogger(SluiceMetrics.class);
    private static final long LATENCY_WINDOW_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final int MAX_NAME_SUFFIX = 100;

    private final MBeanServer server;

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
    final LongAdder nonIpPeers = new LongAdder();
    private volatile java.util.function.IntSupplier deniedCacheSize = () -> 0;
    private volatile Operations operations = Operations.NONE;
    private final InstanceView view = new InstanceView();
    final LatencyHistogram latency = new LatencyHistogram(LATENCY_WINDOW_NANOS);
    private volatile String breakerState = "NONE";

    private volatile Map<String, RuleCounters> rules = Map.of();
    private final List<ObjectName> registered = new ArrayList<>(); // guarded by this
    private volatile String instanceName;

    /** Metrics for the platform MBean server. */
    public SluiceMetrics() {
        this(ManagementFactory.getPlatformMBeanServer());
    }

    public SluiceMetrics(MBeanServer server) {
        this.server = server;
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
        for (int attempt = 1; attempt <= MAX_NAME_SUFFIX; attempt++) {
            String name = attempt == 1 ? instanceName : instanceName + "-" + attempt;
            if (tryRegister(name, ruleList)) {
                if (attempt > 1) {
                    LOG.warn("Sluice: JMX name '{}' is used by another Sluice in this JVM; registered as {}",
                            instanceName, instanceObjectName(name));
                }
                return name;
            }
        }
        throw new IllegalStateException("Sluice metrics: no free JMX name for instance '" + instanceName + "'");
    }

    private boolean tryRegister(String name, List<Rule> ruleList) {
        Map<String, RuleCounters> counters = new HashMap<>();
        for (Rule r : ruleList) counters.put(r.name(), new RuleCounters(name, r));
        try {
            server.registerMBean(view, instanceObjectName(name));
            registered.add(instanceObjectName(name));
            for (Rule r : ruleList) {
                ObjectName on = ruleObjectName(name, r.name());
                server.registerMBean(counters.get(r.name()), on);
                registered.add(on);
            }
        } catch (InstanceAlreadyExistsException taken) {
            unregister();
            return false;
        } catch (JMException e) {
            unregister();
            throw new IllegalStateException("Sluice metrics: JMX registration of '" + name + "' failed", e);
        }
        this.instanceName = name;
        this.rules = Map.copyOf(counters);
        return true;
    }

    /** Unregisters every bean this object registered; counting goes on. Safe to call twice. */
    public synchronized void unregister() {
        for (ObjectName on : registered) {
            try {
                server.unregisterMBean(on);
            } catch (InstanceNotFoundException gone) {
                // someone else removed it: nothing to do
            } catch (JMException e) {
                LOG.debug("Sluice metrics: could not unregister {}", on, e);
            }
        }
        registered.clear();
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
     * Records one decision of the filter (or any caller of the limiter).
     *
     * @param decision the decision
     * @param nanos    how long deciding took
     * @param dryRun   whether a denial was let through ({@code mode=dry-run})
     */
    public void recordDecision(Decision decision, long nanos, boolean dryRun) {
        decisions.increment();
        latency.record(nanos);
        boolean ok = decision.allowed();
        boolean unavailable = false;
        Map<String, RuleCounters> byName = rules;
        List<RuleDecision> list = decision.rules();
        if (!list.isEmpty()) {
            switch (list.get(0).source()) {
                case REDIS -> byRedis.increment();
                case CACHE -> byCache.increment();
                case BACKSTOP -> byBackstop.increment();
                default -> { }
            }
        }
        for (int i = 0, n = list.size(); i < n; i++) { // indexed: an iterator would be an allocation per request
            RuleDecision r = list.get(i);
            if (r.source() == RuleDecision.Source.UNAVAILABLE) {
                unavailable = true; // counted as a refusal by the failover limiter
                continue;
            }
            RuleCounters c = byName.get(r.rule().name());
            if (c == null) continue;
            if (ok) c.allowed.increment();
            else if (!r.allowed()) (dryRun ? c.dryRunDenied : c.denied).increment();
        }
        if (ok) {
            allowed.increment();
        } else if (!unavailable) {
            (dryRun ? dryRunDenied : denied).increment();
        }
    }

    /** A Redis call failed; {@code timeout} when it was too slow rather than refused or broken. */
    public void recordRedisFailure(boolean timeout) {
        (timeout ? redisTimeouts : redisErrors).increment();
    }

    /** The local backstop decided this request because Redis could not answer. */
    public void recordFallback(Decision local) {
        fallback.increment();
        Map<String, RuleCounters> byName = rules;
        List<RuleDecision> list = local.rules();
        for (int i = 0, n = list.size(); i < n; i++) {
            RuleCounters c = byName.get(list.get(i).rule().name());
            if (c != null) c.fallback.increment();
        }
    }

    /** This request was refused because Redis could not answer and some of its rules fail closed. */
    public void recordRefusal(Decision refusal) {
        refused.increment();
        Map<String, RuleCounters> byName = rules;
        List<RuleDecision> list = refusal.rules();
        for (int i = 0, n = list.size(); i < n; i++) {
            RuleDecision r = list.get(i);
            if (r.allowed()) continue; // an open rule of the same request: not evaluated
            RuleCounters c = byName.get(r.rule().name());
            if (c != null) c.refused.increment();
        }
    }

    /** The circuit breaker changed state ({@code CLOSED}, {@code OPEN}, {@code HALF_OPEN}). */
    public void recordBreakerState(String from, String to) {
        breakerState = to;
        if ("CLOSED".equals(from) && "OPEN".equals(to)) breakerOpenings.increment();
    }

    /** A request's peer was not an IP address (e.g. a Unix-socket connector): its {@code ip} rules did not apply. */
    public void recordNonIpPeer() {
        nonIpPeers.increment();
    }

    /** How many denials the denied-client cache holds now. */
    public void deniedCache(java.util.function.IntSupplier size) {
        this.deniedCacheSize = size;
    }

    /** What the MXBean's operations do. */
    public interface Operations {
        /** Forgets every remembered denial; returns how many there were. */
        int clearDeniedCache();

        /** Resets one client of one rule; returns what was done, for the operator. */
        String resetClient(String rule, String clientKey);

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
        @Override public String getBreakerState() { return breakerState; }
        @Override public long getBreakerOpenings() { return breakerOpenings.sum(); }
        @Override public long getDecisions() { return decisions.sum(); }
        @Override public long getRedisDecisions() { return byRedis.sum(); }
        @Override public long getDeniedCacheHits() { return byCache.sum(); }
        @Override public int getDeniedCacheSize() { return deniedCacheSize.getAsInt(); }
        @Override public long getNonIpPeers() { return nonIpPeers.sum(); }
        @Override public int clearDeniedCache() { return operations.clearDeniedCache(); }
        @Override public String resetClient(String rule, String clientKey) { return operations.resetClient(rule, clientKey); }
        @Override public double getLatencyMeanMillis() { return latency.snapshot().meanMillis(); }
        @Override public double getLatencyMaxMillis() { return latency.snapshot().maxMillis(); }
        @Override public double getLatencyP99Millis() { return latency.snapshot().percentileMillis(0.99); }
        @Override public long getLatencyWindowCount() { return latency.snapshot().count(); }
    }
}
