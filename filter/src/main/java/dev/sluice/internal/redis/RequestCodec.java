package dev.sluice.internal.redis;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.List;

/**
 * What {@link RedisEngine} asks of decide.lua: the request (ARGV[1]) and a settlement's tokens
 * (ARGV[2]), written here and nowhere else. Little-endian, as Lua's {@code struct} reads it
 * (decide.lua's header holds the same layout, from the script's side):
 *
 * <pre>
 * ARGV[1]  '&lt;d'       now, ms since the epoch; {@link #REDIS_TIME}: the script reads Redis's TIME
 *          per rule, in the order of its keys:
 *          '&lt;BBddddd' algorithm ({@link #algorithmId}), {@link Mode}, limit, window ms (a concurrency rule's:
 *                      its lease), burst, max delay ms, cost
 *          '&lt;ddd'     modes GIVE_BACK and CHARGE: what the decision that admitted the request took
 *                      ({@link RuleDecision.Take}): ms, fraction, given back
 *          '&lt;ddddd'   a calendar rule: the time its windows were computed around, then the boundaries
 *                      of the previous, current and next window
 *          'c8'        a concurrency rule in modes ENFORCING to EVALUATE: the token its slot is taken under
 *                      (a long, little-endian: the same 8 bytes as in ARGV[2])
 * ARGV[2]  modes GIVE_BACK and CHARGE only: per rule the 8 bytes of its take's token
 * </pre>
 *
 * A rule's fixed part is encoded once ({@link #rule}); a request writes it with its own mode and cost.
 * Written in the order above: {@link #rule}, then for that rule {@link #take}, {@link #calendar},
 * {@link #slot} as they apply.
 */
final class RequestCodec {

    /** "Read Redis's TIME" in place of the time. */
    static final double REDIS_TIME = -1;

    static final int NOW_BYTES = 8;
    static final int RULE_BYTES = 2 + 5 * 8;
    static final int TAKE_BYTES = 3 * 8;
    static final int CALENDAR_BYTES = 5 * 8;
    static final int SLOT_BYTES = 8;
    private static final int MODE_OFFSET = 1;
    private static final int COST_OFFSET = RULE_BYTES - 8;

