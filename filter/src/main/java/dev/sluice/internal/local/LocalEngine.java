package dev.sluice.internal.local;

import dev.sluice.internal.algorithm.KeyState;
import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.internal.algorithm.Verdict;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The in-process engine: the algorithms of {@code dev.sluice.internal.algorithm} over a bounded map of
 * client states. Used for {@code backend=local} and as the failover backstop while Redis is away.
 * Same semantics as the Redis engine, counted per instance.
 *
 * <p><b>Atomicity.</b> States live in lock-striped segments (a key's segment follows from its
 * hash). A request locks the segments of its rules' keys in ascending order, decides every rule,
 * and takes the cost from all of them only if all admit: a request denied by one rule takes
 * nothing from the others. A shadow rule ({@code dryRun}) does not block the others: when the
 * enforcing rules admit, every rule that admits takes its cost, and a shadow rule that denies takes
 * nothing. A single-rule request holds one segment lock for a few hundred
 * nanoseconds; there is no global lock.
 *
 * <p><b>Bounded memory.</b> A state expires when it is back to full (as its Redis key would) and
 * then counts as absent. Every second, all segments are swept of expired states, one segment at
 * a time by whichever request finds a sweep due, so no request does more than one segment's
 * work. At most {@code maxKeys} states are kept, so a flood of distinct keys costs a bounded heap:
 * a new client beyond that evicts, in its segment, the least recently used state of the rule that
 * holds the most states there (its own rule on a tie). So a flood of new clients on one rule
 * evicts that rule's own states once it holds the most, never those of a rule holding no more than
 * a segment's capacity divided by the number of rules with states in it: a client cannot flush its
 * own state of one rule (its login attempts) by minting keys on another (made-up API keys). An
 * evicted client that was not idle starts afresh, which admits it early: size {@code maxKeys}
 * above the number of clients active within one window. Only admitted requests create states.
 *
 * <p><b>Changed figures.</b> States are kept per rule name and client, as the Redis keys are: a
 * client that moves to another plan, or whose rule changes in a reload, keeps its state, read in the
 * new figures as each algorithm defines; a rule that changes algorithm starts its clients afresh.
 */
public final class LocalEngine implements RateLimiter {

    private static final long SWEEP_INTERVAL_MS = 1000;
    private static final int MAX_SEGMENTS = 64;
    private static final int MIN_KEYS_PER_SEGMENT = 64;

    private final Clock clock;
    private final int maxKeys;
    private final Segment[] segments;
    private final int segmentMask;
    private final RuleCache<RateAlgorithm> algorithms = new RuleCache<>(RateAlgorithm::of);
    private final long sweepStepMs;
    private final AtomicLong nextSweepAt = new AtomicLong(Long.MIN_VALUE);
    private final AtomicInteger sweepCursor = new AtomicInteger();

    /**
     * @param clock   where time comes from (a fake one in tests)
     * @param maxKeys the most client states kept at once, at least 1
     */
    public LocalEngine(Clock clock, int maxKeys) {
        if (maxKeys < 1) throw new IllegalArgumentException("maxKeys must be at least 1: " + maxKeys);
        this.clock = clock;
        this.maxKeys = maxKeys;
        int count = Math.min(MAX_SEGMENTS, Integer.highestOneBit(Math.max(1, maxKeys / MIN_KEYS_PER_SEGMENT)));
        this.segments = new Segment[count];
        int perSegment = maxKeys / count;
        for (int i = 0; i < count; i++) {
            // the first (maxKeys % count) segments take one more, so the capacities add up to maxKeys
            segments[i] = new Segment(perSegment + (i < maxKeys % count ? 1 : 0));
        }
        this.segmentMask = count - 1;
        this.sweepStepMs = Math.max(1, SWEEP_INTERVAL_MS / count);
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        if (n == 0) {
            return Decision.none();
        }
        long now = clock.millis();
        sweepIfDue(now);
        return n == 1 ? decideOne(acquisitions.get(0), now) : decideAll(acquisitions, now);
    }

    private Decision decideOne(Acquisition a, long now) {
        RateAlgorithm algorithm = algorithm(a.rule());
        String rule = a.rule().name();
        ClientKey client = a.clientKey();
        Segment segment = segments[segmentIndex(rule, client)];
        segment.lock.lock();
        try {
            KeyState stored = live(segment, rule, client, now);
            KeyState state = algorithm.stateOf(stored, now);
            Verdict verdict = algorithm.decide(state, now, a.cost());
            long token = 0;
            if (verdict.allowed()) {
                token = tokenFor(a.rule());
                algorithm.take(state, now, a.cost(), token);
                if (state != stored) segment.put(rule, client, state);
            }
            return Decision.of(List.of(verdict.decision(a.rule(), verdict.allowed(), RuleDecision.Source.LOCAL, token)));
        } finally {
            segment.lock.unlock();
        }
    }

