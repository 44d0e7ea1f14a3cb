package dev.sluice.internal.failover;

import dev.sluice.limiter.Acquisition;

import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Which Redis node decides an acquisition, so that {@link FailoverLimiter} keeps a circuit breaker
 * per node: the server (standalone), the master the Sentinels name now (a failover makes a new node),
 * or the master the Cluster's slot map names for the acquisition's key.
 */
public interface Nodes {

    /** The node that decides {@code a} now: any value with {@code equals}; its {@code toString} names it. */
    Object nodeOf(Acquisition a);

    /** The nodes there are now: the breakers of others are dropped. Empty: not known (nothing is dropped). */
    Set<Object> current();

    /** Whether the acquisitions of one request may live on different nodes (Redis Cluster). */
    boolean several();

    /** One node for everything: {@code name}. */
    static Nodes one(String name) {
        Object node = new Object() {
            @Override
            public String toString() {
                return name;
            }
        };
        return of(a -> node, () -> Set.of(node), false);
    }

    /**
     * The nodes of a Redis engine.
     *
     * @param nodeOf  the node of an acquisition, null while the topology is not known
     * @param current the nodes now
     * @param several whether a request's acquisitions may live on different nodes
     */
    static Nodes of(Function<Acquisition, Object> nodeOf, Supplier<Set<Object>> current, boolean several) {
        Object unknown = new Object() {
            @Override
            public String toString() {
                return "unknown";
            }
        };
        return new Nodes() {
            @Override
            public Object nodeOf(Acquisition a) {
                Object n = nodeOf.apply(a);
                return n == null ? unknown : n;
            }

            @Override
            public Set<Object> current() {
                return current.get();
            }

            @Override
            public boolean several() {
                return several;
            }
        };
    }
}