    private static final VarHandle DOUBLE = MethodHandles.byteArrayViewVarHandle(double[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /** What the script does with a rule (decide.lua's modes). */
    enum Mode {
        /** Decide; its denial refuses the request. */
        ENFORCING(0),
        /** Decide; its denial refuses nothing (a shadow rule, {@code dry-run}). */
        SHADOW(1),
        /** Decide without writing anything: the figures only. */
        EVALUATE(2),
        /** Give back what its decision took (a concurrency rule: release its slot), then evaluate. */
        GIVE_BACK(3),
        /** Charge its cost more, past the limit if need be, then evaluate the state as it was. */
        CHARGE(5);

        final byte id;

        Mode(int id) {
            this.id = (byte) id;
        }

        /** Whether the rule is followed by what its decision took. */
        boolean settles() {
            return this == GIVE_BACK || this == CHARGE;
        }
    }

    /** The script's number of a fixed-window rule on a calendar, whose boundaries follow it (fixed-window.lua). */
    static final byte CALENDAR_FIXED_WINDOW = 0;

    /** The script's number of a rule's algorithm (decide.lua). */
    static byte algorithmId(Rule rule) {
        if (rule.calendar() != null) return CALENDAR_FIXED_WINDOW;
        return switch (rule.algorithm()) {
            case FIXED_WINDOW -> 1;
            case SLIDING_WINDOW_COUNTER -> 2;
            case SLIDING_WINDOW_LOG -> 3;
            case TOKEN_BUCKET -> 4;
            case LEAKY_BUCKET -> 5;
            case GCRA -> 6;
            case CONCURRENCY -> 7;
        };
    }

    /** A rule's part of ARGV[1], enforcing or shadow as the rule is, at its own cost: encoded once per rule. */
    static byte[] rule(Rule rule) {
        byte[] b = new byte[RULE_BYTES];
        b[0] = algorithmId(rule);
        b[MODE_OFFSET] = (rule.dryRun() ? Mode.SHADOW : Mode.ENFORCING).id;
        DOUBLE.set(b, 2, (double) rule.limit());
        DOUBLE.set(b, 10, (double) rule.windowMillis());
        DOUBLE.set(b, 18, (double) rule.burst());
        DOUBLE.set(b, 26, (double) rule.maxDelay().toMillis());
        DOUBLE.set(b, COST_OFFSET, (double) rule.cost());
        return b;
    }

    /** The whole ARGV[1] of a request of one rule (its {@link #rule} part), at its own cost, on Redis's clock. */
    static byte[] aloneOnRedisClock(byte[] rule) {
        byte[] b = new byte[NOW_BYTES + RULE_BYTES];
        DOUBLE.set(b, 0, REDIS_TIME);
        System.arraycopy(rule, 0, b, NOW_BYTES, RULE_BYTES);
        return b;
    }

    /** The size of a request's rule: its fixed part and what follows it. */
    static int ruleSize(Mode mode, boolean calendar, boolean slot) {
        return RULE_BYTES + (mode.settles() ? TAKE_BYTES : 0) + (calendar ? CALENDAR_BYTES : 0) + (slot ? SLOT_BYTES : 0);
    }

    private final byte[] out;
    private int at;

    /**
     * A request of {@code size} bytes ({@link #NOW_BYTES} and each rule's {@link #ruleSize}) at {@code now}
     * ({@link #REDIS_TIME} on Redis's clock).
     */
    RequestCodec(int size, double now) {
        this.out = new byte[size];
        DOUBLE.set(out, 0, now);
        this.at = NOW_BYTES;
    }

    /** A rule ({@link #rule}'s bytes), in {@code mode}, at {@code cost}. */
    RequestCodec rule(byte[] rule, Mode mode, long cost) {
        System.arraycopy(rule, 0, out, at, RULE_BYTES);
        out[at + MODE_OFFSET] = mode.id;
        DOUBLE.set(out, at + COST_OFFSET, (double) cost);
        at += RULE_BYTES;
        return this;
    }

    /** What the decision of a rule in mode GIVE_BACK or CHARGE took. */
    RequestCodec take(RuleDecision.Take take) {
        DOUBLE.set(out, at, (double) take.ms());
        DOUBLE.set(out, at + 8, (double) take.fraction());
        DOUBLE.set(out, at + 16, (double) take.givenBack());
        at += TAKE_BYTES;
        return this;
    }

    /** A calendar rule's windows: computed around {@code around}, the boundaries {@code b0 < b1 < b2 < b3}. */
    RequestCodec calendar(long around, long b0, long b1, long b2, long b3) {
        DOUBLE.set(out, at, (double) around);
        DOUBLE.set(out, at + 8, (double) b0);
        DOUBLE.set(out, at + 16, (double) b1);
        DOUBLE.set(out, at + 24, (double) b2);
        DOUBLE.set(out, at + 32, (double) b3);
        at += CALENDAR_BYTES;
        return this;
    }

    /** The token a concurrency rule's slot is taken under. */
    RequestCodec slot(long token) {
        LONG.set(out, at, token);
        at += SLOT_BYTES;
        return this;
    }

    /** ARGV[1], every byte written. */
    byte[] bytes() {
        if (at != out.length) throw new IllegalStateException("a request of " + out.length + " bytes holds " + at);
        return out;
    }

    /** ARGV[2] of a settlement: each take's token, in the order of the rules. */
    static byte[] tokens(List<RuleDecision> taken) {
        byte[] b = new byte[8 * taken.size()];
        for (int i = 0; i < taken.size(); i++) LONG.set(b, 8 * i, taken.get(i).take().token());
        return b;
    }
}
