package dev.sluice.internal.failover;

import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RenewalIncomplete;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.internal.metrics.SluiceMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The Redis engine with the failure policy around it: what Sluice does when Redis cannot answer.
 *
 * <p>Every decision goes to Redis while it answers. When a call fails ({@link LimiterUnavailableException}:
 * down, slower than {@code redis.timeout}, no pooled connection in {@code redis.pool.max-wait}), or
 * while the {@link CircuitBreaker} of its node is open (then Redis is not called at all and nothing
 * waits), the request is decided by the failure policy of its rules:
 * <ul>
 *   <li>if every rule is {@code open}, the local engine decides all of them at their
 *       {@code fallback-limit} per instance ({@link dev.sluice.limiter.Rule#asFallback()}), source
 *       {@code BACKSTOP};</li>
 *   <li>if any rule is {@code closed}, the request is refused: each closed rule answers
 *       {@code allowed=false}, source {@code UNAVAILABLE}, {@code retryAfterMs} = the time until the
 *       breaker's next probe, at least one second. The request's open rules are not evaluated and
 *       take nothing: they answer {@code allowed=true}, source {@code UNAVAILABLE}, all figures 0.</li>
 * </ul>
 * The local engine counts only decisions made while Redis is away, and nothing it counted is ever
 * written to Redis: during an outage a client gets at most {@code fallback-limit} per window from each
 * instance. As soon as the breaker's probe succeeds (within {@code redis.breaker.open-max} of Redis
 * answering again), decisions are Redis's again.
 *
 * <p><b>A breaker per node</b> ({@link Nodes}): the server; the master the Sentinels name now (a
 * failover brings a new node, with a closed breaker); on Cluster, each master of the slot map, so
 * that a hung or dead master stops only the calls for its own slots while the clients of the other
 * masters stay decided by Redis, and the master a replica's promotion makes gets a breaker of its
 * own. The breakers of nodes that left the topology are dropped when a new node is first seen.
 *
 * <p><b>A request whose rules live on several masters</b> (Cluster; its rules decided one call each):
 * the rules of masters whose breaker is open, or whose call failed, fall to their failure policy and
 * the others are decided by Redis. A {@code closed} rule among them refuses the request without any
 * Redis call. Otherwise Redis decides its rules first; if it denies, the other rules are not evaluated
 * and take nothing; if it admits, the backstop decides the rest, and if the backstop denies, what
 * Redis took is given back. So a denied request takes nothing, as long as that give-back reaches Redis.
 *
 * <p>Outages are logged once per state change of a node by {@link OutageLog}, never per request.
 *
 * <p>Closing this limiter closes both engines.
 */
public final class FailoverLimiter implements RateLimiter {

    private static final Logger LOG = LoggerFactory.getLogger(FailoverLimiter.class);

    /** Retry-After of a closed rule's refusal is never shorter than this. */
    static final long MIN_RETRY_AFTER_MS = 1000;

    private final RateLimiter redis;
    private final RateLimiter local;
    private final String name;
    private final Nodes nodes;
    private final SluiceConfig.BreakerSettings breakerSettings;
    private final Clock monotonic;
    private final Logger log;
    private final long logQuietMillis;
    private final SluiceMetrics metrics;
    private final ConcurrentHashMap<Object, Node> byNode = new ConcurrentHashMap<>();
    /** Each rule's backstop version, derived once rather than per request during an outage. */
    private final RuleCache<Rule> fallbackRules = new RuleCache<>(Rule::asFallback);
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    /** A failover limiter of one Redis node whose figures are kept but not exported; see the other constructor. */
    public FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name) {
        this(redis, local, breaker, name, new SluiceMetrics());
    }

    /** A failover limiter of one Redis node (one breaker); see the next constructor. */
    public FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                           SluiceMetrics metrics) {
        this(redis, local, breaker, name, metrics, Nodes.one(name));
    }

    /**
     * @param redis   the Redis engine; its failures are {@link LimiterUnavailableException}s
     * @param local   the local engine that backs up {@code open} rules
     * @param breaker the circuit breaker settings, for each node
     * @param name    names the Redis target in logs, e.g. {@code RedisSettings.describe()}; must hold no secret
     * @param metrics where Redis failures, fallbacks, refusals and the breakers' states are counted
     * @param nodes   which node decides an acquisition: a breaker each
     */
    public FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                           SluiceMetrics metrics, Nodes nodes) {
        this(redis, local, breaker, name, metrics, nodes, CircuitBreaker.MONOTONIC, LOG, OutageLog.DEFAULT_QUIET_MILLIS);
    }

    /** Told when Redis is lost and when it answers again (at most once per outage of a node each). */
    public interface Listener {
        /** The first failure of an outage: a Redis node did not answer a call. */
        default void redisLost() {
        }

        /** A Redis node answers again after an outage, or left the topology during one; it may have come back without its data. */
        default void redisRecovered() {
        }

        /**
         * Releases of concurrency slots Redis holds that were not sent, their node's circuit breaker being
         * open: for whoever can send them once it answers again (else their slots free when their leases end).
         */
        default void releasesNotSent(List<Settlement> releases) {
        }
    }

    FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                    SluiceMetrics metrics, Nodes nodes, Clock monotonic, Logger log, long logQuietMillis) {
        this.redis = redis;
        this.local = local;
        this.name = name;
        this.nodes = nodes;
        this.breakerSettings = breaker;
        this.monotonic = monotonic;
        this.log = log;
        this.logQuietMillis = logQuietMillis;
        this.metrics = metrics;
        new CircuitBreaker(breaker, monotonic, CircuitBreaker.Listener.NONE); // the settings are checked at once
        metrics.breakers(this::breakerStateNames);
    }

    FailoverLimiter(RateLimiter redis, RateLimiter local, SluiceConfig.BreakerSettings breaker, String name,
                    SluiceMetrics metrics, Clock monotonic, Logger log, long logQuietMillis) {
        this(redis, local, breaker, name, metrics, Nodes.one(name), monotonic, log, logQuietMillis);
    }

    /** One node's breaker and outage log. */
    private final class Node {
        final Object id;
        final String label;
        final CircuitBreaker breaker;
        final OutageLog outage;

        Node(Object id) {
            this.id = id;
            this.label = String.valueOf(id);
            this.outage = new OutageLog(log, metrics::name, nodes.several() ? name + ", node " + label : name, monotonic, logQuietMillis);
            this.breaker = new CircuitBreaker(breakerSettings, monotonic, this::changed);
        }

        private void changed(CircuitBreaker.State from, CircuitBreaker.State to, long openForMillis) {
            metrics.recordBreakerState(from.name(), to.name());
            if (to == CircuitBreaker.State.OPEN) {
                LOG.debug("Sluice [{}]: circuit breaker for Redis {} node {} {} -> OPEN: no calls for {} ms", metrics.name(), name, label, from,
                        openForMillis);
            } else {
                LOG.debug("Sluice [{}]: circuit breaker for Redis {} node {} {} -> {}", metrics.name(), name, label, from, to);
            }
        }
    }

    /** The node that decides {@code a}, its breaker made when the node is first seen. */
    private Node node(Acquisition a) {
        Object id = nodes.nodeOf(a);
        Node n = byNode.get(id);
        return n != null ? n : newNode(id);
    }

    private Node newNode(Object id) {
        boolean[] made = {false};
        Node n = byNode.computeIfAbsent(id, k -> {
            made[0] = true;
            return new Node(k);
        });
        if (made[0]) {
            Set<Object> now = nodes.current();
            if (now.contains(id)) {
                for (Node gone : byNode.values()) {
                    if (!now.contains(gone.id) && byNode.remove(gone.id, gone)) left(gone);
                }
            }
            metrics.breakersChanged();
        }
        return n;
    }

    /** A node left the topology (a failed-over master): if it was down, its outage ends with it. */
    private void left(Node gone) {
        if (gone.outage.down()) {
            LOG.info("Sluice [{}]: Redis {} node {} left the topology during its outage; its clients are decided by the node"
                    + " that took its place", metrics.name(), name, gone.label);
            for (Listener l : listeners) l.redisRecovered();
        }
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        if (n == 0) {
            return Decision.none();
        }
        Node node = node(acquisitions.get(0));
        if (n > 1 && nodes.several()) {
            for (int i = 1; i < n; i++) {
                if (node(acquisitions.get(i)) != node) return decideAcrossNodes(acquisitions);
            }
        }
        CircuitBreaker.Permit permit = node.breaker.acquire();
        if (permit.kind() != CircuitBreaker.Permit.Kind.REJECTED) {
            try {
                Decision d = redis.decide(acquisitions);
                succeeded(node, permit);
                return d;
            } catch (IllegalArgumentException callerError) {
                // the caller's mistake (e.g. one rule asked twice), not Redis's: no outage, and the caller must hear of
                // it (were this the probe, the breaker replaces it after one interval)
                throw callerError;
            } catch (RuntimeException e) {
                // a LimiterUnavailableException, or not the engine's documented failure (a bug, an unexpected
                // reply): still never fail the application's request because of its rate limiter
                failed(node, permit, e);
            }
        }
        return failurePolicy(acquisitions, List.of(node));
    }

    /**
     * Decides by the failure policy alone, as while Redis is away, without calling Redis: for the
     * approximate mode's rules, which learn that Redis is away from their sync rather than from a call.
     */
    public Decision decideWithoutRedis(List<Acquisition> acquisitions) {
        if (acquisitions.isEmpty()) return Decision.none();
        List<Node> of = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) of.add(node(a));
        return failurePolicy(acquisitions, of);
    }

    /** A request whose rules live on several nodes: see the class comment. */
    private Decision decideAcrossNodes(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        Node[] of = new Node[n];
        Map<Node, CircuitBreaker.Permit> permits = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            of[i] = node(acquisitions.get(i));
            permits.computeIfAbsent(of[i], x -> x.breaker.acquire());
        }
        while (true) {
            List<Integer> onRedis = new ArrayList<>(n);
            List<Integer> away = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                (permits.get(of[i]).kind() == CircuitBreaker.Permit.Kind.REJECTED ? away : onRedis).add(i);
            }
            List<Node> awayNodes = nodesAt(of, away);
            if (!away.isEmpty() && anyClosed(at(acquisitions, away))) {
                for (Node x : nodesAt(of, onRedis)) x.breaker.release(permits.get(x)); // a probe not sent: the next caller's
                return refuse(acquisitions, awayNodes);
            }
            if (onRedis.isEmpty()) {
                return failurePolicy(acquisitions, awayNodes);
            }
            List<Acquisition> part = at(acquisitions, onRedis);
            Decision byRedis;
            try {
                byRedis = redis.decide(part);
                for (Node x : nodesAt(of, onRedis)) succeeded(x, permits.get(x));
            } catch (IllegalArgumentException callerError) {
                throw callerError;
            } catch (PartialFailure e) {
                Node failedNode = of[onRedis.get(e.index())];
                for (Node x : nodesAt(of, onRedis.subList(0, e.index()))) {
                    if (x != failedNode) succeeded(x, permits.get(x));
                }
                failed(failedNode, permits.get(failedNode), e);
                permits.put(failedNode, CircuitBreaker.Permit.REJECTED);
                continue; // its rules fall to the failure policy; the others (given back) are decided again
            } catch (RuntimeException e) {
                // an engine that cannot say which node failed: each node of the call hears of it
                for (Node x : nodesAt(of, onRedis)) {
                    failed(x, permits.get(x), e);
                    permits.put(x, CircuitBreaker.Permit.REJECTED);
                }
                continue;
            }
            if (away.isEmpty()) {
                return byRedis;
            }
            List<Acquisition> awayPart = at(acquisitions, away);
            Decision fallback;
            if (!byRedis.allowed()) {
                fallback = notDecided(awayPart); // denied: the other rules take nothing
            } else {
                fallback = backstop(awayPart, awayNodes);
                if (!fallback.allowed()) {
                    settleWithRedis(Settlement.givingBack(part, byRedis.rules())); // the request is denied: what Redis took goes back
                }
            }
            List<RuleDecision> merged = new ArrayList<>(n);
            for (int i = 0, r = 0, f = 0; i < n; i++) {
                merged.add(r < onRedis.size() && onRedis.get(r) == i ? byRedis.rules().get(r++) : fallback.rules().get(f++));
            }
            return Decision.of(merged);
        }
    }

    /** {@code a} with the figures the backstop enforces ({@link Rule#asFallback()}). */
    private Acquisition fallback(Acquisition a) {
        return new Acquisition(fallbackRules.get(a.rule()), a.clientKey(), a.cost());
    }

    private static <T> List<T> at(List<T> items, List<Integer> indexes) {
        List<T> out = new ArrayList<>(indexes.size());
        for (int i : indexes) out.add(items.get(i));
        return out;
    }

    private static List<Node> nodesAt(Node[] of, List<Integer> indexes) {
        List<Node> out = new ArrayList<>(2);
        for (int i : indexes) {
            if (!out.contains(of[i])) out.add(of[i]);
        }
        return out;
    }

    private static Decision notDecided(List<Acquisition> acquisitions) {
        List<RuleDecision> out = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) out.add(new RuleDecision(a.rule(), true, 0, 0, 0, 0, RuleDecision.Source.UNAVAILABLE));
        return Decision.of(out);
    }

    /** Redis answered a call of {@code node} made under {@code permit}. */
    private void succeeded(Node node, CircuitBreaker.Permit permit) {
        node.breaker.onSuccess(permit);
        if (node.outage.down() && node.breaker.state() == CircuitBreaker.State.CLOSED && node.outage.recovered()) {
            for (Listener l : listeners) l.redisRecovered();
        }
    }

    /** A call of {@code node} made under {@code permit} failed: counted, told to its breaker, logged. */
    private void failed(Node node, CircuitBreaker.Permit permit, RuntimeException failure) {
        metrics.recordRedisFailure(failure instanceof LimiterUnavailableException u && u.isTimeout());
        node.breaker.onFailure(permit);
        if (node.outage.failed(failure)) {
            for (Listener l : listeners) l.redisLost();
        }
    }

    private Decision failurePolicy(List<Acquisition> acquisitions, List<Node> away) {
        if (anyClosed(acquisitions)) {
            return refuse(acquisitions, away);
        }
        return backstop(acquisitions, away);
    }

    /** The local backstop's decision of open rules whose nodes are away. */
    private Decision backstop(List<Acquisition> acquisitions, List<Node> away) {
        List<Acquisition> fallback = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) {
            fallback.add(fallback(a));
        }
        Decision d = asLocal(local.decide(fallback));
        metrics.recordFallback();
        for (Node x : away) x.outage.fellBack();
        return d;
    }

    private Decision refuse(List<Acquisition> acquisitions, List<Node> away) {
        long untilProbe = 0;
        for (Node x : away) untilProbe = Math.max(untilProbe, x.breaker.millisUntilProbe());
        long retryAfter = Math.max(MIN_RETRY_AFTER_MS, untilProbe);
        List<RuleDecision> out = new ArrayList<>(acquisitions.size());
        for (Acquisition a : acquisitions) {
            if (a.rule().failurePolicy() == FailurePolicy.CLOSED && !a.rule().dryRun()) {
                out.add(new RuleDecision(a.rule(), false, 0, retryAfter, retryAfter, 0, RuleDecision.Source.UNAVAILABLE));
            } else {
                out.add(new RuleDecision(a.rule(), true, 0, 0, 0, 0, RuleDecision.Source.UNAVAILABLE));
            }
        }
        Decision refusal = Decision.of(out);
        metrics.recordRefusal();
        for (Node x : away) x.outage.refused();
        return refusal;
    }

    /** Whether an enforcing rule fails closed (a shadow rule's refusal would refuse nothing). */
    private static boolean anyClosed(List<Acquisition> acquisitions) {
        for (Acquisition a : acquisitions) {
            if (a.rule().failurePolicy() == FailurePolicy.CLOSED && !a.rule().dryRun()) return true;
        }
        return false;
    }

    /** The local engine's decision marked as the backstop's. */
    private static Decision asLocal(Decision d) {
        for (RuleDecision r : d.rules()) {
            if (r.source() != RuleDecision.Source.BACKSTOP) {
                List<RuleDecision> out = new ArrayList<>(d.rules().size());
                for (RuleDecision x : d.rules()) out.add(x.withSource(RuleDecision.Source.BACKSTOP));
                return Decision.of(out);
            }
        }
        return d;
    }

    /**
     * The breakers' state, for metrics and tests: the worst of the nodes' ({@code OPEN} if one is open,
     * else {@code HALF_OPEN} if one probes, else {@code CLOSED}).
     */
    public CircuitBreaker.State breakerState() {
        CircuitBreaker.State worst = CircuitBreaker.State.CLOSED;
        for (Node x : byNode.values()) {
            CircuitBreaker.State s = x.breaker.state();
            if (s == CircuitBreaker.State.OPEN) return s;
            if (s == CircuitBreaker.State.HALF_OPEN) worst = s;
        }
        return worst;
    }

    /** Each node's breaker, by node ({@code host:port}), for the nodes of the topology now. */
    public Map<String, CircuitBreaker.State> breakerStates() {
        Set<Object> now = nodes.current();
        Map<String, CircuitBreaker.State> out = new TreeMap<>();
        for (Node x : byNode.values()) {
            if (now.isEmpty() || now.contains(x.id)) out.put(x.label, x.breaker.state());
        }
        return out;
    }

    private Map<String, String> breakerStateNames() {
        Map<String, String> out = new TreeMap<>();
        breakerStates().forEach((node, state) -> out.put(node, state.name()));
        return out;
    }

    /**
     * Whether Redis is answering: no node failing since its last success. False from the first failure
     * of a node's outage until a call of that node succeeds again with its breaker closed.
     */
    public boolean redisAvailable() {
        for (Node x : byNode.values()) {
            if (x.outage.down() || x.breaker.state() != CircuitBreaker.State.CLOSED) return false;
        }
        return true;
    }

    /** Adds a listener for outages; it is called on a request thread, so it must be quick. */
    public void addListener(Listener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Settles with whoever took: Redis for what Redis decided (not while the breaker of its node is open,
     * and a failure is only counted, not retried here: a give-back lost leaves the client as if the request
     * had counted, a charge lost as if it had cost what it took; a slot's release not sent goes to the
     * listeners ({@link Listener#releasesNotSent}), one that failed is sent again by the engine), the
     * backstop for what the backstop decided.
     */
    @Override
    public void settle(List<Settlement> settlements) {
        List<Settlement> toRedis = null;
        List<Settlement> toLocal = null;
        List<Settlement> notSent = null;
        for (int i = 0, n = settlements.size(); i < n; i++) {
            Settlement s = settlements.get(i);
            Acquisition a = s.acquisition();
            RuleDecision.Source source = s.taken().source();
            if (source == RuleDecision.Source.REDIS) {
                if (node(a).breaker.state() == CircuitBreaker.State.OPEN) { // half open: sent (idempotent, once)
                    if (a.rule().algorithm().isConcurrency()) {
                        if (notSent == null) notSent = new ArrayList<>(2);
                        notSent.add(s);
                    }
                    continue;
                }
                if (toRedis == null) toRedis = new ArrayList<>(n);
                toRedis.add(s);
            } else if (source == RuleDecision.Source.BACKSTOP) {
                if (toLocal == null) toLocal = new ArrayList<>(n);
                toLocal.add(new Settlement(fallback(a), s.taken(),
                        s.charge()));
            }
        }
        if (toLocal != null) local.settle(toLocal);
        if (toRedis != null) settleWithRedis(toRedis);
        if (notSent != null) {
            for (Listener l : listeners) l.releasesNotSent(notSent);
        }
    }

    private void settleWithRedis(List<Settlement> settlements) {
        try {
            redis.settle(settlements);
        } catch (RuntimeException lost) {
            metrics.recordRedisFailure(lost instanceof LimiterUnavailableException u && u.isTimeout());
            LOG.debug("Sluice [{}]: a settlement with Redis {} was lost: {}", metrics.name(), name, lost.getMessage());
        }
    }

    /**
     * Renews with whoever took, as {@link #settle}: the backstop's slots in the backstop; Redis's node by
     * node, each under a permit of its node's breaker as a decision is (a renewal may be the probe that
     * closes an open breaker, and a node that fails renewals opens it), so that a node away holds up
     * only its own slots' renewals.
     *
     * @throws RenewalIncomplete when some of Redis's slots could not be renewed (their node failed, or its
     *         breaker is open): what it reached was renewed; the caller tries the others again soon
     */
    @Override
    public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        int n = acquisitions.size();
        boolean[] held = new boolean[n];
        boolean[] reached = new boolean[n];
        Map<Node, List<Integer>> byNode = new LinkedHashMap<>();
        List<Integer> toLocal = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            RuleDecision.Source source = taken.get(i).source();
            if (source == RuleDecision.Source.REDIS) {
                byNode.computeIfAbsent(node(acquisitions.get(i)), x -> new ArrayList<>()).add(i);
            } else {
                reached[i] = true; // the backstop's, renewed below; another source holds no slot
                if (source == RuleDecision.Source.BACKSTOP) toLocal.add(i);
            }
        }
        if (!toLocal.isEmpty()) {
            List<Acquisition> local = new ArrayList<>(toLocal.size());
            for (int i : toLocal) local.add(fallback(acquisitions.get(i)));
            boolean[] kept = this.local.renew(local, at(taken, toLocal));
            for (int j = 0; j < kept.length; j++) held[toLocal.get(j)] = kept[j];
        }
        RuntimeException failure = null;
        for (Map.Entry<Node, List<Integer>> e : byNode.entrySet()) {
            Node node = e.getKey();
            List<Integer> slots = e.getValue();
            CircuitBreaker.Permit permit = node.breaker.acquire();
            if (permit.kind() == CircuitBreaker.Permit.Kind.REJECTED) continue;
            try {
                boolean[] kept = redis.renew(at(acquisitions, slots), at(taken, slots));
                succeeded(node, permit);
                for (int j = 0; j < kept.length; j++) {
                    held[slots.get(j)] = kept[j];
                    reached[slots.get(j)] = true;
                }
            } catch (RenewalIncomplete partly) {
                failed(node, permit, partly);
                failure = partly;
                boolean[] kept = partly.held();
                boolean[] got = partly.reached();
                for (int j = 0; j < kept.length; j++) {
                    held[slots.get(j)] = kept[j];
                    reached[slots.get(j)] = got[j];
                }
            } catch (RuntimeException lost) {
                failed(node, permit, lost);
                failure = lost;
            }
        }
        for (boolean r : reached) {
            if (!r) throw new RenewalIncomplete("Redis " + name + ": some leases not renewed", failure, held, reached);
        }
        return held;
    }

    /** Forgets one client's state of one rule in Redis (if it answers) and in the backstop. */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        try {
            local.reset(fallbackRules.get(rule), clientKey);
        } finally {
            redis.reset(rule, clientKey);
        }
    }

    @Override
    public void close() {
        try {
            redis.close();
        } finally {
            local.close();
        }
    }

    @Override
    public String toString() {
        return "FailoverLimiter{" + name + ", " + breakerStates() + '}';
    }
}
