package dev.sluice.internal.redis;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.key.ClientKey;
import dev.sluice.internal.failover.PartialFailure;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.RenewalIncomplete;
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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The global engine: decides with one Lua script in Redis, so every instance sharing the Redis
 * shares the counts. The semantics are those of {@code dev.sluice.internal.algorithm}, bit for bit.
 *
 * <p><b>One round trip.</b> All acquisitions of a request go to Redis as one {@code EVALSHA} of
 * one script (assembled at class load: {@code decide-one.lua} around {@code decide.lua}, whose
 * header documents KEYS, ARGV and the reply, with one fragment per algorithm spliced in), one
 * packed argument for all of them ({@link RequestCodec}) and a packed reply ({@link ReplyCodec}).
 * The script decides every rule, then writes only if every enforcing rule admits: a request denied by one rule
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
 * <p><b>Keys.</b> One key per rule per client: {@code <keyPrefix>{<rule>:<clientKey>}} (a concurrency
 * rule's with {@code :slots} appended: a sorted set of the slots held); and, once a settlement has
 * been made for the client, its once key, {@code :once} appended ({@link #settle}). The hash tag
 * puts all of a client's state for a rule in one Cluster slot. Each key expires when its state is
 * back to full (a slots key: when its latest lease ends), plus at most a second.
 *
 * <p><b>Settlements and renewals.</b> What a request settles when complete (give-backs, a slot's
 * release, a charge: {@link #settle}) goes in one call of the same script, each rule in its mode; the
 * leases of concurrency slots are renewed by {@code renew.lua} ({@link #renew}), all those due in one
 * call (one per slot on a Cluster). A slot's release Redis did not answer, and the slots a decision
 * whose call failed may still have taken, are released later ({@link LateReleases}).
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
 * far from Redis's, before the first reply), the script still decides at its time, in the count
 * running then or else in a window of the sent current window's length from its time (stricter than
 * the zone's, never looser), and the engine logs it (at most once a minute).
 *
 * <p><b>Failures.</b> Connection failures, timeouts and Redis refusing to run the script (OOM,
 * READONLY, LOADING, BUSY...) surface as {@link LimiterUnavailableException}, flagged as a
 * timeout when a socket read timed out or no pooled connection came in time.
 */
public final class RedisEngine implements RateLimiter {

    /**
     * Where a script takes a fragment: a line holding only {@code --[[ name.lua ]]} (the resource up to
     * its first section) or {@code --[[ name.lua#section ]]} (that section of it).
     */
    private static final Pattern FRAGMENT = Pattern.compile("(?m)^[ \\t]*--\\[\\[ ([a-z-]+\\.lua)(?:#([a-z-]+))? ]]$");
    /** Where a section of a fragment begins: a line holding only {@code --[[ #section ]]}; it ends at the next. */
    private static final Pattern SECTION = Pattern.compile("(?m)^--\\[\\[ #([a-z-]+) ]]\\r?\\n");
    static final String SCRIPT = assemble("decide-one.lua");
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    /** Several requests' calls of {@link #SCRIPT} in one call. */
    static final String BATCH_SCRIPT = assemble("decide-batch.lua");
    private static final SharedRoundTrips.BatchScript BATCH = batchScript(BATCH_SCRIPT);
    private static final long LOG_INTERVAL_MS = 60_000;
    private static final Logger log = LoggerFactory.getLogger(RedisEngine.class);
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
    /** Slot releases Redis did not answer when due, and the slots of decisions whose call failed: sent again. */
    private final LateReleases late;
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
        this(jedis, keyPrefix, redisClock, clock, cluster, () -> "redis");
    }

    /**
     * @param name the instance's name, for its thread of late slot releases ({@link LateReleases}) and their log lines
     * @see #RedisEngine(UnifiedJedis, String, boolean, Clock, boolean)
     */
    public RedisEngine(UnifiedJedis jedis, String keyPrefix, boolean redisClock, Clock clock, boolean cluster,
                       Supplier<String> name) {
        this.jedis = jedis;
        this.roundTrips = new SharedRoundTrips(jedis, cluster);
        this.keyPrefix = keyPrefix;
        this.redisClock = redisClock;
        this.clock = clock;
        this.cluster = cluster;
        this.plans = new RuleCache<>(rule -> new RulePlan(rule, keyPrefix));
        this.late = new LateReleases(this::releaseNow, name, System::nanoTime, true);
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
                    releaseLater(acquisitions.get(i), d);
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
     * given back (best effort: a give-back that fails too is lost, the request counting; a slot's release
     * is sent again later), so that the
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
                releaseLater(acquisitions.get(j), d);
                e.addSuppressed(lost);
            }
        }
        return new PartialFailure(failed, e);
    }

    /** The time sent with a call: Redis's ({@link RequestCodec#REDIS_TIME}) or the instance's. */
    private double now() {
        return redisClock ? RequestCodec.REDIS_TIME : clock.millis();
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
        Acquisition first = acquisitions.get(0);
        if (n == 1 && what == Call.DECIDE && redisClock && first.cost() == first.rule().cost()
                && first.rule().calendar() == null && !first.rule().algorithm().isConcurrency()) {
            // the common case: its request encoded once, its reply one rule's
            RulePlan plan = plans.get(first.rule());
            ReplyCodec reply = new ReplyCodec(evaluate(List.of(plan.key(first.clientKey().value())), plan.onRedisClock));
            if (at != null) at[0] = reply.decidedAt();
            RuleDecision decision = reply.next(plan.rule, first.cost(), ThreadLocalRandom.current().nextLong(),
                    plan.rule.windowMillis());
            reply.end();
            return List.of(decision);
        }
        RulePlan[] rulePlans = new RulePlan[n];
        RequestCodec.Mode[] modes = new RequestCodec.Mode[n];
        CalendarBounds[] bounds = null; // the windows sent with calendar rules
        long[] slots = null; // the tokens concurrency rules take their slots under (decided here: the script stores them)
        int size = RequestCodec.NOW_BYTES;
        for (int i = 0; i < n; i++) {
            // a give-back is computed with the figures its take was decided with, which identify the take; a
            // charge is taken as a request now is, with the figures in force
            boolean charge = charges != null && charges[i];
            RulePlan plan = plans.get(what == Call.SETTLE && !charge ? taken.get(i).rule() : acquisitions.get(i).rule());
            rulePlans[i] = plan;
            modes[i] = switch (what) {
                case DECIDE -> plan.rule.dryRun() ? RequestCodec.Mode.SHADOW : RequestCodec.Mode.ENFORCING;
                case EVALUATE -> RequestCodec.Mode.EVALUATE;
                case SETTLE -> charge ? RequestCodec.Mode.CHARGE : RequestCodec.Mode.GIVE_BACK;
            };
            boolean slot = plan.concurrency && what != Call.SETTLE;
            size += RequestCodec.ruleSize(modes[i], plan.calendar != null, slot);
            if (slot) {
                if (slots == null) slots = new long[n];
                slots[i] = ThreadLocalRandom.current().nextLong();
            }
        }
        RequestCodec request = new RequestCodec(size, now);
        long around = redisClock ? clock.millis() + redisAhead : (long) now; // the estimate of the script's clock
        List<byte[]> keys = new ArrayList<>(what == Call.SETTLE ? 2 * n : n);
        for (int i = 0; i < n; i++) {
            RulePlan plan = rulePlans[i];
            Acquisition a = acquisitions.get(i);
            keys.add(plan.key(a.clientKey().value()));
            request.rule(plan.encoded, modes[i], a.cost());
            if (modes[i].settles()) request.take(taken.get(i).take());
            if (plan.calendar != null) {
                if (bounds == null) bounds = new CalendarBounds[n];
                CalendarBounds b = bounds[i] = plan.calendar.around(around);
                request.calendar(around, b.b0(), b.b1(), b.b2(), b.b3());
            }
            if (slots != null && plan.concurrency) request.slot(slots[i]);
        }
        List<byte[]> args;
        if (what == Call.SETTLE) {
            // once only: each take's token, and its once key (decide.lua's header); a slot's member
            for (int i = 0; i < n; i++) keys.add(onceKey(keys.get(i)));
            args = List.of(request.bytes(), RequestCodec.tokens(taken));
        } else {
            args = List.of(request.bytes());
        }
        byte[] replied;
        try {
            replied = evaluate(keys, args);
        } catch (LimiterUnavailableException e) {
            // the call may still have taken its slots (a reply after redis.timeout): released later, until sure
            if (slots != null && what == Call.DECIDE) late.add(slotsOf(acquisitions, rulePlans, slots), true);
            throw e;
        }
        ReplyCodec reply = new ReplyCodec(replied);
        long decidedAt = reply.decidedAt();
        if (bounds != null && redisClock) redisAhead = decidedAt - clock.millis(); // for the next calendar call's estimate
        List<RuleDecision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Rule rule = rulePlans[i].rule;
            long token = slots != null && rulePlans[i].concurrency ? slots[i] : ThreadLocalRandom.current().nextLong();
            long windowMs = bounds == null || bounds[i] == null ? rule.windowMillis()
                    : windowOf(rule, bounds[i], decidedAt, around);
            decisions.add(reply.next(rule, acquisitions.get(i).cost(), token, windowMs));
        }
        reply.end();
        if (at != null) {
            at[0] = decidedAt;
        }
        return decisions;
    }

    /**
     * The length of the calendar window the script decided {@code rule} in, having decided at
     * {@code decidedAt}: the window holding that time, or when it fell outside the boundaries sent,
     * the length of the one holding the time they were computed around, which the script counted from
     * its time (fixed-window.lua), logged.
     */
    private long windowOf(Rule rule, CalendarBounds sent, long decidedAt, long around) {
        if (sent.holds(decidedAt)) {
            return sent.lengthAt(decidedAt);
        }
        long last = lastClockWarning.get();
        long t = System.currentTimeMillis();
        if ((last == Long.MIN_VALUE || t - last >= LOG_INTERVAL_MS) && lastClockWarning.compareAndSet(last, t)) {
            log.warn("Redis's clock ({}) is outside the calendar windows this instance computed around {} for rule {}"
                    + " ({}): decided at Redis's time in the count running then, or in a window of this instance's current"
                    + " length from it; the next decisions use windows around Redis's time",
                    Instant.ofEpochMilli(decidedAt), Instant.ofEpochMilli(around), rule.name(), rule.calendar());
        }
        return sent.lengthAt(around);
    }

    /**
     * Settles each settlement in the script (docs/algorithms.md, "Giving back" and "Settling the cost"):
     * gives back what its decision took, releases a slot, or charges more; each once only, however often
     * the call is sent. In one call for all of them (one per settlement on a Cluster, where their keys
     * live in different slots). A failure is thrown as for a decision; a give-back or charge is not
     * retried, a slot's release is: Redis not answering it would hold the slot until its lease ends, so it
     * is sent again from the thread of late releases ({@link LateReleases}) until Redis answers.
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
            // one call each, each tried: a master away loses its own settlements, not the others' after it
            RuntimeException failure = null;
            for (int i = 0; i < acquisitions.size(); i++) {
                try {
                    call(List.of(acquisitions.get(i)), Call.SETTLE, List.of(taken.get(i)), new boolean[]{charges[i]}, at, now());
                } catch (RuntimeException e) {
                    releaseLater(acquisitions.get(i), taken.get(i));
                    if (failure == null) failure = e; else failure.addSuppressed(e);
                }
            }
            if (failure != null) throw failure;
        } else {
            try {
                call(acquisitions, Call.SETTLE, taken, charges, at, now());
            } catch (LimiterUnavailableException e) {
                for (int i = 0; i < acquisitions.size(); i++) releaseLater(acquisitions.get(i), taken.get(i));
                throw e;
            }
        }
    }

    /**
     * Releases concurrency slots later, from the thread of late releases, until Redis answers (each
     * given up when its lease would have ended): for releases the caller could not send now (the
     * node's circuit breaker open). Other settlements are ignored.
     */
    public void releaseLater(List<Settlement> releases) {
        List<Settlement> redis = new ArrayList<>(releases.size());
        for (Settlement s : releases) {
            if (s.taken().source() == RuleDecision.Source.REDIS) redis.add(s); // a slot of this engine's
        }
        late.add(redis, false);
    }

    /** A settlement Redis did not answer: sent again later if it is a slot's release. */
    private void releaseLater(Acquisition a, RuleDecision took) {
        if (took.rule().algorithm().isConcurrency()) late.add(List.of(Settlement.giveBack(a, took)), false);
    }

    /** Concurrency slots released late ({@link LateReleases}) since start: Redis answered their release when sent again. */
    public long slotsReleasedLate() {
        return late.released();
    }

    /** The releases of the slots a failed decision may have taken under {@code slots}' tokens. */
    private static List<Settlement> slotsOf(List<Acquisition> acquisitions, RulePlan[] plans, long[] slots) {
        List<Settlement> releases = new ArrayList<>(2);
        for (int i = 0; i < plans.length; i++) {
            if (!plans[i].concurrency) continue;
            RuleDecision took = new RuleDecision(plans[i].rule, true, 0, 0, 0, 0, 0,
                    new RuleDecision.Take(0, 0, 0, slots[i]), RuleDecision.Source.REDIS);
            releases.add(Settlement.giveBack(acquisitions.get(i), took));
        }
        return releases;
    }

    /** Sends slot releases once, for {@link LateReleases}: which Redis answered (one call; one each on a Cluster). */
    private boolean[] releaseNow(List<Settlement> releases) {
        int n = releases.size();
        boolean[] answered = new boolean[n];
        List<Acquisition> acquisitions = new ArrayList<>(n);
        List<RuleDecision> taken = new ArrayList<>(n);
        for (Settlement s : releases) {
            acquisitions.add(s.acquisition());
            taken.add(s.taken());
        }
        if (!cluster || n == 1) {
            call(acquisitions, Call.SETTLE, taken, null, null, now());
            Arrays.fill(answered, true);
            return answered;
        }
        LimiterUnavailableException failure = null;
        Set<Object> away = new HashSet<>(); // a master that failed one is not asked again this round: each would wait
        for (int i = 0; i < n; i++) {
            Object node = nodeOf(acquisitions.get(i));
            if (node != null && away.contains(node)) continue;
            try {
                call(List.of(acquisitions.get(i)), Call.SETTLE, List.of(taken.get(i)), null, null, now());
                answered[i] = true;
            } catch (LimiterUnavailableException e) {
                failure = e; // another master's may still be answered
                if (node != null) away.add(node);
            }
        }
        if (failure != null && !contains(answered, true)) throw failure;
        return answered;
    }

    private static boolean contains(boolean[] values, boolean value) {
        for (boolean v : values) if (v == value) return true;
        return false;
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
        if (!cluster || n == 1) return renewAll(acquisitions, taken);
        boolean[] held = new boolean[n];
        boolean[] reached = new boolean[n];
        LimiterUnavailableException failure = null;
        for (int i = 0; i < n; i++) {
            try {
                held[i] = renewAll(List.of(acquisitions.get(i)), List.of(taken.get(i)))[0];
                reached[i] = true;
            } catch (LimiterUnavailableException e) {
                failure = e; // the others are still renewed: a slot on another master
            }
        }
        if (failure != null) throw new RenewalIncomplete("Redis could not renew every lease", failure, held, reached);
        return held;
    }

    private boolean[] renewAll(List<Acquisition> acquisitions, List<RuleDecision> taken) {
        int n = acquisitions.size();
        List<byte[]> keys = new ArrayList<>(n);
        ByteBuffer packed = ByteBuffer.allocate(8 + n * 16).order(ByteOrder.LITTLE_ENDIAN);
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

    /** The once key of a state key (give-back.lua): the same key with {@code :once} appended, in the same slot. */
    private static byte[] onceKey(byte[] stateKey) {
        byte[] key = Arrays.copyOf(stateKey, stateKey.length + ONCE.length);
        System.arraycopy(ONCE, 0, key, stateKey.length, ONCE.length);
        return key;
    }

    /** The Redis node that decides {@code a} now, or null while the topology is not known. */
    public Object nodeOf(Acquisition a) {
        // one node serves every key but on a Cluster: the key is made for a Cluster's slot only
        return roundTrips.nodeOf(cluster ? plans.get(a.rule()).key(a.clientKey().value()) : null);
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

    /** Gives up the late releases still waiting (their slots free when their leases end); does not close the client, which the caller owns. */
    @Override
    public void close() {
        late.close();
    }

    /** What a rule sends with every call, encoded once. */
    private static final class RulePlan {
        final Rule rule;
        final byte[] keyHead;
        /** Its part of ARGV[1] ({@link RequestCodec#rule}), with the rule's own cost. */
        final byte[] encoded;
        /** The arguments of a request of this rule alone, at its own cost, on Redis's clock: its whole ARGV[1]. */
        final List<byte[]> onRedisClock;
        /** A calendar rule's windows, else null. */
        final CalendarCache calendar;
        /** A concurrency rule: its key ends with {@code :slots}, its requests send their take's token. */
        final boolean concurrency;

        RulePlan(Rule rule, String keyPrefix) {
            this.rule = rule;
            this.calendar = rule.calendar() == null ? null : new CalendarCache(rule.calendar());
            this.concurrency = rule.algorithm().isConcurrency();
            this.keyHead = (keyPrefix + "{" + rule.name() + ":").getBytes(StandardCharsets.UTF_8);
            this.encoded = RequestCodec.rule(rule);
            this.onRedisClock = List.of(RequestCodec.aloneOnRedisClock(encoded));
        }

        /** {@code <prefix>{<rule>:<client>}}; a concurrency rule's with {@code :slots} appended (a sorted set of its own). */
        byte[] key(String clientKey) {
            // a client key is ASCII (ClientKey: plain characters, '+', '#' and base64url): a char is its byte
            int n = clientKey.length();
            byte[] key = new byte[keyHead.length + n + (concurrency ? SLOTS.length : 1)];
            System.arraycopy(keyHead, 0, key, 0, keyHead.length);
            for (int i = 0; i < n; i++) key[keyHead.length + i] = (byte) clientKey.charAt(i);
            if (concurrency) {
                System.arraycopy(SLOTS, 0, key, keyHead.length + n, SLOTS.length);
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
        return assemble(name, null);
    }

    private static String assemble(String name, String section) {
        Matcher fragment = FRAGMENT.matcher(section(name, section));
        StringBuilder script = new StringBuilder();
        while (fragment.find()) {
            fragment.appendReplacement(script, Matcher.quoteReplacement(assemble(fragment.group(1), fragment.group(2))));
        }
        return fragment.appendTail(script).toString();
    }

    /** Resource {@code name} up to its first section ({@code section} null), or that section of it. */
    private static String section(String name, String section) {
        return section(name, resource(name), section);
    }

    /** {@code text}, resource {@code name}'s, up to its first section ({@code section} null), or that section. */
    static String section(String name, String text, String section) {
        Matcher marker = SECTION.matcher(text);
        int from = section == null ? 0 : -1;
        while (marker.find()) {
            if (from >= 0) return text.substring(from, marker.start());
            if (marker.group(1).equals(section)) from = marker.end();
        }
        if (from < 0) throw new IllegalStateException("script resource " + name + " has no section " + section);
        return text.substring(from);
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
