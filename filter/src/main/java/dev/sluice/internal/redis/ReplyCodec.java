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
 * <p>A cursor over one reply: {@link #next} reads the rules in order.
 */
final class ReplyCodec {

    /** A rule that denies the request (a shadow rule's denial refuses nothing, but is one). */
    static final int DENIED = 0;
    /** A rule that admits the request and took nothing. */
    static final int ADMITS = 1;
    /** A rule that admits the request and took its cost. */
    static final int TOOK = 2;

    private static final VarHandle DOUBLE = MethodHandles.byteArrayViewVarHandle(double[].class, ByteOrder.LITTLE_ENDIAN);

    private final byte[] reply;
    private int at;

    ReplyCodec(byte[] reply) {
        this.reply = reply;
    }

    /** The time the script decided at, ms since the epoch (the reply's last figure). */
    long decidedAt() {
        return (long) (double) DOUBLE.get(reply, reply.length - 8);
    }

    /**
     * The next rule's decision.
     *
     * @param token    the number its take goes by, if it took ({@link RuleDecision.Take#token()})
     * @param windowMs the length of the window it was decided in
     */
    RuleDecision next(Rule rule, long token, long windowMs) {
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