    private Decision decideAll(List<Acquisition> acquisitions, long now) {
        int n = acquisitions.size();
        RateAlgorithm[] algorithms = new RateAlgorithm[n];
        String[] rules = new String[n];
        ClientKey[] clients = new ClientKey[n];
        int[] segmentOf = new int[n];
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            Acquisition a = acquisitions.get(i);
            algorithms[i] = algorithm(a.rule());
            rules[i] = a.rule().name();
            clients[i] = a.clientKey();
            for (int j = 0; j < i; j++) {
                if (rules[j].equals(rules[i]) && clients[j].equals(clients[i])) {
                    throw new IllegalArgumentException("rule " + a.rule().name() + " is asked twice for client " + a.clientKey());
                }
            }
            segmentOf[i] = segmentIndex(rules[i], clients[i]);
            order[i] = segmentOf[i];
        }
        Arrays.sort(order); // one lock order for everybody: no deadlock
        int[] held = new int[n];
        int locked = 0;
        try {
            for (int i = 0; i < n; i++) {
                if (i == 0 || order[i] != order[i - 1]) {
                    segments[order[i]].lock.lock();
                    held[locked++] = order[i];
                }
            }
            KeyState[] stored = new KeyState[n];
            KeyState[] states = new KeyState[n];
            Verdict[] verdicts = new Verdict[n];
            boolean admitted = true;
            for (int i = 0; i < n; i++) {
                stored[i] = live(segments[segmentOf[i]], rules[i], clients[i], now);
                states[i] = algorithms[i].stateOf(stored[i], now);
                verdicts[i] = algorithms[i].decide(states[i], now, acquisitions.get(i).cost());
                admitted &= verdicts[i].allowed() || acquisitions.get(i).rule().dryRun(); // a shadow rule refuses nothing
            }
            List<RuleDecision> decisions = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                boolean take = admitted && verdicts[i].allowed(); // a shadow rule that denies takes nothing
                long token = 0;
                if (take) {
                    token = tokenFor(acquisitions.get(i).rule());
                    algorithms[i].take(states[i], now, acquisitions.get(i).cost(), token);
                    if (states[i] != stored[i]) segments[segmentOf[i]].put(rules[i], clients[i], states[i]);
                }
                decisions.add(verdicts[i].decision(acquisitions.get(i).rule(), take, RuleDecision.Source.LOCAL, token));
            }
            return Decision.of(decisions);
        } finally {
            for (int i = locked - 1; i >= 0; i--) {
                segments[held[i]].lock.unlock();
            }
        }
    }

    /**
     * The state of {@code key} unless it has expired, which is then forgotten (as Redis forgets an
     * expired key: once gone, it is gone for a caller whose clock lags too). Under the segment's lock.
     */
    private static KeyState live(Segment segment, String rule, ClientKey client, long now) {
        KeyState stored = segment.get(rule, client);
        if (stored != null && stored.isExpired(now)) {
            segment.remove(rule, client);
            return null;
        }
        return stored;
    }

    /**
     * Settles, rule by rule: gives back what a decision took (each algorithm's {@link RateAlgorithm#giveBack}:
     * never more than leaves a client's state as if the request had not happened; a slot is released),
     * or charges more ({@link RateAlgorithm#charge}). A state that has expired since, or belongs to another
     * algorithm now, gets nothing back; a charge counts in it afresh.
     */
    @Override
    public void settle(List<Settlement> settlements) {
        long now = clock.millis();
        for (int i = 0, n = settlements.size(); i < n; i++) {
            Settlement s = settlements.get(i);
            Acquisition a = s.acquisition();
            RuleDecision t = s.taken();
            if (!s.charge() && !RateAlgorithm.givesBack(t.rule(), a.rule())) continue;
            // a give-back's figures are its take's, which identify it; a charge is taken with those in force
            RateAlgorithm algorithm = algorithm(s.charge() ? a.rule() : t.rule());
            String rule = a.rule().name();
            Segment segment = segments[segmentIndex(rule, a.clientKey())];
            segment.lock.lock();
            try {
                KeyState stored = live(segment, rule, a.clientKey(), now);
                if (s.charge()) {
                    KeyState state = algorithm.stateOf(stored, now);
                    algorithm.charge(state, now, a.cost());
                    if (state != stored) segment.put(rule, a.clientKey(), state);
                } else if (stored != null && algorithm.stateOf(stored, now) == stored) {
                    algorithm.giveBack(stored, now, a.cost(), t.take());
                }
            } finally {
                segment.lock.unlock();
            }
        }
    }

    /**
     * Renews the concurrency slots the decisions in {@code taken} took, for another lease from now
     * ({@link RateAlgorithm#renew}); a slot whose lease has ended is not brought back.
     *
     * @return for each, whether its slot was still held
     */
    @Override
    public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        long now = clock.millis();
        boolean[] held = new boolean[acquisitions.size()];
        for (int i = 0; i < held.length; i++) {
            RuleDecision t = taken.get(i);
            if (!t.taken()) continue;
            Acquisition a = acquisitions.get(i);
            RateAlgorithm algorithm = algorithm(a.rule());
            String rule = a.rule().name();
            Segment segment = segments[segmentIndex(rule, a.clientKey())];
            segment.lock.lock();
            try {
                KeyState stored = live(segment, rule, a.clientKey(), now);
                held[i] = stored != null && algorithm.stateOf(stored, now) == stored && algorithm.renew(stored, now, t.take());
            } finally {
                segment.lock.unlock();
            }
        }
        return held;
    }

    /** The token a take of {@code rule} is held under: a concurrency slot's own number, else none (0). */
    private static long tokenFor(Rule rule) {
        return rule.algorithm().isConcurrency() ? ThreadLocalRandom.current().nextLong() : 0;
    }

    /** Sweeps the next segment if its turn has come; called before the request takes any lock. */
    private void sweepIfDue(long now) {
        long next = nextSweepAt.get();
        // the second test recovers from a clock that jumped back
        if ((now >= next || next - now > SWEEP_INTERVAL_MS) && nextSweepAt.compareAndSet(next, now + sweepStepMs)) {
            Segment segment = segments[sweepCursor.getAndIncrement() & segmentMask];
            segment.lock.lock();
            try {
                segment.removeExpired(now);
            } finally {
                segment.lock.unlock();
            }
        }
    }

    private RateAlgorithm algorithm(Rule rule) {
        return algorithms.get(rule);
    }

    /** The segment of one client of one rule. */
    private int segmentIndex(String rule, ClientKey client) {
        int h = 31 * rule.hashCode() + client.hashCode();
        return (h ^ (h >>> 16)) & segmentMask;
    }

    /** Forgets the client's state of this rule. */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        Segment segment = segments[segmentIndex(rule.name(), clientKey)];
        segment.lock.lock();
        try {
            segment.remove(rule.name(), clientKey);
        } finally {
            segment.lock.unlock();
        }
    }

    /** How many client states are kept now (expired ones included until swept). */
    public int keyCount() {
        int total = 0;
        for (Segment s : segments) {
            s.lock.lock();
            try {
                total += s.size();
            } finally {
                s.lock.unlock();
            }
        }
        return total;
    }

    /** The most client states kept at once. */
    public int maxKeys() {
        return maxKeys;
    }

    /** Forgets every state. */
    @Override
    public void close() {
        for (Segment s : segments) {
            s.lock.lock();
            try {
                s.clear();
            } finally {
                s.lock.unlock();
            }
        }
    }

    /**
     * One lock stripe: each rule's states in an access-ordered map (the eldest is its least recently
     * used), at most {@code capacity} states in all. Under {@link #lock}. States are kept by the rule's
     * name and the client: a client keeps its state when its rule's figures change (another plan, a
     * reload), as its Redis key is the rule's name and the client's.
     */
    private static final class Segment {
        final ReentrantLock lock = new ReentrantLock();
        private final int capacity;
        private final Map<String, LinkedHashMap<ClientKey, KeyState>> byRule = new HashMap<>();
        private int size;

        Segment(int capacity) {
            this.capacity = capacity;
        }

        KeyState get(String rule, ClientKey client) {
            LinkedHashMap<ClientKey, KeyState> states = byRule.get(rule);
            return states == null ? null : states.get(client);
        }

        void put(String rule, ClientKey client, KeyState state) {
            LinkedHashMap<ClientKey, KeyState> states = byRule.computeIfAbsent(rule, r -> new LinkedHashMap<>(16, 0.75f, true));
            if (states.put(client, state) == null && ++size > capacity) evictFor(rule);
        }

        /**
         * Evicts the least recently used state of the rule holding the most states, {@code rule}'s own
         * on a tie; never the state {@code rule} has just put (its most recently used).
         */
        private void evictFor(String rule) {
            LinkedHashMap<ClientKey, KeyState> own = byRule.get(rule);
            LinkedHashMap<ClientKey, KeyState> victim = own.size() > 1 ? own : null;
            String victimRule = rule;
            for (Map.Entry<String, LinkedHashMap<ClientKey, KeyState>> e : byRule.entrySet()) {
                if (e.getValue() != own && (victim == null || e.getValue().size() > victim.size())) {
                    victim = e.getValue();
                    victimRule = e.getKey();
                }
            }
            Iterator<ClientKey> eldest = victim.keySet().iterator();
            eldest.next();
            eldest.remove();
            size--;
            if (victim.isEmpty()) byRule.remove(victimRule);
        }

        void remove(String rule, ClientKey client) {
            LinkedHashMap<ClientKey, KeyState> states = byRule.get(rule);
            if (states != null && states.remove(client) != null) {
                size--;
                if (states.isEmpty()) byRule.remove(rule);
            }
        }

        void removeExpired(long now) {
            for (Iterator<LinkedHashMap<ClientKey, KeyState>> rules = byRule.values().iterator(); rules.hasNext(); ) {
                LinkedHashMap<ClientKey, KeyState> states = rules.next();
                int before = states.size();
                states.values().removeIf(state -> state.isExpired(now));
                size -= before - states.size();
                if (states.isEmpty()) rules.remove();
            }
        }

        int size() {
            return size;
        }

        void clear() {
            byRule.clear();
            size = 0;
        }
    }
}
