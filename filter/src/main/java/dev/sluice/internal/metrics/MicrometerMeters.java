package dev.sluice.internal.metrics;

import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.RuleDecision.Source;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * Sluice's meters in a Micrometer registry; the only class of Sluice that refers to Micrometer, loaded
 * by {@link Micrometer#bind} once Micrometer is known to be present. Every counter and gauge reads the
 * counters the MXBeans read ({@code FunctionCounter}s over {@link SluiceMetrics}' and
 * {@link RuleCounters}' adders), so nothing is counted twice and the request path does no work for
 * them; the decision latency {@link Timer} is the one meter fed per request
 * ({@link #recordLatency}, from {@link SluiceMetrics#recordDecision}).
 *
 * <p>The meters (every one tagged {@code instance}, the JMX instance name):
 * <ul>
 *   <li>{@code sluice.decisions} {@code {rule, outcome}}: once per rule that applied to a request;
 *       outcome {@code allowed}, {@code denied}, {@code dry-run-denied}, {@code fallback-allowed},
 *       {@code fallback-denied}, {@code unavailable}, {@code exempt} (the rule's own verdict: a rule that
 *       admitted a request another rule denied counts {@code allowed});</li>
 *   <li>{@code sluice.decisions.near.limit} {@code {rule}}: admitted requests that left the rule at most
 *       20 % of its quota;</li>
 *   <li>{@code sluice.decision.latency} {@code {source}}: a timer, {@code source} who answered
 *       ({@code redis}, {@code cache}, {@code backstop}, {@code unavailable}, or {@code local});</li>
 *   <li>with {@code backend=redis}: {@code sluice.redis.errors} {@code {kind=timeout|error}},
 *       {@code sluice.breaker.state} {@code {node}} (a gauge per Redis node, {@code host:port}: 0 closed,
 *       1 half-open, 2 open; the gauges of nodes that left the topology are removed),
 *       {@code sluice.breaker.openings},
 *       and with the denied-client cache {@code sluice.denied.cache.hits}, {@code sluice.denied.cache.size};</li>
 *   <li>{@code sluice.reloads} {@code {result=success|failure}}, {@code sluice.non.ip.peers}.</li>
 * </ul>
 */
final class MicrometerMeters implements MeterBinding {

    private static final Logger LOG = LoggerFactory.getLogger(MicrometerMeters.class);
    /** Serializes the choice of a free instance name in a registry other Sluices of this loader may share. */
    private static final Object NAMING = new Object();
    private static final int MAX_NAME_SUFFIX = 100;

    private final MeterRegistry registry;
    private final SluiceMetrics metrics;
    private final Set<Source> sources;
    private final boolean redis;
    private final boolean cache;

    private volatile Timer[] timers = new Timer[Source.values().length];
    private final List<Meter> instanceMeters = new ArrayList<>();               // guarded by this
    private final Map<String, RuleMeters> ruleMeters = new LinkedHashMap<>();  // guarded by this
    private final Map<String, Meter> breakerGauges = new LinkedHashMap<>();     // guarded by this
    private String instance;                                                    // guarded by this
    private boolean closed;                                                     // guarded by this

    private record RuleMeters(RuleCounters counters, List<Meter> meters) { }

    private MicrometerMeters(MeterRegistry registry, SluiceMetrics metrics, SluiceConfig config) {
        this.registry = registry;
        this.metrics = metrics;
        this.redis = config.backend() == SluiceConfig.Backend.REDIS;
        this.cache = redis && config.deniedCache().enabled();
        this.sources = redis
                ? cache ? EnumSet.of(Source.REDIS, Source.CACHE, Source.BACKSTOP, Source.UNAVAILABLE, Source.APPROXIMATE)
                        : EnumSet.of(Source.REDIS, Source.BACKSTOP, Source.UNAVAILABLE, Source.APPROXIMATE)
                : EnumSet.of(Source.LOCAL);
    }

    /**
     * Registers the meters of {@code metrics} in {@code registry} (a {@link MeterRegistry}), or in
     * {@link Metrics#globalRegistry} when it is null, under the instance's {@link SluiceMetrics#name() name}
     * (its JMX name if it has one yet), with a suffix if another Sluice's meters have that name there.
     */
    static MeterBinding bind(Object registry, SluiceMetrics metrics, SluiceConfig config) {
        MeterRegistry target = registry == null ? Metrics.globalRegistry : (MeterRegistry) registry;
        MicrometerMeters meters = new MicrometerMeters(target, metrics, config);
        meters.register(metrics.name());
        return meters;
    }

    @Override
    public void recordLatency(Source source, long nanos) {
        Timer t = timers[source.ordinal()];
        if (t != null) t.record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public synchronized void rename(String newInstance) {
        if (closed || newInstance.equals(instance)) return;
        removeAll();
        register(newInstance);
    }

    @Override
    public synchronized void rulesChanged() {
        if (closed) return;
        Map<String, RuleCounters> now = metrics.ruleCounters();
        for (Iterator<Map.Entry<String, RuleMeters>> it = ruleMeters.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, RuleMeters> e = it.next();
            if (now.get(e.getKey()) != e.getValue().counters()) {
                e.getValue().meters().forEach(registry::remove);
                it.remove();
            }
        }
        now.forEach((rule, counters) -> ruleMeters.computeIfAbsent(rule, r -> ruleMeters(r, counters)));
    }

    @Override
    public synchronized void breakersChanged() {
        if (closed || !redis || instance == null) return;
        Set<String> now = metrics.breakerStates().keySet();
        for (Iterator<Map.Entry<String, Meter>> it = breakerGauges.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Meter> e = it.next();
            if (!now.contains(e.getKey())) {
                registry.remove(e.getValue());
                it.remove();
            }
        }
        for (String node : now) {
            breakerGauges.computeIfAbsent(node, n -> Gauge.builder("sluice.breaker.state", metrics,
                            m -> m.breakerStateCode(n)).tags(Tags.of("instance", instance, "node", n))
                    .description("A Redis node's circuit breaker: 0 closed (in use), 1 half-open (probing), 2 open")
                    .register(registry));
        }
    }

    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        removeAll();
    }

    private void removeAll() {
        timers = new Timer[Source.values().length];
        instanceMeters.forEach(registry::remove);
        instanceMeters.clear();
        ruleMeters.values().forEach(r -> r.meters().forEach(registry::remove));
        ruleMeters.clear();
        breakerGauges.values().forEach(registry::remove);
        breakerGauges.clear();
    }

    private synchronized void register(String wanted) {
        synchronized (NAMING) {
            instance = freeName(wanted);
            metrics.ruleCounters().forEach((rule, counters) -> ruleMeters.put(rule, ruleMeters(rule, counters)));
            registerInstanceMeters();
        }
        if (!instance.equals(wanted)) {
            LOG.info("Sluice [{}]: another Sluice's meters in the Micrometer registry have instance={}; these have"
                    + " instance={}", metrics.name(), wanted, instance);
        }
    }

    private RuleMeters ruleMeters(String rule, RuleCounters c) {
        Tags tags = Tags.of("instance", instance, "rule", rule);
        List<Meter> m = new ArrayList<>(8);
        m.add(decisions(tags, "allowed", c, x -> x.allowed.sum() + x.allowedOtherDenied.sum()));
        m.add(decisions(tags, "denied", c, x -> x.denied.sum()));
        m.add(decisions(tags, "dry-run-denied", c, x -> x.dryRunDenied.sum() + x.fallbackDryRunDenied.sum()));
        m.add(decisions(tags, "fallback-allowed", c, x -> x.fallbackAllowed.sum() + x.fallbackAllowedOtherDenied.sum()));
        m.add(decisions(tags, "fallback-denied", c, x -> x.fallbackDenied.sum()));
        m.add(decisions(tags, "unavailable", c, x -> x.refused.sum() + x.notDecided.sum()));
        m.add(decisions(tags, "exempt", c, x -> x.exempt.sum()));
        m.add(FunctionCounter.builder("sluice.decisions.near.limit", c, x -> x.nearLimit.sum()).tags(tags)
                .description("Admitted requests that left the rule at most 20% of its quota").register(registry));
        return new RuleMeters(c, m);
    }

    private FunctionCounter decisions(Tags tags, String outcome, RuleCounters c, ToDoubleFunction<RuleCounters> count) {
        return FunctionCounter.builder("sluice.decisions", c, count).tags(tags).tag("outcome", outcome)
                .description("Decisions of each rule that applied to a request, by outcome").register(registry);
    }

    private void registerInstanceMeters() {
        Tags tags = Tags.of("instance", instance);
        Timer[] byOrdinal = new Timer[Source.values().length];
        for (Source s : sources) {
            byOrdinal[s.ordinal()] = Timer.builder("sluice.decision.latency").tags(tags)
                    .tag("source", s.name().toLowerCase(Locale.ROOT))
                    .description("Time to decide a request, by who answered (source=redis: the Redis round trip)")
                    // the range of a percentile histogram, where the application turns one on
                    .minimumExpectedValue(Duration.ofNanos(10_000)).maximumExpectedValue(Duration.ofSeconds(1))
                    .register(registry);
            instanceMeters.add(byOrdinal[s.ordinal()]);
        }
        if (redis) {
            counter("sluice.redis.errors", tags.and("kind", "timeout"), m -> m.redisTimeouts.sum(),
                    "Redis calls that took longer than redis.timeout");
            counter("sluice.redis.errors", tags.and("kind", "error"), m -> m.redisErrors.sum(),
                    "Redis calls that failed other than by timing out");
            counter("sluice.breaker.openings", tags, m -> m.breakerOpenings.sum(), "Times the circuit breaker opened");
        }
        if (cache) {
            counter("sluice.denied.cache.hits", tags, m -> m.byCache.sum(),
                    "Requests denied from the denied-client cache, without a Redis call");
            instanceMeters.add(Gauge.builder("sluice.denied.cache.size", metrics, SluiceMetrics::deniedCacheSize)
                    .tags(tags).description("Denials the denied-client cache holds").register(registry));
        }
        counter("sluice.reloads", tags.and("result", "success"), m -> m.reloads.sum(), "Configuration reloads that took effect");
        counter("sluice.reloads", tags.and("result", "failure"), m -> m.reloadFailures.sum(),
                "Configuration reloads refused (the running configuration stayed)");
        counter("sluice.non.ip.peers", tags, m -> m.nonIpPeers.sum(),
                "Requests whose peer was not an IP address: their ip rules did not apply");
        counter("sluice.held.refused", tags, m -> m.heldRefused.sum(),
                "Requests refused because max-held-requests were held for their leaky-bucket slot already");
        instanceMeters.add(Gauge.builder("sluice.slots.held", metrics, SluiceMetrics::slotsHeld).tags(tags)
                .description("Concurrency slots held now by this instance's requests in flight").register(registry));
        counter("sluice.leases.lost", tags, SluiceMetrics::leasesLost,
                "Concurrency slots whose lease ended before this instance renewed it");
        counter("sluice.slots.released.late", tags, SluiceMetrics::slotsReleasedLate,
                "Concurrency slots released late: Redis answered their release only when it was sent again");
        timers = byOrdinal;
        breakersChanged();
    }

    private void counter(String name, Tags tags, ToDoubleFunction<SluiceMetrics> count, String description) {
        instanceMeters.add(FunctionCounter.builder(name, metrics, count).tags(tags).description(description).register(registry));
    }

    /** {@code wanted}, or with a suffix if another Sluice's meters in the registry already carry it. */
    private String freeName(String wanted) {
        for (int attempt = 1; attempt <= MAX_NAME_SUFFIX; attempt++) {
            String name = attempt == 1 ? wanted : wanted + "-" + attempt;
            if (!taken(name)) return name;
        }
        throw new IllegalStateException("Sluice meters: no free instance name for '" + wanted + "'");
    }

    private boolean taken(String name) {
        for (Meter m : registry.getMeters()) {
            Meter.Id id = m.getId();
            if (id.getName().startsWith("sluice.") && name.equals(id.getTag("instance"))) return true;
        }
        return false;
    }
}
