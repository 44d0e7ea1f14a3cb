package dev.sluice.internal.redis;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * What decide.lua answers, read here and nowhere else: little-endian doubles, as Lua's {@code struct}
 * writes them (decide.lua's header holds the same layout, from the script's side). Per rule, in the
 * order of its keys, its outcome and then the figures of that outcome:
 *
 * <pre>
 * {@link #DENIED}  remaining, retry-after ms, reset ms          (its next is the retry-after; it holds nothing)
 * {@link #ADMITS}  remaining, reset ms, next ms                 (it took nothing: another rule denied the
 *                                                          request, or the call writes nothing)
 * {@link #TOOK}    remaining, taken ms, reset ms, next ms; a leaky bucket then its delay ms; the
 *          buckets (token-bucket, gcra, leaky-bucket) and concurrency then the taken fraction and
 *          what was given back before ({@link RuleDecision.Take}; concurrency's are 0: the script's
 *          cheapest test is the algorithm's number, 4 and above)
 * </pre>
 * then the time the script decided at, ms since the epoch. Whether the request was admitted is each
 * rule's outcome: an admitted request's rules that admit have taken, and those of a denied one have not.
 *
 * <p>Or, for a request that took from every rule, each able to answer so (decide.lua's {@code state_answers}),
 * the states just written, rule after rule: the strings packed for {@code PSETEX}, whose figures this class
 * works out as the script would have. A token bucket, GCRA or leaky bucket answers so when its state was
 * written at the time decided at (the clock decided on, Redis's by default, not behind the state's); a fixed
 * window (not on a calendar) or a sliding-window counter always, and the time decided at ({@code '<d'}), which
 * its state does not hold, then follows the states (a bucket's state holds it). Such a reply is told by its
 * first byte, the first state's tag ({@link #FIXED_WINDOW_STATE}, {@link #SLIDING_WINDOW_COUNTER_STATE},
 * {@link #TOKEN_BUCKET_STATE}, {@link #LEAKY_BUCKET_STATE}, {@link #GCRA_STATE}); a reply of figures begins
 * with the low byte of its first outcome's little-endian double, 0 for 0, 1 and 2. The script then spares the
 * reply's encoding, and for one rule the figures' arithmetic: up to 5,000 of a lone decision's 35,000 to
 * 55,000 instructions, about 6,000 a rule for several (BENCHMARKS.md).
 *
 * <p>A cursor over one reply: {@link #next} reads the rules in order.
 */
final class ReplyCodec {

    /** A rule that denies the request (a shadow rule's denial refuses nothing, but is one). */
    static final int DENIED = 0;
    /** A rule that admits the request and took nothing. */
    static final int ADMITS = 1;
    /** A rule that admits the request and took its cost. */
    static final int TOOK = 2;

    /** The first byte of a fixed window's state: {@code '<Bdd'} 1, end ms, count (fixed-window.lua). */
    static final int FIXED_WINDOW_STATE = 1;
    /** The first byte of a sliding-window counter's state: {@code '<Bddd'} 2, end ms, current, previous (sliding-window-counter.lua). */
    static final int SLIDING_WINDOW_COUNTER_STATE = 2;
    /** The first byte of a token bucket's state: {@code '<Bi7I6I7I7'} 4, scaled tokens, ms, window ms, refunded (token-bucket.lua). */
    static final int TOKEN_BUCKET_STATE = 4;
    /** The first byte of a leaky bucket's state: {@code '<BdI7I4I7'} 5, ms, the next free slot's lead (ms x limit), limit, refunded (leaky-bucket.lua). */
    static final int LEAKY_BUCKET_STATE = 5;
    /** The first byte of a GCRA's state: {@code '<BdI7I4I7'} 6, ms, lead (ms x limit), limit, refunded (gcra.lua). */
    static final int GCRA_STATE = 6;

    private static final VarHandle DOUBLE = MethodHandles.byteArrayViewVarHandle(double[].class, ByteOrder.LITTLE_ENDIAN);

    private final byte[] reply;
    private int at;
    /** Whether a window's state was read: the time decided at follows the states. */
    private boolean timed;

    ReplyCodec(byte[] reply) {
        this.reply = reply;
    }

    /** The time the script decided at, ms since the epoch (the reply's last figure, a window's state's too; a bucket's state's time). */
    long decidedAt() {
        return switch (reply[0]) {
            case TOKEN_BUCKET_STATE -> unsigned(8, 6);
            case GCRA_STATE, LEAKY_BUCKET_STATE -> (long) (double) DOUBLE.get(reply, 1);
            default -> trailingTime();
        };
    }

    /**
     * The next rule's decision.
     *
     * @param rule     the rule as the request was encoded with it ({@link RequestCodec}): a state's figures are
     *                 worked out with its limit, window, burst and max delay
     * @param cost     the cost the request was encoded with (a leaky bucket's delay is the queue before it)
     * @param token    the number its take goes by, if it took ({@link RuleDecision.Take#token()})
     * @param windowMs the length of the window it was decided in
     */
    RuleDecision next(Rule rule, long cost, long token, long windowMs) {
        if (reply[0] != 0) { // a reply of states: each rule's is the next
            return fromState(rule, cost, token, windowMs);
        }
        int outcome = (int) read();
        long remaining = (long) read();
        switch (outcome) {
            case DENIED -> {
                long retry = (long) read();
                long reset = (long) read();
                return new RuleDecision(rule, false, remaining, retry, reset, retry, 0, null, RuleDecision.Source.REDIS,
                        windowMs);
            }
            case ADMITS -> {
                long reset = (long) read();
                long next = (long) read();
                return new RuleDecision(rule, true, remaining, 0, reset, next, 0, null, RuleDecision.Source.REDIS, windowMs);
            }
            case TOOK -> {
                long takenMs = (long) read();
                long reset = (long) read();
                long next = (long) read();
                Algorithm algorithm = rule.algorithm();
                long delay = algorithm == Algorithm.LEAKY_BUCKET ? (long) read() : 0;
                long fraction = 0;
                long givenBack = 0;
                if (hasFraction(algorithm)) {
                    fraction = (long) read();
                    givenBack = (long) read();
                }
                return new RuleDecision(rule, true, remaining, 0, reset, next, delay,
                        new RuleDecision.Take(takenMs, fraction, givenBack, token), RuleDecision.Source.REDIS, windowMs);
            }
            default -> throw new IllegalStateException("decide.lua answered outcome " + outcome + " for rule " + rule.name());
        }
    }

    /**
     * A take's figures from the state it wrote, the next in the reply, as each algorithm's fragment computes
     * them after a take (every value an integer below 2^53, so the script's doubles and these longs agree
     * exactly). Java's {@code /} and {@code %} round toward zero where the script's round down: they agree
     * where nothing is negative, and {@link Math#floorDiv} stands where something may be. Only a charge
     * (mode 5) leaves a debt or a count past the limit, and a charge is never answered with its state; a take
     * admits only with {@code cost x window} tokens there (a GCRA or leaky bucket only with
     * {@code after <= cap}, a window only within its limit). A window's time decided at is the reply's last
     * 8 bytes.
     */
    private RuleDecision fromState(Rule rule, long cost, long token, long windowMs) {
        Algorithm algorithm = rule.algorithm();
        long limit = rule.limit();
        int s = at; // where this rule's state begins
        int tag = reply[s];
        long remaining, reset, next, takenMs, fraction = 0, givenBack = 0, delay = 0;
        int length;
        if (tag == FIXED_WINDOW_STATE && algorithm == Algorithm.FIXED_WINDOW && s + (length = 17) <= reply.length - 8) {
            long end = (long) (double) DOUBLE.get(reply, s + 1); // when the count ends
            long now = trailingTime();
            remaining = limit - (long) (double) DOUBLE.get(reply, s + 9);
            reset = next = end - now; // nothing comes back before the count ends
            takenMs = end;
            timed = true;
        } else if (tag == SLIDING_WINDOW_COUNTER_STATE && algorithm == Algorithm.SLIDING_WINDOW_COUNTER
                && s + (length = 25) <= reply.length - 8) {
            long window = rule.windowMillis();
            long start = (long) (double) DOUBLE.get(reply, s + 1) - window; // of the current count's window
            long counted = (long) (double) DOUBLE.get(reply, s + 9);
            long previous = (long) (double) DOUBLE.get(reply, s + 17);
            long now = trailingTime();
            long previousUnits = previous * (window - (now > start ? now - start : 0)); // a lagging caller: at its start
            remaining = Math.floorDiv(limit * window - previousUnits - counted * window, window);
            long c = remaining + 1; // one more than now: when the weighted previous count has slid far enough
            if (counted + c <= limit) {
                next = start + window - Math.floorDiv((limit - counted - c) * window, previous) - now;
            } else {
                long x = window - Math.floorDiv((limit - c) * window, counted);
                next = start + window + Math.max(x, 0) - now;
            }
            reset = start + 2 * window - now;
            takenMs = start + window;
            timed = true;
        } else if (tag == LEAKY_BUCKET_STATE && algorithm == Algorithm.LEAKY_BUCKET && s + (length = 27) <= reply.length) {
            long now = (long) (double) DOUBLE.get(reply, s + 1);
            long after = unsigned(s + 9, 7); // the next free slot's lead on the time decided at, ms x limit
            long window = rule.windowMillis();
            long cap = rule.burst() * window;
            long maxDelayUnits = Math.min(rule.maxDelay().toMillis(), ceilDiv(cap, limit)) * limit;
            long byDelay = after <= maxDelayUnits ? (maxDelayUnits - after) / window + 1 : 0;
            remaining = Math.min((cap - after) / window, byDelay);
            reset = ceilDiv(after, limit);
            long r = Math.max(remaining, 0);
            long room = Math.min(cap - (r + 1) * window, maxDelayUnits - r * window);
            next = room >= 0 ? ceilDiv(after - room, limit) : 0; // until one more request fits
            delay = ceilDiv(after - cost * window, limit); // the queue before this request
            takenMs = now + after / limit;
            fraction = after % limit;
            givenBack = unsigned(s + 20, 7);
        } else if (tag == TOKEN_BUCKET_STATE && algorithm == Algorithm.TOKEN_BUCKET && s + (length = 28) <= reply.length) {
            long left = signed(s + 1, 7); // scaled tokens left after the take, at the time decided at
            long stamp = unsigned(s + 8, 6);
            long window = unsigned(s + 14, 7);
            long debt = rule.burst() * window - left; // full again debt / limit ms after the stamp
            remaining = left / window;
            next = ceilDiv(window - left % window, limit); // one more whole token
            reset = ceilDiv(debt, limit);
            fraction = debt % limit;
            takenMs = stamp + debt / limit;
            givenBack = unsigned(s + 21, 7);
        } else if (tag == GCRA_STATE && algorithm == Algorithm.GCRA && s + (length = 27) <= reply.length) {
            long now = (long) (double) DOUBLE.get(reply, s + 1);
            long after = unsigned(s + 9, 7); // the TAT's lead on the time decided at, ms x limit
            long window = rule.windowMillis();
            long cap = rule.burst() * window;
            remaining = (cap - after) / window;
            reset = ceilDiv(after, limit);
            next = ceilDiv(after - cap + (remaining + 1) * window, limit); // one more whole request
            takenMs = now + after / limit;
            fraction = after % limit;
            givenBack = unsigned(s + 20, 7);
        } else {
            throw new IllegalStateException("decide.lua answered a state tagged " + tag + " at byte " + s + " of "
                    + reply.length + " for rule " + rule.name() + " (" + algorithm + ")");
        }
        at = s + length;
        return new RuleDecision(rule, true, remaining, 0, reset, next, delay,
                new RuleDecision.Take(takenMs, fraction, givenBack, token), RuleDecision.Source.REDIS, windowMs);
    }

    /**
     * Checks that the rules read took the whole reply: all but its last 8 bytes, the time decided at, for a
     * reply of figures or of states among which a window's; all of it for a reply of buckets' states.
     *
     * @throws IllegalStateException if not: the reply is not what decide.lua writes for these rules
     */
    void end() {
        int expected = reply[0] == 0 || timed ? reply.length - 8 : reply.length;
        if (at != expected) {
            throw new IllegalStateException("decide.lua answered " + reply.length + " bytes, " + at
                    + " read for its rules where " + expected + " were expected");
        }
    }

    /** The time decided at that ends a reply of figures, or of states among which a window's. */
    private long trailingTime() {
        return (long) (double) DOUBLE.get(reply, reply.length - 8);
    }

    /** {@code a / b} rounded up, for {@code b > 0} (the script's {@code (a + -a % b) / b}). */
    private static long ceilDiv(long a, long b) {
        return -Math.floorDiv(-a, b);
    }

    /** The unsigned little-endian integer of {@code n} bytes at {@code from} (struct's {@code In}). */
    private long unsigned(int from, int n) {
        long v = 0;
        for (int i = n - 1; i >= 0; i--) v = v << 8 | (reply[from + i] & 0xff);
        return v;
    }

    /** The signed little-endian integer of {@code n} bytes at {@code from} (struct's {@code in}). */
    private long signed(int from, int n) {
        int shift = 64 - 8 * n;
        return unsigned(from, n) << shift >> shift;
    }

    /** The algorithms whose take is sent with a fraction of a ms and a refund counter (the windows' are 0). */
    static boolean hasFraction(Algorithm algorithm) {
        return algorithm == Algorithm.TOKEN_BUCKET || algorithm == Algorithm.GCRA || algorithm == Algorithm.LEAKY_BUCKET
                || algorithm == Algorithm.CONCURRENCY;
    }

    private double read() {
        double d = (double) DOUBLE.get(reply, at);
        at += 8;
        return d;
    }
}
