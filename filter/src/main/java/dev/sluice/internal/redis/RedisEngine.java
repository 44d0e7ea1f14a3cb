package dev.sluice.internal.redis;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The global engine: decides with one Lua script in Redis, so every instance sharing the Redis
 * shares the counts. The semantics are those of {@code dev.sluice.internal.algorithm}, bit for bit.
 *
 * <p><b>One round trip.</b> All acquisitions of a request go to Redis as one {@code EVALSHA} of
 * one script (assembled at class load: {@code decide.lua}, whose header documents KEYS, ARGV and
 * the reply, with one fragment per algorithm spliced in), one packed argument for all of them
 * and a packed reply. The script
 * decides every rule, then writes only if all admit: a request denied by one rule takes nothing
 * from the others. When Redis has lost the script ({@code NOSCRIPT}: restart, failover,
 * {@code SCRIPT FLUSH}), the engine sends it once, which also caches it again.
 *
 * <p><b>Shared round trips.</b> Calls go through {@link SharedRoundTrips}: while one is in flight
 * to a node, the calls of other requests to that node queue and go together in the next round trip,
 * pipelined, each still its own script call; the first goes at once.
 *
 * <p><b>Keys.</b> One key per rule per client: {@code <keyPrefix>{<rule>:<clientKey>}}. The hash
 * tag puts all of a client's state for a rule in one Cluster slot. Each key expires when its
 * state is back to full, plus at most a second.
 *
 * <p><b>Cluster.</b> Keys of different rules hash to different slots, so with
 * {@code cluster=true} each rule is decided by its own call (still one round trip per rule) and
 * atomicity is per rule: a request denied by a later rule may already have taken from an earlier
 * one. Single-rule requests are unaffected.
 *
 * <p><b>Clock.</b> {@code redisClock=true}: the script reads Redis's {@code TIME}, one clock for
 * the fleet. {@code false}: the caller passes {@code clock.millis()}; states never move back in
 * time, so a lagging instance cannot mint tokens.
 *
 * <p><b>Failures.</b> Connection failures, timeouts and Redis refusing to run the script (OOM,
 * READONLY, LOADING, BUSY...) surface as {@link LimiterUnavailableException}, flagged as a
 * timeout when a socket read timed out or no pooled connection came in time.
 */
public final class RedisEngine implements RateLimiter {

    /** Where decide.lua takes a fragment: a line holding only {@code --[[ name.lua ]]}. */
    private static final Pattern FRAGMENT = Pattern.compile("(?m)^[ \\t]*--\\[\\[ ([a-z-]+\\.lua) ]]$");
    static final String SCRIPT = assemble();
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    /** ARGV[1]: now (a double), then per acquisition the algorithm (a byte) and 5 doubles; see decide.lua. */
    private static final int NOW_BYTES = 8;
    private static final int RULE_BYTES = 1 + 5 * 8;
    private static final int COST_OFFSET = RULE_BYTES - 8;
    /** "Read Redis's TIME" in place of the time. */
    private static final double REDIS_TIME = -1;
    private static final int REPLY_PER_RULE = 6;

