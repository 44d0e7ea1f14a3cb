package dev.sluice.limiter;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What one rule of an admitted request settles once the request is complete: a give-back (its
 * response does not count, {@code rule.<r>.count}; or it cost less than it took,
 * {@code rule.<r>.actual-cost}), the release of a concurrency slot (a give-back of a
 * {@code concurrency} rule), or a charge (it cost more than it took).
 *
 * @param acquisition the rule and client, as the request was decided; its {@code cost} is the amount settled
 *                    (what to give back, or to charge more; 1 for a slot)
 * @param taken       the {@link RuleDecision} that admitted it: its take names what is settled, once only
 * @param charge      {@code true}: charge the amount more, past the limit if need be; {@code false}: give it back
 */
public record Settlement(Acquisition acquisition, RuleDecision taken, boolean charge) {

    public Settlement {
        Objects.requireNonNull(acquisition, "acquisition");
        Objects.requireNonNull(taken, "taken");
        if (!taken.taken()) throw new IllegalArgumentException("rule " + taken.rule().name() + " took nothing to settle");
        if (charge && acquisition.rule().algorithm().isConcurrency()) {
            throw new IllegalArgumentException("rule " + acquisition.rule().name() + " is a concurrency rule: a slot is"
                    + " released, never charged");
        }
    }

    /** A give-back of what {@code taken} took, or a slot's release. */
    public static Settlement giveBack(Acquisition acquisition, RuleDecision taken) {
        return new Settlement(acquisition, taken, false);
    }

    /** A charge of {@code acquisition}'s cost more than {@code taken} took. */
    public static Settlement charge(Acquisition acquisition, RuleDecision taken) {
        return new Settlement(acquisition, taken, true);
    }

    /**
     * What settles a request that took {@code acquisition}'s cost (an estimate) and really cost
     * {@code actualCost} ({@code rule.<r>.actual-cost}): the difference given back, or charged more;
     * {@code null} when they are equal.
     *
     * @throws IllegalArgumentException if {@code actualCost} is negative
     */
    public static Settlement ofActualCost(Acquisition acquisition, RuleDecision taken, long actualCost) {
        if (actualCost < 0) throw new IllegalArgumentException("an actual cost is 0 or more, not " + actualCost);
        long estimate = acquisition.cost();
        if (actualCost == estimate) return null;
        Acquisition difference = new Acquisition(acquisition.rule(), acquisition.clientKey(), Math.abs(actualCost - estimate));
        return new Settlement(difference, taken, actualCost > estimate);
    }

    /** The give-backs of what each of {@code taken} took, in order; those that took nothing are left out. */
    public static List<Settlement> givingBack(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        List<Settlement> out = new ArrayList<>(acquisitions.size());
        for (int i = 0, n = acquisitions.size(); i < n; i++) {
            if (taken.get(i).taken()) out.add(giveBack(acquisitions.get(i), taken.get(i)));
        }
        return out;
    }
}
