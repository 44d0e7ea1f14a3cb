package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * One rule's algorithm with its parameters, built once per {@link Rule}. The subclasses are the
 * reference semantics of Sluice: the local engine runs them, and the Lua fragments in
 * {@code dev/sluice/internal/redis/} are translations that give bit-identical answers.
 *
 * <h2>Two phases</h2>
 * A request is admitted by all of its rules or by none, so deciding is split in two:
 * {@link #decide} looks at a client's state and changes nothing; {@link #take} applies an
 * admitted request. A denied request never writes anything (it consumes nothing, and a flood of
 * denied requests is read-only).
 *
 * <h2>Arithmetic</h2>
 * Times are integer milliseconds. Fractional quantities are scaled to integers: a token is
 * {@code windowMs} units, so refilling {@code limit} tokens per window adds exactly
 * {@code elapsedMs * limit} units, and a drain slot of {@code windowMs / limit} ms is
 * {@code windowMs} units of "ms times limit". Every intermediate value stays below 2<sup>53</sup>
 * ({@link Rule#MAX_QUOTA_TIMES_WINDOW_MS}, checked when a rule is made), where Lua's doubles are exact; divisions round toward the answer that is
 * never early: retry-after, reset, next and delay round up to the next whole millisecond,
 * remaining tokens round down.
 *
 * <h2>Time never runs backwards</h2>
 * With {@code clock=local}, instances' clocks disagree. A state records the latest time an
 * admission used, and a caller whose clock is behind decides as of that time ({@code max(now, stored)}),
 * so it cannot rewind the state and mint tokens. Its retry-after, reset and next include the
 * difference, so they stay truthful on its own clock.
 *
 * <h2>Expiry</h2>
 * {@link #take} reports when the state will be back to full; the Redis key's TTL and the local
 * entry's expiry are that moment plus {@link #EXPIRY_MARGIN_MS}, which absorbs clock skew of up
 * to a second between instances. An expired state and an absent one decide identically.
 *
 * <h2>Changed figures</h2>
 * A client's state belongs to the rule's name and the client, not to the figures: a client that
 * moves to another plan, or whose rule changes in a reload, keeps its state, and the algorithm of
 * the new figures reads it (each subclass says what the state means under other figures; states
 * record what they need for that). A state of another algorithm is not read at all: that client
 * starts afresh ({@link #stateOf}), as the Redis script does with another algorithm's key.
 *
 * <h2>Impossible requests</h2>
 * A request whose cost exceeds the rule's {@link #capacity()} can never be admitted. It is denied
 * with {@code retryAfterMs} = the window: a hint to back off, not a promise.
 */
public abstract sealed class RateAlgorithm
        permits FixedWindow, SlidingWindowCounter, SlidingWindowLog, TokenBucket, LeakyBucket, Gcra, Concurrency {

    /** Extra lifetime of a state after it is back to full: tolerates this much clock skew. */
    public static final long EXPIRY_MARGIN_MS = 1000;

    /**
     * How long Redis remembers a settlement it applied (give-back.lua: the take's token in the
     * client's once key), so that the same settlement sent again changes nothing: a resend underneath
     * (a client library's retry, a cluster redirect) comes within seconds, and the filter settles each
     * request once. Sent again later, a settlement is applied again.
     */
    public static final long ONCE_MS = 60_000;

    final Rule rule;
    final long limit;
    final long windowMs;
    final long burst;
    private final Class<? extends KeyState> stateClass;

    RateAlgorithm(Rule rule) {
        this.rule = rule;
        this.limit = rule.limit();
        this.windowMs = rule.windowMillis();
        this.burst = rule.burst();
        this.stateClass = newState().getClass(); // newState() reads no field of the subclass
    }

    /** The algorithm of {@code rule}. */
    public static RateAlgorithm of(Rule rule) {
        switch (rule.algorithm()) {
            case FIXED_WINDOW:
                return new FixedWindow(rule);
            case SLIDING_WINDOW_COUNTER:
                return new SlidingWindowCounter(rule);
            case SLIDING_WINDOW_LOG:
                return new SlidingWindowLog(rule);
            case TOKEN_BUCKET:
                return new TokenBucket(rule);
            case LEAKY_BUCKET:
                return new LeakyBucket(rule);
            case GCRA:
                return new Gcra(rule);
            case CONCURRENCY:
                return new Concurrency(rule);
            default:
                throw new IllegalArgumentException("unknown algorithm " + rule.algorithm());
        }
    }

    /** The rule this algorithm decides. */
    public final Rule rule() {
        return rule;
    }

    /** The largest cost one request can ever be admitted with. */
    public abstract long capacity();

    /** The state of a client that was never seen. */
    public abstract KeyState newState();

    /**
     * The state to decide with: {@code stored} if it is a live state of this algorithm, whatever
     * figures it was written with, else a fresh one (never seen, expired, or another algorithm's).
     */
    public final KeyState stateOf(KeyState stored, long now) {
        return stored == null || stored.isExpired(now) || stored.getClass() != stateClass ? newState() : stored;
    }

    /**
     * Decides a request of {@code cost} at {@code now} without changing {@code state}.
     *
     * @param state a state from {@link #newState()} of this algorithm
     */
    public abstract Verdict decide(KeyState state, long now, long cost);

    /**
     * Takes {@code cost} from {@code state}: call only after {@link #decide} admitted the same
     * request (same state, time and cost).
     */
    public abstract void take(KeyState state, long now, long cost);

    /**
     * {@link #take(KeyState, long, long)}, the take being named {@code token} ({@link RuleDecision.Take#token()}):
     * a concurrency slot is held under its take's token, which its release and renewals name.
     */
    public void take(KeyState state, long now, long cost, long token) {
        take(state, now, cost);
    }

    /**
     * Renews the lease of what {@code take} holds (concurrency); nothing for a rate, whose takes do not
     * last: see {@link Concurrency#renew}.
     *
     * @return whether it was still held
     */
    public boolean renew(KeyState state, long now, RuleDecision.Take take) {
        return false;
    }

    /**
     * Gives back what an admitted request of {@code cost} took from {@code state}, as far as that
     * leaves the state never better than if the request had never happened, whatever was taken
     * since (docs/algorithms.md, "Giving back"). {@code this} is the algorithm of the rule the
     * request was decided with; {@code take} is what that decision returned. Keeps the state's
     * expiry (it is only ever better for it).
     *
     * @param state a live state of this algorithm (another algorithm's, or none: nothing to give back)
     */
    public abstract void giveBack(KeyState state, long now, long cost, RuleDecision.Take take);

    /**
     * Charges {@code extra} more at {@code now}, whatever the limit: the part of a request's cost stated
     * after its response beyond what it took at admission ({@code rule.<r>.actual-cost}). Taken as a request
     * of {@code extra} at {@code now} would be, admitted or not, so the client may end in debt: refused
     * until time has paid it back (the window's end, the refill). Never in the client's favour against the
     * request having taken that much at admission (docs/algorithms.md, "Settling the cost"). A debt is kept
     * up to {@link #maxDebtUnits} (the arithmetic's exact range), far beyond any real use.
     *
     * @throws UnsupportedOperationException for the algorithms without {@code actual-cost}
     *                                       ({@link Algorithm#settlesCost()})
     */
    public void charge(KeyState state, long now, long extra) {
        throw new UnsupportedOperationException(rule.algorithm().id() + " settles no cost after the response");
    }

    /**
     * The most a client's state may owe, in the algorithm's units (tokens x window for the buckets, ms x
     * limit for gcra): 2^51, and no more than 2^36 ms (about two years) of refill at {@code limit}, so that
     * every value stays exact in the script's doubles and every stored time before the year 10889.
     */
    public static long maxDebtUnits(long limit) {
        return limit >= 1L << 15 ? MAX_DEBT_UNITS : Math.min(MAX_DEBT_UNITS, limit << 36);
    }

    /** See {@link #maxDebtUnits}. */
    static final long MAX_DEBT_UNITS = 1L << 51;

    /**
     * The most one charge takes: {@code extra x window} at most 2^52 (a request stating more is charged
     * that much), so that no product leaves the exact range.
     */
    static long chargeable(long extra, long windowMs) {
        return Math.min(extra, (1L << 52) / windowMs);
    }

    /**
     * The largest count a window may hold once charged past its limit: {@code count x window} stays at most
     * {@link #MAX_DEBT_UNITS}.
     */
    static long maxCount(long windowMs) {
        return MAX_DEBT_UNITS / windowMs;
    }

    /**
     * Whether a request decided under {@code asTaken} gives anything back under the figures in force now,
     * {@code inForce} (a reload or a plan switch in between): always, computed with the take's figures,
     * but for a token bucket whose limit rose or whose burst fell, which may have refilled (or lost) since
     * the take more than the take's figures bound; it gives nothing (docs/algorithms.md, "Changed figures").
     */
    public static boolean givesBack(Rule asTaken, Rule inForce) {
        return asTaken.algorithm() != Algorithm.TOKEN_BUCKET
                || inForce.limit() <= asTaken.limit() && inForce.burst() >= asTaken.burst();
    }

    /**
     * The buckets' refund counters (what was given back so far) are kept modulo 2^52, where every
     * value stays exact in the script's doubles; only differences over one request's lifetime are
     * ever read, far below 2^51. They count in the unit the state keeps across a change of figures,
     * rounded up per refund: whole tokens for the token bucket (its units are rescaled when the
     * window changes), whole milliseconds for GCRA and the leaky bucket (rescaled when the limit
     * changes). Counted in the state's units, a refund made under other figures than a later
     * give-back's would be read in the wrong units: a refund of a short window's units is almost
     * nothing in a long window's, and the later give-back could leave the client better off than if
     * its request had never happened. Rounded up, a refund only ever lowers later bounds more.
     */
    static final long REFUNDS_MODULUS = 1L << 52;

    /** {@code refunded} plus {@code refund} of the algorithm's units counted in whole {@code unit}s, rounded up, modulo {@link #REFUNDS_MODULUS}. */
    static long addRefund(long refunded, long refund, long unit) {
        return (refunded + ceilDiv(refund, unit)) & (REFUNDS_MODULUS - 1);
    }

    /**
     * The most a bucket may regain, at {@code at}, for a request whose decision returned
     * {@code take}: what refills between {@code at} and the moment the bucket the request left would
     * have been full had nothing else been taken, less what was given back since the request was
     * taken ({@code refunded} less {@code take.givenBack()}, in whole {@code unit}s of the algorithm's
     * units: each refund brings that moment closer). In the algorithm's units; 0 or less: nothing.
     */
    static long refundBound(RuleDecision.Take take, long refunded, long at, long limit, long unit) {
        if (take.ms() < at) {
            return 0; // the bucket would have been full before now
        }
        long since = (refunded - take.givenBack()) & (REFUNDS_MODULUS - 1);
        long ahead = (take.ms() - at) * limit + take.fraction();
        if (since > ahead / unit) {
            return 0; // given back since at least as much as the take could ever regain (and no overflow below)
        }
        return ahead - since * unit;
    }

    /** The request can never be admitted: see the class comment. */
    final Verdict impossible(long remainingNow, long resetNowMs) {
        return Verdict.deny(remainingNow, resetNowMs, windowMs);
    }

    static long floorDiv(long a, long b) {
        return Math.floorDiv(a, b);
    }

    /** {@code ceil(a / b)} for {@code b > 0}. */
    static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "{" + rule.name() + ": limit=" + limit + ", window=" + windowMs + "ms, burst=" + burst + "}";
    }
}
