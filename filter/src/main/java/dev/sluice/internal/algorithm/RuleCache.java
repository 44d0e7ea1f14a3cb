package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * What an engine derives from a {@link Rule} once (its algorithm, its encoded Redis arguments),
 * looked up on every request without a lock and without hashing the rule's fields: a small
 * direct-mapped table by identity in front of a map by equality. Rules are few and built once
 * from configuration; one built per request (an equal copy) still finds its entry by equality.
 * Beyond {@value #MAX_RULES} distinct rules, values are derived afresh each time rather than kept.
 */
public final class RuleCache<V> {

    private static final int MAX_RULES = 4096;
    private static final int SLOTS = 64;

    private record Slot<V>(Rule rule, V value) {
    }

    private final Function<Rule, V> derive;
    private final ConcurrentHashMap<Rule, V> byEquality = new ConcurrentHashMap<>();
    /** Racy by design: a slot holds an immutable record, so a reader sees a whole one or a stale one. */
    private final Object[] byIdentity = new Object[SLOTS];

    public RuleCache(Function<Rule, V> derive) {
        this.derive = derive;
    }

    @SuppressWarnings("unchecked")
    public V get(Rule rule) {
        int i = System.identityHashCode(rule) & (SLOTS - 1);
        Object slot = byIdentity[i];
        if (slot != null && ((Slot<V>) slot).rule == rule) {
            return ((Slot<V>) slot).value;
        }
        V value = byEquality.get(rule);
        if (value == null) {
            value = derive.apply(rule);
            if (byEquality.size() < MAX_RULES) {
                V raced = byEquality.putIfAbsent(rule, value);
                if (raced != null) value = raced;
            }
        }
        byIdentity[i] = new Slot<>(rule, value);
        return value;
    }
}
