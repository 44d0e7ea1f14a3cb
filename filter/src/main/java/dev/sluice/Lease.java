package dev.sluice;

import dev.sluice.internal.lease.Leases;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RuleDecision;

import java.util.List;

/**
 * What an admitted request holds until it completes: the slots of its concurrency rules
 * ({@code algorithm=concurrency}), renewed in the background while it runs and released by
 * {@link #close()}; and what its rules took, for {@link #settle settling} a cost known only at the end.
 * Made by {@link Sluice#tryAcquireSlot} and {@link Sluice#begin}; use it in a try-with-resources:
 *
 * <pre>{@code
 * try (Lease export = sluice.tryAcquireSlot("exports", ClientKey.of(customer))) {
 *     if (!export.allowed()) return tooManyExports(export.decision().retryAfter());
 *     runExport();
 * }   // the slot is free again, however runExport() ended
 * }</pre>
 *
 * A denied request holds nothing, and closing its lease does nothing. Thread-safe; closing twice
 * releases once.
 */
public final class Lease implements AutoCloseable {

    private final Sluice sluice;
    private final List<Acquisition> acquisitions;
    private final Decision decision;
    private final Leases.Held held;
    /** Per rule of the decision, whether its cost was settled: once, whatever the engine (the local one keeps no once key). */
    private final boolean[] settled; // guarded by this

    Lease(Sluice sluice, List<Acquisition> acquisitions, Decision decision, Leases.Held held) {
        this.sluice = sluice;
        this.acquisitions = acquisitions;
        this.decision = decision;
        this.held = held;
        this.settled = new boolean[decision.rules().size()];
    }

    /** The decision the request was admitted or denied by. */
    public Decision decision() {
        return decision;
    }

    /** Whether the request was admitted (it then holds its slots until {@link #close()}). */
    public boolean allowed() {
        return decision.allowed();
    }

    /**
     * Settles the cost the request really had on rule {@code ruleName} (e.g. the tokens an LLM call used),
     * once: the difference from what it took at admission (its cost) is charged, past the limit if need be,
     * or given back (never leaving the client better off than if the request had cost that much). Nothing
     * for a rule that took nothing, or when the costs are equal; nothing more when called again for the rule.
     *
     * @throws IllegalArgumentException if the request was not decided by {@code ruleName}, the cost is negative, or the
     *                                  rule cannot settle a cost (sliding-window-log, leaky-bucket, concurrency, approximate)
     */
    public void settle(String ruleName, long actualCost) {
        List<RuleDecision> rules = decision.rules();
        for (int i = 0; i < rules.size(); i++) {
            if (rules.get(i).rule().name().equals(ruleName)) {
                if (actualCost < 0) throw new IllegalArgumentException("an actual cost is 0 or more, not " + actualCost);
                Sluice.requireSettlesCost(rules.get(i).rule()); // before it counts as settled: a second call throws too
                synchronized (this) {
                    if (settled[i]) return;
                    settled[i] = true;
                }
                sluice.settle(acquisitions.get(i), rules.get(i), actualCost);
                return;
            }
        }
        throw new IllegalArgumentException("rule " + ruleName + " did not decide this request; it was decided by "
                + rules.stream().map(r -> r.rule().name()).toList());
    }

    /** Releases the request's slots (at once; whatever their leases), if it holds any. */
    @Override
    public void close() {
        if (held != null) held.releaseNow();
    }
}
