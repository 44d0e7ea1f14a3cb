package dev.sluice.internal.redis;

import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.internal.algorithm.RuleCache;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Clock;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The global engine: decides with one Lua script in Redis, so every instance sharing the Redis
 * shares the counts. The semantics are those of {@code dev.sluice.internal.algorithm}, bit for bit.
 *
 * <p><b>One round trip.</b> All acquisitions of a request go to Redis as one {@code EVALSHA} of
 * one script (assembled at class load from {@code common.lua}, one fragment per algorithm and the
 * dispatcher {@code decide.lua}, whose header documents KEYS, ARGV and the reply). The script
 * decides every rule, then writes only if all admit: a request denied by one rule takes nothing
 * from the others. When Redis has lost the script ({@code NOSCRIPT}: restart, failover,
 * {@code SCRIPT FLUSH}), the engine sends it once with {@code EVAL}, which also caches it again.
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

    /** The fragments of the script, in order. */
    private static final String[] SCRIPT_PARTS = {
            "common.lua", "fixed-window.lua", "sliding-window-counter.lua", "sliding-window-log.lua",
            "token-bucket.lua", "leaky-bucket.lua", "gcra.lua", "decide.lua"};
    static final String SCRIPT = assemble();
    private static final byte[] SCRIPT_BYTES = SCRIPT.getBytes(StandardCharsets.UTF_8);
    static final String SHA = sha1Hex(SCRIPT_BYTES);
    private static final byte[] SHA_BYTES = SHA.getBytes(StandardCharsets.US_ASCII);
    private static final byte[] REDIS_TIME = "redis".getBytes(StandardCharsets.US_ASCII);
    private static final int ARGS_PER_RULE = 6;
    private static final int REPLY_PER_RULE = 6;

    private final UnifiedJedis jedis;
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
        this.keyPrefix = keyPrefix;
        this.redisClock = redisClock;
        this.clock = clock;
        this.cluster = cluster;
        this.plans = new RuleCache<>(rule -> new RulePlan(rule, keyPrefix));
    }

    @Override
    public Decision decide(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        if (n == 0) {
            return Decision.none();
        }
        if (cluster && n > 1) {
            List<RuleDecision> decisions = new ArrayList<>(n);
            for (Acquisition a : acquisitions) {
                decisions.addAll(call(List.of(a)));
            }
            return Decision.of(decisions);
        }
        if (n > 1) {
            rejectDuplicates(acquisitions);
        }
        return Decision.of(call(acquisitions));
    }

    private List<RuleDecision> call(List<Acquisition> acquisitions) {
        int n = acquisitions.size();
        RulePlan[] rulePlans = new RulePlan[n];
        List<byte[]> keys = new ArrayList<>(n);
        List<byte[]> args = new ArrayList<>(1 + ARGS_PER_RULE * n);
        args.add(redisClock ? REDIS_TIME : ascii(clock.millis()));
        for (int i = 0; i < n; i++) {
            Acquisition a = acquisitions.get(i);
            RulePlan plan = plans.get(a.rule());
            rulePlans[i] = plan;
            keys.add(plan.key(a.clientKey().value()));
            for (byte[] arg : plan.args) {
                args.add(arg);
            }
            args.add(a.cost() == plan.rule.cost() ? plan.defaultCost : ascii(a.cost()));
        }
        List<?> reply = evaluate(keys, args);
        List<RuleDecision> decisions = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            int o = i * REPLY_PER_RULE;
            decisions.add(new RuleDecision(rulePlans[i].rule, (Long) reply.get(o) == 1L, (Long) reply.get(o + 1),
                    (Long) reply.get(o + 2), (Long) reply.get(o + 3), (Long) reply.get(o + 4), (Long) reply.get(o + 5),
                    RuleDecision.Source.REDIS));
        }
        return decisions;
    }

    private List<?> evaluate(List<byte[]> keys, List<byte[]> args) {
        try {
            try {
                return (List<?>) jedis.evalsha(SHA_BYTES, keys, args);
            } catch (JedisNoScriptException e) {
                return (List<?>) jedis.eval(SCRIPT_BYTES, keys, args); // caches the script again
            }
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

    private static byte[] ascii(long n) {
        return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
    }

    /** What a rule sends with every call, encoded once. */
    private static final class RulePlan {
        final Rule rule;
        final byte[] keyHead;
        final byte[][] args;
        final byte[] defaultCost;

        RulePlan(Rule rule, String keyPrefix) {
            RateAlgorithm.validate(rule);
            this.rule = rule;
            this.keyHead = (keyPrefix + "{" + rule.name() + ":").getBytes(StandardCharsets.UTF_8);
            this.args = new byte[][]{
                    rule.algorithm().id().getBytes(StandardCharsets.US_ASCII),
                    ascii(rule.limit()),
                    ascii(rule.windowMillis()),
                    ascii(rule.burst()),
                    ascii(rule.maxDelay().toMillis())};
            this.defaultCost = ascii(rule.cost());
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

    private static String assemble() {
        StringBuilder script = new StringBuilder();
        for (String part : SCRIPT_PARTS) {
            try (InputStream in = RedisEngine.class.getResourceAsStream(part)) {
                if (in == null) throw new IllegalStateException("missing script resource dev/sluice/internal/redis/" + part);
                script.append(new String(in.readAllBytes(), StandardCharsets.UTF_8)).append('\n');
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read script resource dev/sluice/internal/redis/" + part, e);
            }
        }
        return script.toString();
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
