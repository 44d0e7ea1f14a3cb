package dev.sluice.internal.redis;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.key.ClientKey;
import dev.sluice.internal.failover.PartialFailure;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The global engine: decides with one Lua script in Redis, so every instance sharing the Redis
 * shares the counts. The semantics are those of {@code dev.sluice.internal.algorithm}, bit for bit.
 *
 * <p><b>One round trip.</b> All acquisitions of a request go to Redis as one {@code EVALSHA} of
 * one script (assembled at class load: {@code decide-one.lua} around {@code decide.lua}, whose
 * header documents KEYS, ARGV and the reply, with one fragment per algorithm spliced in), one
 * packed argument for all of them and a packed reply. The script
 * decides every rule, then writes only if every enforcing rule admits: a request denied by one rule
 * takes nothing from the others. A shadow rule ({@link Rule#dryRun()}) never blocks the others: when
 * the enforcing rules admit, every rule that admits takes its cost and a shadow rule that denies
 * takes nothing. When Redis has lost the script ({@code NOSCRIPT}: restart, failover,
 * {@code SCRIPT FLUSH}), the engine sends it once with {@code EVAL}, which also caches it again.
 *
 * <p><b>Shared round trips.</b> Calls go through {@link SharedRoundTrips}: while one is in flight
 * to a node, the calls of other requests to that node queue and go together in the next round trip;
 * the first goes at once. On standalone and Sentinel those that go together go as one call of
 * {@code decide-batch.lua}, which decides each request in turn, isolated from the others (its
 * header says how), so a batch pays for one script call and one {@code TIME}; on a Cluster each
 * stays its own script call, pipelined.
 *
 * <p><b>Keys.</b> One key per rule per client: {@code <keyPrefix>{<rule>:<clientKey>}}. The hash
 * tag puts all of a client's state for a rule in one Cluster slot. Each key expires when its
 * state is back to full, plus at most a second.
 *
 * <p><b>Cluster.</b> Keys of different rules hash to different slots, so with
 * {@code cluster=true} each rule of a request is decided by its own call, in order (one round trip
 * per rule); when an enforcing rule denies, the earlier rules give back what they took and the later
 * ones are evaluated without writing, so a denied request takes nothing from any rule, as on
 * standalone (a round trip more per earlier rule, only for such denials). Single-rule requests are
 * unaffected.
 *
 * <p><b>Clock.</b> {@code redisClock=true}: the script reads Redis's {@code TIME}, one clock for
 * the fleet. {@code false}: the caller passes {@code clock.millis()}; states never move back in
 * time, so a lagging instance cannot mint tokens.
 *
 * <p><b>Calendar windows.</b> A calendar rule's windows ({@link CalendarWindows}) come from its
 * zone's rules, which the script does not have: the engine sends, with the rule, the boundaries of
 * the previous, current and next window around its estimate of the script's clock (the instance's
 * clock, corrected by how far Redis's {@code TIME} was from it at the last reply), computed once per
 * window; the script counts in the one that holds its time. When that time is outside them (a clock
 * far from Redis's, before the first reply), the rule decides at the estimate instead, and the engine
 * logs it (at most once a minute).
 *
 * <p><b>Failures.</b> Connection failures, timeouts and Redis refusing to run the script (OOM,
 * READONLY, LOADING, BUSY...) surface as {@link LimiterUnavailableException}, flagged as a
 * timeout when a socket read timed out or no pooled connection came in time.
 */
public final class RedisEngine implements RateLimiter {

    /** Where decide.lua takes a fragment: a line holding only {@code --[[ name.lua ]]}. */
    private static final Pattern FRAGMENT = Pattern.compile("(?m)^[ \\t]*--\\[\\[ ([a-z-]+\\.lua) ]]$");
    static final String SCRIPT = assemble("decide-one.lua");
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    /** Several requests' calls of {@link #SCRIPT} in one call. */
    static final String BATCH_SCRIPT = assemble("decide-batch.lua");
    private static final SharedRoundTrips.BatchScript BATCH = batchScript(BATCH_SCRIPT);
    /** ARGV[1]: now (a double), then per acquisition the algorithm and the mode (bytes) and 5 doubles; see decide.lua. */
    private static final int NOW_BYTES = 8;
    private static final int RULE_BYTES = 2 + 5 * 8;
    private static final int MODE_OFFSET = 1;
    private static final int COST_OFFSET = RULE_BYTES - 8;
    /** A give-back's rule is followed by what its decision took: taken ms, fraction, given back (doubles). */
    private static final int TAKEN_BYTES = 3 * 8;
    /** A calendar rule's are then followed by the time its windows were computed around and their boundaries (doubles). */
    private static final int CALENDAR_BYTES = 5 * 8;
    private static final long LOG_INTERVAL_MS = 60_000;
    private static final Logger log = LoggerFactory.getLogger(RedisEngine.class);
    /** "Read Redis's TIME" in place of the time. */
    private static final double REDIS_TIME = -1;
    /**
     * Doubles per rule in the reply: allowed, remaining, retry-after (a rule that took: its taken ms),
     * reset, next, delay (a rule that took, but a leaky bucket: its taken fraction; a leaky bucket that
     * took sends that after the delay); a bucket that took then sends its refund counter.
     */
    private static final int REPLY_PER_RULE = 6;
    /** A rule's mode in ARGV[1] (decide.lua): whether its denial refuses the request; or what else to do. */
    private static final byte ENFORCING = 0;
    private static final byte SHADOW = 1;
    private static final byte EVALUATE = 2;
    private static final byte GIVE_BACK = 3;
    private static final byte CHARGE = 5;
    /** A concurrency rule's take's token, after its rule in modes 0 to 2 (concurrency.lua). */
    private static final int SLOT_BYTES = 8;
    /** Renews concurrency slots' leases (renew.lua). */
    private static final byte[] RENEW_BYTES = resource("renew.lua").getBytes(StandardCharsets.UTF_8);
    private static final byte[] RENEW_SHA = sha1Hex(RENEW_BYTES).getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SLOTS = "}:slots".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ONCE = ":once".getBytes(StandardCharsets.US_ASCII);

    private final UnifiedJedis jedis;
    private final SharedRoundTrips roundTrips;
    private final String keyPrefix;
    private final boolean redisClock;
    private final Clock clock;
    private final boolean cluster;
    private final RuleCache<RulePlan> plans;
    /** How far Redis's {@code TIME} was ahead of the instance's clock at the last reply (clock=redis). */
    private volatile long redisAhead;
    private final AtomicLong lastClockWarning = new AtomicLong(Long.MIN_VALUE);

    /**
     * @param jedis      the client (standalone, Sentinel or Cluster); not closed by this engine
     * @param keyPrefix  the namespace of every key, e.g. {@code rl:}
     * @param redisClock read the time in Redis ({@code clock=redis}) rather than from {@code clock}
     * @param clock      the instance's clock, used when {@code redisClock} is false
     * @param cluster    whether {@code jedis} talks to a Redis Cluster (one call per rule)
     */
    public RedisEngine(UnifiedJedis jedis, String keyPrefix, boolean redisClock, Clock clock, boolean cluster) {
        this.jedis = jedis;
        this.roundTrips = new SharedRoundTrips(jedis, cluster);
        this.keyPrefix = keyPrefix;
        this.redisClock = redisClock;
        this.clock = clock;
        this.cluster = cluster;
        this.plans = new RuleCache<>(rule -> new RulePlan(rule, keyPrefix));
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        return decide(acquisitions, null);
    }

    /** A decision and the time the script decided at. */
    public record Timed(Decision decision, long atMillis) {
    }

    /**
     * Decides as {@link #decide(List)} and tells the time, in ms since the epoch, that the script
     * decided at: Redis's {@code TIME} with {@code redisClock}, else the time sent. What tests need
     * to hold a Redis-clock decision against the reference semantics. On a Cluster with several
     * rules, the time of the last rule's call.
     */
    public Timed decideTimed(List<Acquisition> acquisitions) {
        long[] at = {Long.MIN_VALUE};
        Decision d = decide(acquisitions, at);
        return new Timed(d, at[0]);
    }

    private Decision decide(List<Acquisition> acquisitions, long[] at) {
        int n = acquisitions.size();
        if (n == 0) {
            return Decision.none();
        }
        if (n > 1) {
            rejectDuplicates(acquisitions);
            if (cluster) {
                return Decision.of(decideRuleByRule(acquisitions, at));
            }
        }
        return Decision.of(call(acquisitions, Call.DECIDE, null, null, at, now()));
    }

    /**
     * On a Cluster the rules of a request live in different slots, so each is decided by its own
     * call, in order. When an enforcing rule denies, what the earlier rules took is given back (each
     * such call gives back, then evaluates: the rule shows the figures of its state given back) and
     * the later rules are evaluated without writing (their figures, a denying one named, as a
     * standalone call reports them: Retry-After is the longest wait of every denying rule). So a
     * denied request takes nothing from any rule; only while it is being decided can another
     * request of the same client see an earlier rule's charge. With the instance's clock, every call
     * is at the same time: what is given back is then exactly what was taken.
     */
    private List<RuleDecision> decideRuleByRule(List<Acquisition> acquisitions, long[] at) {
        int n = acquisitions.size();
        double now = now();
        List<RuleDecision> decisions = new ArrayList<>(n);
        int denied = -1;
        for (int i = 0; i < n && denied < 0; i++) {
            Acquisition a = acquisitions.get(i);
            RuleDecision d;
            try {
                d = call(List.of(a), Call.DECIDE, null, null, at, now).get(0);
            } catch (LimiterUnavailableException e) {
                throw failedAt(i, e, acquisitions, decisions, i, at, now);
            }
            decisions.add(d);
            if (!d.allowed() && !a.rule().dryRun()) denied = i;
        }
        if (denied < 0) {
            return decisions;
        }
        for (int i = 0; i < denied; i++) {
            RuleDecision d = decisions.get(i);
            if (d.taken()) {
                try {
                    decisions.set(i, call(List.of(acquisitions.get(i)), Call.SETTLE, List.of(d), null, at, now).get(0));
                } catch (LimiterUnavailableException e) {
                    throw failedAt(i, e, acquisitions, decisions, denied, at, now);
                }
            }
        }
        for (int i = denied + 1; i < n; i++) {
            try {
                decisions.add(call(List.of(acquisitions.get(i)), Call.EVALUATE, null, null, at, now).get(0));
            } catch (LimiterUnavailableException e) {
                throw new PartialFailure(i, e); // nothing is taken any more
            }
        }
        return decisions;
    }

    /**
     * The call of acquisition {@code failed} failed: what the acquisitions before {@code upTo} took is
     * given back (best effort: a give-back that fails too is lost, the request counting), so that the
     * failure handling can decide the request again without the failed node's rules.
     */
    private PartialFailure failedAt(int failed, LimiterUnavailableException e, List<Acquisition> acquisitions,
                                    List<RuleDecision> decisions, int upTo, long[] at, double now) {
        for (int j = 0; j < upTo; j++) {
            RuleDecision d = decisions.get(j);
            if (j == failed || !d.taken()) continue;
            try {
                call(List.of(acquisitions.get(j)), Call.SETTLE, List.of(d), null, at, now);
            } catch (LimiterUnavailableException lost) {
                e.addSuppressed(lost);
            }
        }
        return new PartialFailure(failed, e);
    }

    /** The time sent with a call: Redis's ({@link #REDIS_TIME}) or the instance's. */
    private double now() {
        return redisClock ? REDIS_TIME : clock.millis();
    }

    /** What a call asks of the script, per rule (decide.lua's modes). */
    private enum Call {
        /** Decide, taking from every rule that admits if every enforcing rule does. */
        DECIDE,
        /** Decide without writing anything: the figures only. */
        EVALUATE,
        /**
         * Settle what each rule's decision took (give back, or release a slot; or charge more, per rule),
         * then evaluate without writing.
         */
        SETTLE
    }

    /**
     * @param taken   for {@link Call#SETTLE}: the decision of each acquisition that took; else null
     * @param charges for {@link Call#SETTLE}: which acquisitions are charged their cost more rather than
     *                given it back; null: none
     * @param at      where to put the script's time, or null
     * @param now     the time to send ({@link #now()})
     */
    private List<RuleDecision> call(List<Acquisition> acquisitions, Call what, List<RuleDecision> taken, boolean[] charges,
                                    long[] at, double now) {
        int n = acquisitions.size();
        RulePlan[] rulePlans = new RulePlan[n];
        CalendarBounds[] bounds = new CalendarBounds[n];
        long[] slots = null; // the tokens concurrency rules take their slots under (decided here: the script stores them)
        long around = 0; // the time calendar rules' windows are computed around: the estimate of the script's clock
        boolean calendar = false;
        List<byte[]> keys = new ArrayList<>(n);
        byte[] request;
        Acquisition first = acquisitions.get(0);
        if (n == 1 && what == Call.DECIDE && redisClock && first.cost() == first.rule().cost()
                && first.rule().calendar() == null && !first.rule().algorithm().isConcurrency()) {
            rulePlans[0] = plans.get(first.rule());
            keys.add(rulePlans[0].key(first.clientKey().value()));
            request = rulePlans[0].onRedisClock; // the common case, encoded once
        } else {
            int size = NOW_BYTES;
            for (int i = 0; i < n; i++) {
                // a give-back is computed with the figures its take was decided with, which identify the take; a
                // charge is taken as a request now is, with the figures in force
                boolean givingBack = what == Call.SETTLE && (charges == null || !charges[i]);
                RulePlan plan = plans.get(givingBack ? taken.get(i).rule() : acquisitions.get(i).rule());
                rulePlans[i] = plan;
                size += what == Call.SETTLE ? RULE_BYTES + TAKEN_BYTES : RULE_BYTES;
                if (plan.calendar != null) {
                    size += CALENDAR_BYTES;
                    calendar = true;
                }
                if (plan.concurrency && what != Call.SETTLE) {
                    size += SLOT_BYTES;
                    if (slots == null) slots = new long[n];
                    slots[i] = ThreadLocalRandom.current().nextLong();
                }
            }
            ByteBuffer packed = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            packed.putDouble(now);
            around = redisClock ? clock.millis() + redisAhead : (long) now;
            for (int i = 0; i < n; i++) {
                Acquisition a = acquisitions.get(i);
                RulePlan plan = rulePlans[i];
                keys.add(plan.key(a.clientKey().value()));
                int o = packed.position();
                packed.put(plan.encoded);
                packed.putDouble(o + COST_OFFSET, a.cost());
                if (what == Call.EVALUATE) {
                    packed.put(o + MODE_OFFSET, EVALUATE);
                } else if (what == Call.SETTLE) {
                    packed.put(o + MODE_OFFSET, charges != null && charges[i] ? CHARGE : GIVE_BACK);
                    RuleDecision.Take take = taken.get(i).take();
                    packed.putDouble(take.ms()).putDouble(take.fraction()).putDouble(take.givenBack());
                }
                if (plan.calendar != null) {
                    bounds[i] = plan.calendar.around(around);
                    bounds[i].encode(packed, around);
                }
                if (plan.concurrency && what != Call.SETTLE) {
                    packed.putLong(slots[i]);
                }
            }
            request = packed.array();
        }
        List<byte[]> args;
        if (what == Call.SETTLE) {
            // once only: each take's token, and its once key (decide.lua's header); a slot's member
            ByteBuffer tokens = ByteBuffer.allocate(8 * n).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++) {
                tokens.putLong(taken.get(i).take().token());
                keys.add(onceKey(keys.get(i)));
            }
            args = List.of(request, tokens.array());
        } else {
            args = List.of(request);
        }
        ByteBuffer reply = ByteBuffer.wrap(evaluate(keys, args)).order(ByteOrder.LITTLE_ENDIAN);
        long decidedAt = (long) reply.getDouble(reply.capacity() - 8);
        if (calendar && redisClock) redisAhead = decidedAt - clock.millis(); // for the next calendar call's estimate
        // 6 doubles per rule, more for a bucket that took: a longer reply is an admitted request
        boolean admitted = what == Call.DECIDE;
        if (admitted && reply.capacity() == (REPLY_PER_RULE * n + 1) * 8) {
            for (int i = 0; i < n && admitted; i++) {
                admitted = rulePlans[i].rule.dryRun() || reply.getDouble(i * REPLY_PER_RULE * 8) == 1;
            }
        }
        List<RuleDecision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Rule rule = rulePlans[i].rule;
            boolean allowed = reply.getDouble() == 1;
            long remaining = (long) reply.getDouble();
            long retryOrTaken = (long) reply.getDouble(); // a rule that took has no retry-after: its take instead
            long reset = (long) reply.getDouble();
            long next = (long) reply.getDouble();
            boolean took = admitted && allowed;
            boolean leaky = rule.algorithm() == Algorithm.LEAKY_BUCKET;
            long delayOrFraction = (long) reply.getDouble(); // a rule that took, but for leaky-bucket: its taken fraction
            long delay = leaky || !took ? delayOrFraction : 0;
            RuleDecision.Take take = null;
            if (took) {
                long fraction = leaky ? (long) reply.getDouble() : delayOrFraction;
                long givenBack = sendsGivenBack(rule.algorithm()) ? (long) reply.getDouble() : 0;
                long token = slots != null && rulePlans[i].concurrency ? slots[i] : ThreadLocalRandom.current().nextLong();
                take = new RuleDecision.Take(retryOrTaken, fraction, givenBack, token);
            }
            long windowMs = bounds[i] == null ? rule.windowMillis() : windowOf(rule, bounds[i], decidedAt, around);
            decisions.add(new RuleDecision(rule, allowed, remaining, took ? 0 : retryOrTaken, reset, next, delay, take,
                    RuleDecision.Source.REDIS, windowMs));
        }
        if (at != null) {
            at[0] = (long) reply.getDouble();
        }
        return decisions;
    }

    /**
     * The length of the calendar window the script decided {@code rule} in, having decided at
     * {@code decidedAt}: the window holding that time, or when it fell outside the boundaries sent,
     * the one holding the time they were computed around (fixed-window.lua), which is logged.
     */
    private long windowOf(Rule rule, CalendarBounds sent, long decidedAt, long around) {
        if (sent.holds(decidedAt)) {
            return sent.lengthAt(decidedAt);
        }
        long last = lastClockWarning.get();
        long t = System.currentTimeMillis();
        if ((last == Long.MIN_VALUE || t - last >= LOG_INTERVAL_MS) && lastClockWarning.compareAndSet(last, t)) {
            log.warn("Redis's clock ({}) is outside the calendar windows this instance computed around {} for rule {}"
                    + " ({}): decided in the window holding this instance's time; the next decisions use Redis's",
                    Instant.ofEpochMilli(decidedAt), Instant.ofEpochMilli(around), rule.name(), rule.calendar());
        }
        return sent.lengthAt(around);
    }

    /**
     * Settles each settlement in the script (docs/algorithms.md, "Giving back" and "Settling the cost"):
     * gives back what its decision took, releases a slot, or charges more; each once only, however often
     * the call is sent. In one call for all of them (one per settlement on a Cluster, where their keys
     * live in different slots). A failure is thrown as for a decision; nothing is retried.
     */
    @Override
    public void settle(List<Settlement> settlements) {
        settle(settlements, null);
    }

    /**
     * Gives back as {@link #giveBack(List, List)} and tells the time, in ms since the epoch, that the
     * script gave back at ({@code Long.MIN_VALUE} if nothing was taken): what tests need to hold a
     * Redis-clock give-back against the reference semantics.
     */
    public long giveBackTimed(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        return settleTimed(Settlement.givingBack(acquisitions, taken));
    }

    /** Settles as {@link #settle(List)} and tells the time the script settled at, as {@link #giveBackTimed}. */
    public long settleTimed(List<Settlement> settlements) {
        long[] at = {Long.MIN_VALUE};
        settle(settlements, at);
        return at[0];
    }

    private void settle(List<Settlement> settlements, long[] at) {
        int n = settlements.size();
        List<Acquisition> acquisitions = new ArrayList<>(n);
        List<RuleDecision> taken = new ArrayList<>(n);
        boolean[] charges = new boolean[n];
        for (Settlement s : settlements) {
            if (!s.charge() && !RateAlgorithm.givesBack(s.taken().rule(), s.acquisition().rule())) continue;
            charges[acquisitions.size()] = s.charge();
            acquisitions.add(s.acquisition());
            taken.add(s.taken());
        }
        if (acquisitions.isEmpty()) {
            return;
        }
        if (cluster && acquisitions.size() > 1) {
            for (int i = 0; i < acquisitions.size(); i++) {
                call(List.of(acquisitions.get(i)), Call.SETTLE, List.of(taken.get(i)), new boolean[]{charges[i]}, at, now());
            }
        } else {
            call(acquisitions, Call.SETTLE, taken, charges, at, now());
        }
    }

    /**
     * Renews the concurrency slots the decisions in {@code taken} took for another lease (renew.lua): in
     * one call for all of them (one per slot on a Cluster).
     *
     * @throws LimiterUnavailableException when Redis cannot answer, as for a decision
     */
    @Override
    public boolean[] renew(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        int n = acquisitions.size();
        boolean[] held = new boolean[n];
        if (cluster && n > 1) {
            for (int i = 0; i < n; i++) {
                held[i] = renewAll(List.of(acquisitions.get(i)), List.of(taken.get(i)))[0];
            }
            return held;
        }
        return renewAll(acquisitions, taken);
    }

    private boolean[] renewAll(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        int n = acquisitions.size();
        List<byte[]> keys = new ArrayList<>(n);
        ByteBuffer packed = ByteBuffer.allocate(NOW_BYTES + n * (8 + SLOT_BYTES)).order(ByteOrder.LITTLE_ENDIAN);
        packed.putDouble(now());
        for (int i = 0; i < n; i++) {
            Rule rule = acquisitions.get(i).rule();
            keys.add(plans.get(rule).key(acquisitions.get(i).clientKey().value()));
            packed.putDouble(rule.windowMillis()).putLong(taken.get(i).take().token());
        }
        byte[] reply;
        try {
            reply = (byte[]) roundTrips.evalsha(RENEW_SHA, RENEW_BYTES, keys, List.of(packed.array()));
        } catch (RuntimeException e) {
            throw new LimiterUnavailableException("Redis could not renew leases: " + e.getMessage(), e,
                    RedisFailure.isTimeout(e));
        }
        boolean[] held = new boolean[n];
        for (int i = 0; i < n; i++) held[i] = reply[i] == 1;
        return held;
    }

    private byte[] evaluate(List<byte[]> keys, List<byte[]> args) {
        try {
            return (byte[]) roundTrips.evalsha(SHA_BYTES, SCRIPT_BYTES, keys, args, BATCH);
        } catch (RuntimeException e) {
            // whatever the client library throws (a JedisException, or an IllegalStateException of a client
            // that never reached its servers) is Redis failing this call, for the failure policy
            throw new LimiterUnavailableException("Redis could not decide: " + e.getMessage(), e, RedisFailure.isTimeout(e));
        }
    }

    private static void rejectDuplicates(List<Acquisition> acquisitions) {
        for (int i = 1; i < acquisitions.size(); i++) {
            Acquisition a = acquisitions.get(i);
            for (int j = 0; j < i; j++) {
                Acquisition b = acquisitions.get(j);
                if (a.rule().name().equals(b.rule().name()) && a.clientKey().equals(b.clientKey())) {
                    throw new IllegalArgumentException("rule " + a.rule().name() + " is asked twice for client " + a.clientKey());
                }
            }
        }
    }

    /** Whether the script sends a refund counter with what a rule took (algorithms 4 and above: the buckets', concurrency's 0). */
    private static boolean sendsGivenBack(Algorithm algorithm) {
        return algorithm == Algorithm.TOKEN_BUCKET || algorithm == Algorithm.GCRA || algorithm == Algorithm.LEAKY_BUCKET
                || algorithm == Algorithm.CONCURRENCY;
    }

    /** The once key of a state key (give-back.lua): the same key with {@code :once} appended, in the same slot. */
    private static byte[] onceKey(byte[] stateKey) {
        byte[] key = Arrays.copyOf(stateKey, stateKey.length + ONCE.length);
        System.arraycopy(ONCE, 0, key, stateKey.length, ONCE.length);
        return key;
    }

    /** The Redis node that decides {@code a} now, or null while the topology is not known. */
    public Object nodeOf(Acquisition a) {
        return roundTrips.nodeOf(plans.get(a.rule()).key(a.clientKey().value()));
    }

    /** The Redis nodes there are now (on Cluster: the masters); empty when not known. */
    public Set<Object> nodes() {
        return roundTrips.nodes();
    }

    /** How this engine's calls reach Redis (tests watch its round trips). */
    SharedRoundTrips roundTrips() {
        return roundTrips;
    }

    /** The key of {@code rule} for {@code clientKey}, as the script sees it. */
    public String key(Rule rule, ClientKey clientKey) {
        return keyPrefix + "{" + rule.name() + ":" + clientKey + "}" + (rule.algorithm().isConcurrency() ? ":slots" : "");
    }

    /** Deletes the client's key of this rule. */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        try {
            jedis.del(plans.get(rule).key(clientKey.value()));
        } catch (RuntimeException e) {
            throw new LimiterUnavailableException("Redis could not reset " + rule.name() + " for " + clientKey
                    + ": " + e.getMessage(), e, RedisFailure.isTimeout(e));
        }
    }

    /** Does not close the client, which the caller owns. */
    @Override
    public void close() {
    }

    /** What a rule sends with every call, encoded once. */
    private static final class RulePlan {
        final Rule rule;
        final byte[] keyHead;
        /** Its part of ARGV[1], with the rule's own cost. */
        final byte[] encoded;
        /** The whole ARGV[1] of a request of this rule alone, at its own cost, on Redis's clock. */
        final byte[] onRedisClock;
        /** A calendar rule's windows, else null. */
        final CalendarCache calendar;
        /** A concurrency rule: its key ends with {@code :slots}, its requests send their take's token. */
        final boolean concurrency;

        RulePlan(Rule rule, String keyPrefix) {
            RateAlgorithm.validate(rule);
            this.rule = rule;
            this.calendar = rule.calendar() == null ? null : new CalendarCache(rule.calendar());
            this.concurrency = rule.algorithm().isConcurrency();
            this.keyHead = (keyPrefix + "{" + rule.name() + ":").getBytes(StandardCharsets.UTF_8);
            this.encoded = ByteBuffer.allocate(RULE_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .put(rule.calendar() != null ? CALENDAR_FIXED_WINDOW : algorithmId(rule.algorithm()))
                    .put(rule.dryRun() ? SHADOW : ENFORCING)
                    .putDouble(rule.limit())
                    .putDouble(rule.windowMillis())
                    .putDouble(rule.burst())
                    .putDouble(rule.maxDelay().toMillis())
                    .putDouble(rule.cost())
                    .array();
            this.onRedisClock = ByteBuffer.allocate(NOW_BYTES + RULE_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .putDouble(REDIS_TIME).put(encoded).array();
        }

        /** The script's number of a fixed-window rule on a calendar, whose boundaries follow it (fixed-window.lua). */
        private static final byte CALENDAR_FIXED_WINDOW = 0;

        /** The script's number of an algorithm (decide.lua). */
        private static byte algorithmId(Algorithm algorithm) {
            return switch (algorithm) {
                case FIXED_WINDOW -> 1;
                case SLIDING_WINDOW_COUNTER -> 2;
                case SLIDING_WINDOW_LOG -> 3;
                case TOKEN_BUCKET -> 4;
                case LEAKY_BUCKET -> 5;
                case GCRA -> 6;
                case CONCURRENCY -> 7;
            };
        }

        /** {@code <prefix>{<rule>:<client>}}; a concurrency rule's with {@code :slots} appended (a sorted set of its own). */
        byte[] key(String clientKey) {
            byte[] client = clientKey.getBytes(StandardCharsets.UTF_8);
            byte[] key = new byte[keyHead.length + client.length + (concurrency ? SLOTS.length : 1)];
            System.arraycopy(keyHead, 0, key, 0, keyHead.length);
            System.arraycopy(client, 0, key, keyHead.length, client.length);
            if (concurrency) {
                System.arraycopy(SLOTS, 0, key, keyHead.length + client.length, SLOTS.length);
            } else {
                key[key.length - 1] = '}';
            }
            return key;
        }
    }

    /** The boundaries sent with a calendar rule: its previous, current and next window, {@code b0 < b1 < b2 < b3}. */
    record CalendarBounds(long b0, long b1, long b2, long b3) {
        boolean holds(long t) {
            return t >= b0 && t < b3;
        }

        long lengthAt(long t) {
            return t < b1 ? b1 - b0 : t < b2 ? b2 - b1 : b3 - b2;
        }

        /** Its part of ARGV[1] (fixed-window.lua): the time the windows are around, then the boundaries. */
        void encode(ByteBuffer packed, long around) {
            packed.putDouble(around).putDouble(b0).putDouble(b1).putDouble(b2).putDouble(b3);
        }
    }

    /** A calendar rule's boundaries, computed once per window (its zone's rules are not free to ask). */
    static final class CalendarCache {
        private final CalendarWindows windows;
        private volatile CalendarBounds current;

        CalendarCache(CalendarWindows windows) {
            this.windows = windows;
        }

        /** The boundaries around {@code t}: {@code t} is in the current window. */
        CalendarBounds around(long t) {
            CalendarBounds c = current;
            if (c == null || t < c.b1() || t >= c.b2()) {
                CalendarWindows.Window now = windows.windowAt(t);
                CalendarWindows.Window before = windows.windowAt(now.startMs() - 1);
                long after = windows.nextStart(now.endMs());
                current = c = new CalendarBounds(before.startMs(), now.startMs(), now.endMs(), after);
            }
            return c;
        }
    }

    /** A script resource with each fragment it names spliced in where it names it, and theirs in them. */
    private static String assemble(String name) {
        Matcher fragment = FRAGMENT.matcher(resource(name));
        StringBuilder script = new StringBuilder();
        while (fragment.find()) {
            fragment.appendReplacement(script, Matcher.quoteReplacement(assemble(fragment.group(1))));
        }
        return fragment.appendTail(script).toString();
    }

    private static SharedRoundTrips.BatchScript batchScript(String script) {
        byte[] bytes = script.getBytes(StandardCharsets.UTF_8);
        return new SharedRoundTrips.BatchScript(sha1Hex(bytes).getBytes(StandardCharsets.US_ASCII), bytes);
    }

    static String resource(String name) {
        try (InputStream in = RedisEngine.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("missing script resource dev/sluice/internal/redis/" + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read script resource dev/sluice/internal/redis/" + name, e);
        }
    }

    static String sha1Hex(byte[] bytes) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-1").digest(bytes);
            StringBuilder hex = new StringBuilder(40);
            for (byte b : digest) {
                hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is missing from this JVM", e);
        }
    }
}
