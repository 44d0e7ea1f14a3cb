package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The reference state of every client of every rule, by rule name and client (as the engines key
 * them), deciding requests as the engines must: when every enforcing rule admits a request, each
 * rule that admits takes its cost; a shadow rule ({@code dryRun}) that denies takes nothing and
 * refuses nothing. A rule whose algorithm differs from the state's reads a client never seen, and
 * its first take replaces that state (the engines treat another algorithm's key as absent).
 */
final class Models {

    private final Map<String, Model> states = new HashMap<>();
    /** Per algorithm, decisions that read a state written under other figures. */
    final int[] changedFigures = new int[Algorithm.values().length];

    /** What each rule of the last request decided took ({@link Model#take}'s answer), null where it took nothing. */
    private List<Object> lastTaken = List.of();

    /** The figures of every rule of {@code request} at {@code now}, taking from the models if it is admitted. */
    List<Figures> decide(List<Acquisition> request, long now) {
        int n = request.size();
        Model[] models = new Model[n];
        boolean admitted = true;
        for (int i = 0; i < n; i++) {
            Acquisition a = request.get(i);
            models[i] = state(a, now);
            admitted &= models[i].admits(a.rule(), now, a.cost()) || a.rule().dryRun();
        }
        Figures[] out = new Figures[n];
        Object[] taken = new Object[n];
        for (int i = 0; i < n; i++) {
            Acquisition a = request.get(i);
            Model m = models[i];
            if (admitted && m.admits(a.rule(), now, a.cost())) {
                long delay = m.delayMs(a.rule(), now);
                taken[i] = new Take(m.take(a.rule(), now, a.cost())); // one object per take: its token
                m.written(a.rule(), now);
                states.put(key(a), m);
                out[i] = Figures.taken(m, a.rule(), now, delay);
            } else {
                out[i] = Figures.untouched(m, a.rule(), now, a.cost());
            }
        }
        lastTaken = Arrays.asList(taken);
        return List.of(out);
    }

    /** What each rule of the last request {@link #decide}d took, null where it took nothing. */
    List<Object> lastTaken() {
        return lastTaken;
    }

    /** What a model's take returned, one object per take (a model may return equal or shared values for two takes). */
    private record Take(Object taken) {
        @Override
        public boolean equals(Object o) {
            return this == o;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }

    /** The takes given back so far: a give-back is applied once only, however often it is sent (the engines' tokens). */
    private final java.util.Set<Object> givenBack = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    /** Gives back at {@code now} what {@code taken} (from {@link #lastTaken}) says each of {@code request}'s rules took. */
    void giveBack(List<Acquisition> request, List<Object> taken, long now) {
        for (int i = 0; i < request.size(); i++) {
            Acquisition a = request.get(i);
            if (taken.get(i) == null) continue;
            if (!givenBack.add(taken.get(i))) continue; // once only: the same give-back again changes nothing
            Model m = states.get(key(a));
            if (m == null) continue;
            m.settle(now);
            if (m.algorithm() == a.rule().algorithm()) m.giveBack(a.rule(), now, a.cost(), ((Take) taken.get(i)).taken());
        }
    }

    /**
     * Settles at {@code now} what {@code taken} (from {@link #lastTaken}) says each of {@code request}'s rules
     * took: a charge of the acquisition's cost where {@code charges} says so (as a request taken now, on the
     * state as it is, or a fresh one), else a give-back (a slot's release). Once only, as {@link #giveBack}.
     */
    void settle(List<Acquisition> request, List<Object> taken, boolean[] charges, long now) {
        for (int i = 0; i < request.size(); i++) {
            Acquisition a = request.get(i);
            if (taken.get(i) == null) continue;
            if (!charges[i]) {
                giveBack(List.of(a), java.util.Collections.singletonList(taken.get(i)), now);
                continue;
            }
            if (!givenBack.add(taken.get(i))) continue; // once only
            Model m = state(a, now);
            m.charge(a.rule(), now, a.cost());
            m.written(a.rule(), now);
            states.put(key(a), m);
        }
    }

    /**
     * Renews at {@code now} the concurrency slots that {@code taken} (from {@link #lastTaken}) took.
     *
     * @return for each, whether its slot was still held
     */
    boolean[] renew(List<Acquisition> request, List<Object> taken, long now) {
        boolean[] held = new boolean[request.size()];
        for (int i = 0; i < request.size(); i++) {
            Acquisition a = request.get(i);
            Model m = states.get(key(a));
            if (taken.get(i) == null || m == null) continue;
            m.settle(now);
            if (m instanceof ConcurrencyModel c && c.renew(a.rule(), now, ((Take) taken.get(i)).taken())) {
                held[i] = true;
                m.written(a.rule(), now);
            }
        }
        return held;
    }

    /** The state of {@code a}'s rule and client as {@code a}'s algorithm reads it at {@code now}. */
    private Model state(Acquisition a, long now) {
        Model m = states.get(key(a));
        if (m != null) m.settle(now);
        if (m == null || m.algorithm() != a.rule().algorithm()) return Model.of(a.rule().algorithm());
        Rule w = m.writtenWith;
        if (w != null && (w.limit() != a.rule().limit() || w.windowMillis() != a.rule().windowMillis()
                || w.burst() != a.rule().burst() || !w.maxDelay().equals(a.rule().maxDelay()))) {
            changedFigures[a.rule().algorithm().ordinal()]++;
        }
        return m;
    }

    /** Whether {@code a}'s rule and client has a state that has expired at {@code now} (Redis would have forgotten it). */
    boolean expired(Acquisition a, long now) {
        Model m = states.get(key(a));
        return m != null && now >= m.expiresAt;
    }

    private static String key(Acquisition a) {
        return a.rule().name() + "/" + a.clientKey();
    }
}