    private final UnifiedJedis jedis;
    private final SharedRoundTrips roundTrips;
    private final String keyPrefix;
    private final boolean redisClock;
    private final Clock clock;
    private final boolean cluster;
    private final RuleCache<RulePlan> plans;

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
        if (cluster && n > 1) {
            List<RuleDecision> decisions = new ArrayList<>(n);
            for (Acquisition a : acquisitions) {
                decisions.addAll(call(List.of(a), at));
            }
            return Decision.of(decisions);
        }
        if (n > 1) {
            rejectDuplicates(acquisitions);
        }
        return Decision.of(call(acquisitions, at));
    }

    /** @param at where to put the script's time, or null */
    private List<RuleDecision> call(List<Acquisition> acquisitions, long[] at) {
        int n = acquisitions.size();
        RulePlan[] rulePlans = new RulePlan[n];
        List<byte[]> keys = new ArrayList<>(n);
        byte[] request;
        Acquisition first = acquisitions.get(0);
        if (n == 1 && redisClock && first.cost() == first.rule().cost()) {
            rulePlans[0] = plans.get(first.rule());
            keys.add(rulePlans[0].key(first.clientKey().value()));
            request = rulePlans[0].onRedisClock; // the common case, encoded once
        } else {
            ByteBuffer packed = ByteBuffer.allocate(NOW_BYTES + RULE_BYTES * n).order(ByteOrder.LITTLE_ENDIAN);
            packed.putDouble(redisClock ? REDIS_TIME : clock.millis());
            for (int i = 0; i < n; i++) {
                Acquisition a = acquisitions.get(i);
                RulePlan plan = plans.get(a.rule());
                rulePlans[i] = plan;
                keys.add(plan.key(a.clientKey().value()));
                int o = packed.position();
                packed.put(plan.encoded);
                packed.putDouble(o + COST_OFFSET, a.cost());
            }
            request = packed.array();
        }
        ByteBuffer reply = ByteBuffer.wrap(evaluate(keys, List.of(request))).order(ByteOrder.LITTLE_ENDIAN);
        List<RuleDecision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            decisions.add(new RuleDecision(rulePlans[i].rule, reply.getDouble() == 1, (long) reply.getDouble(),
                    (long) reply.getDouble(), (long) reply.getDouble(), (long) reply.getDouble(), (long) reply.getDouble(),
                    RuleDecision.Source.REDIS));
        }
        if (at != null) {
            at[0] = (long) reply.getDouble();
        }
        return decisions;
    }

    private byte[] evaluate(List<byte[]> keys, List<byte[]> args) {
        try {
            return (byte[]) roundTrips.evalsha(SHA_BYTES, SCRIPT_BYTES, keys, args);
        } catch (JedisException e) {
            throw new LimiterUnavailableException("Redis could not decide: " + e.getMessage(), e, isTimeout(e));
        }
    }

    private static boolean isTimeout(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            // NoSuchElementException: the pool had no connection within max-wait
            if (t instanceof SocketTimeoutException || t instanceof NoSuchElementException) return true;
            if (t.getCause() == t) break;
        }
        return false;
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

    /** How this engine's calls reach Redis (tests watch its round trips). */
    SharedRoundTrips roundTrips() {
        return roundTrips;
    }

    /** The key of {@code rule} for {@code clientKey}, as the script sees it. */
    public String key(Rule rule, ClientKey clientKey) {
        return keyPrefix + "{" + rule.name() + ":" + clientKey + "}";
    }

    /** Deletes the client's key of this rule. */
    @Override
    public void reset(Rule rule, ClientKey clientKey) {
        try {
            jedis.del(plans.get(rule).key(clientKey.value()));
        } catch (JedisException e) {
            throw new LimiterUnavailableException("Redis could not reset " + rule.name() + " for " + clientKey
                    + ": " + e.getMessage(), e, isTimeout(e));
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

        RulePlan(Rule rule, String keyPrefix) {
            RateAlgorithm.validate(rule);
            this.rule = rule;
            this.keyHead = (keyPrefix + "{" + rule.name() + ":").getBytes(StandardCharsets.UTF_8);
            this.encoded = ByteBuffer.allocate(RULE_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .put(algorithmId(rule.algorithm()))
                    .putDouble(rule.limit())
                    .putDouble(rule.windowMillis())
                    .putDouble(rule.burst())
                    .putDouble(rule.maxDelay().toMillis())
                    .putDouble(rule.cost())
                    .array();
            this.onRedisClock = ByteBuffer.allocate(NOW_BYTES + RULE_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                    .putDouble(REDIS_TIME).put(encoded).array();
        }

        /** The script's number of an algorithm (decide.lua). */
        private static byte algorithmId(Algorithm algorithm) {
            return switch (algorithm) {
                case FIXED_WINDOW -> 1;
                case SLIDING_WINDOW_COUNTER -> 2;
                case SLIDING_WINDOW_LOG -> 3;
                case TOKEN_BUCKET -> 4;
                case LEAKY_BUCKET -> 5;
                case GCRA -> 6;
            };
        }

        byte[] key(String clientKey) {
            byte[] client = clientKey.getBytes(StandardCharsets.UTF_8);
            byte[] key = new byte[keyHead.length + client.length + 1];
            System.arraycopy(keyHead, 0, key, 0, keyHead.length);
            System.arraycopy(client, 0, key, keyHead.length, client.length);
            key[key.length - 1] = '}';
            return key;
        }
    }

    /** decide.lua with each fragment it names spliced in where it names it. */
    private static String assemble() {
        Matcher fragment = FRAGMENT.matcher(resource("decide.lua"));
        StringBuilder script = new StringBuilder();
        while (fragment.find()) {
            fragment.appendReplacement(script, Matcher.quoteReplacement(resource(fragment.group(1))));
        }
        return fragment.appendTail(script).toString();
    }

    private static String resource(String name) {
        try (InputStream in = RedisEngine.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("missing script resource dev/sluice/internal/redis/" + name);
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read script resource dev/sluice/internal/redis/" + name, e);
        }
    }

    private static String sha1Hex(byte[] bytes) {
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
