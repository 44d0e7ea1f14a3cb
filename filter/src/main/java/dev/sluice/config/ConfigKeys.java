package dev.sluice.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The names of every configuration key Sluice reads, in one place: the loader reads them, the
 * unknown-key check accepts exactly them, and the documentation test checks that each one is in
 * the README's configuration reference. Also knows which keys hold secrets and how to show their values.
 */
final class ConfigKeys {

    /** Init-param only: where to read a properties file. */
    static final String CONFIG = "config";

    static final String RULES = "rules";
    static final String BACKEND = "backend";
    static final String REDIS_URL = "redis.url";
    static final String REDIS_CLUSTER_NODES = "redis.cluster.nodes";
    static final String REDIS_CLUSTER_REFRESH_PERIOD = "redis.cluster.refresh-period";
    static final String REDIS_SENTINEL_MASTER = "redis.sentinel.master";
    static final String REDIS_SENTINEL_NODES = "redis.sentinel.nodes";
    static final String REDIS_USER = "redis.user";
    static final String REDIS_PASSWORD = "redis.password";
    static final String REDIS_SSL = "redis.ssl";
    static final String REDIS_TIMEOUT = "redis.timeout";
    static final String REDIS_POOL_MAX_TOTAL = "redis.pool.max-total";
    static final String REDIS_POOL_MAX_IDLE = "redis.pool.max-idle";
    static final String REDIS_POOL_MIN_IDLE = "redis.pool.min-idle";
    static final String REDIS_POOL_MAX_WAIT = "redis.pool.max-wait";
    static final String REDIS_BREAKER_FAILURE_THRESHOLD = "redis.breaker.failure-threshold";
    static final String REDIS_BREAKER_OPEN_BASE = "redis.breaker.open-base";
    static final String REDIS_BREAKER_OPEN_MAX = "redis.breaker.open-max";
    static final String LOCAL_MAX_KEYS = "local.max-keys";
    static final String MAX_HELD_REQUESTS = "max-held-requests";
    static final String DENIED_CACHE = "denied-cache";
    static final String DENIED_CACHE_MAX_KEYS = "denied-cache.max-keys";
    static final String DENIED_CACHE_REVALIDATE = "denied-cache.revalidate";
    static final String KEY_PREFIX = "key-prefix";
    static final String CLOCK = "clock";
    static final String FAILURE_POLICY = "failure-policy";
    static final String TRUSTED_PROXIES = "trusted-proxies";
    static final String CLIENT_IP_HEADER = "client-ip-header";
    static final String IPV6_PREFIX = "ipv6-prefix";
    static final String HEADERS = "headers";
    static final String STATUS_CODE = "status-code";
    static final String MODE = "mode";
    static final String EXCLUDE = "exclude";
    static final String EXEMPT_IPS = "exempt-ips";
    static final String RELOAD = "reload";
    static final String METRICS_MICROMETER = "metrics.micrometer";

    /** Every global key, in the order of the documentation. */
    static final List<String> GLOBAL = List.of(
            RULES, BACKEND, REDIS_URL, REDIS_CLUSTER_NODES, REDIS_CLUSTER_REFRESH_PERIOD, REDIS_SENTINEL_MASTER, REDIS_SENTINEL_NODES,
            REDIS_USER, REDIS_PASSWORD, REDIS_SSL, REDIS_TIMEOUT, REDIS_POOL_MAX_TOTAL, REDIS_POOL_MAX_IDLE,
            REDIS_POOL_MIN_IDLE, REDIS_POOL_MAX_WAIT, REDIS_BREAKER_FAILURE_THRESHOLD, REDIS_BREAKER_OPEN_BASE,
            REDIS_BREAKER_OPEN_MAX, LOCAL_MAX_KEYS, MAX_HELD_REQUESTS, DENIED_CACHE, DENIED_CACHE_MAX_KEYS, DENIED_CACHE_REVALIDATE, KEY_PREFIX, CLOCK, FAILURE_POLICY, TRUSTED_PROXIES,
            CLIENT_IP_HEADER, IPV6_PREFIX, HEADERS, STATUS_CODE, MODE, EXCLUDE, EXEMPT_IPS, RELOAD,
            METRICS_MICROMETER);

    static final String RULE_PREFIX = "rule.";

    static final String ALGORITHM = "algorithm";
    static final String LIMIT = "limit";
    static final String WINDOW = "window";
    static final String LEASE = "lease";
    static final String BURST = "burst";
    static final String KEY = "key";
    static final String KEY_CASE = "key-case";
    static final String MATCH = "match";
    static final String COST = "cost";
    static final String ACTUAL_COST = "actual-cost";
    static final String MAX_ACTUAL_COST = "max-actual-cost";
    static final String RULE_FAILURE_POLICY = "failure-policy";
    static final String FALLBACK_LIMIT = "fallback-limit";
    static final String MAX_DELAY = "max-delay";
    static final String SYNC = "sync";
    static final String CALENDAR = "calendar";
    static final String RULE_MODE = "mode";
    static final String COUNT = "count";
    static final String PLAN = "plan";
    static final String PLANS = "plans";
    static final String PLAN_SOURCE_TRUSTED = "plan.source-trusted";

    /** The keys of a rule that are not a plan's, the part after {@code rule.<name>.}. */
    static final List<String> RULE = List.of(
            ALGORITHM, LIMIT, WINDOW, LEASE, BURST, KEY, KEY_CASE, MATCH, COST, ACTUAL_COST, MAX_ACTUAL_COST,
            RULE_FAILURE_POLICY,
            FALLBACK_LIMIT, MAX_DELAY,
            SYNC, CALENDAR, RULE_MODE, COUNT, PLAN, PLAN_SOURCE_TRUSTED, PLANS);

    /** The keys of a plan, the part after {@code rule.<name>.plan.<plan>.}. */
    static final List<String> PLAN_KEYS = List.of(LIMIT, WINDOW, BURST, FALLBACK_LIMIT);

    /** Every rule key as the documentation lists it, in its order. */
    static final List<String> RULE_DOCUMENTED = documented();

    private static final Set<String> GLOBAL_SET = Set.copyOf(GLOBAL);
    private static final Set<String> RULE_SET = Set.copyOf(RULE);
    private static final Set<String> PLAN_SET = Set.copyOf(PLAN_KEYS);

    private static List<String> documented() {
        List<String> keys = new ArrayList<>(RULE);
        for (String k : PLAN_KEYS) keys.add(PLAN + ".<p>." + k);
        return List.copyOf(keys);
    }

    static final String MASK = "****";

    private ConfigKeys() {
    }

    /** {@code rule.<name>.<key>}. */
    static String rule(String name, String key) {
        return RULE_PREFIX + name + "." + key;
    }

    static boolean isGlobal(String key) {
        return GLOBAL_SET.contains(key);
    }

    /** A rule's own key ({@code limit}) or a plan's ({@code plan.gold.limit}). */
    static boolean isRuleKey(String subKey) {
        return RULE_SET.contains(subKey) || planName(subKey) != null;
    }

    /** {@code rule.<name>.plan.<plan>.<key>}. */
    static String planKey(String rule, String plan, String key) {
        return rule(rule, PLAN + "." + plan + "." + key);
    }

    /** The plan of a rule sub-key {@code plan.<plan>.<key>} whose key is a plan key, else null. */
    static String planName(String subKey) {
        if (!subKey.startsWith(PLAN + ".")) return null;
        int dot = subKey.indexOf('.', PLAN.length() + 1);
        if (dot <= PLAN.length() + 1 || !PLAN_SET.contains(subKey.substring(dot + 1))) return null;
        return subKey.substring(PLAN.length() + 1, dot);
    }

    /**
     * The rule name of a {@code rule.<name>.<key>} key whose {@code <key>} is a known rule key, or
     * {@code null} if {@code key} has another shape. Rule names contain no dot.
     */
    static String ruleName(String key) {
        if (!key.startsWith(RULE_PREFIX)) return null;
        int dot = key.indexOf('.', RULE_PREFIX.length());
        if (dot <= RULE_PREFIX.length()) return null;
        return isRuleKey(key.substring(dot + 1)) ? key.substring(RULE_PREFIX.length(), dot) : null;
    }

    /** The part after {@code rule.<name>.} of a key for which {@link #ruleName} is not null. */
    static String ruleSubKey(String key) {
        return key.substring(key.indexOf('.', RULE_PREFIX.length()) + 1);
    }

    /** Every key a configuration with these rule names accepts (plan keys of the plans named in {@code plans}). */
    static List<String> known(Collection<String> ruleNames) {
        return known(ruleNames, java.util.Map.of());
    }

    static List<String> known(Collection<String> ruleNames, java.util.Map<String, ? extends Collection<String>> plans) {
        List<String> all = new ArrayList<>(GLOBAL);
        for (String name : ruleNames) {
            for (String sub : RULE) all.add(rule(name, sub));
            Collection<String> planNames = plans.get(name);
            for (String plan : planNames == null ? List.<String>of() : planNames) {
                for (String sub : PLAN_KEYS) all.add(planKey(name, plan, sub));
            }
        }
        return all;
    }

    /**
     * How a value may appear in messages, {@code toString} and {@link SluiceConfig#extra()}: the
     * password is replaced by {@value #MASK}, in {@code redis.password} and in {@code redis.url};
     * the value of an unknown key is never shown at all, since the likeliest typo of a secret key
     * ({@code redis.pasword=hunter2}) holds a secret.
     */
    static String shown(String key, String value) {
        if (value == null) return null;
        if (REDIS_PASSWORD.equals(key)) return value.isEmpty() ? value : MASK;
        if (REDIS_URL.equals(key)) return RedisUrl.masked(value);
        if (!isGlobal(key) && ruleName(key) == null && !CONFIG.equals(key)) return value.isEmpty() ? value : MASK;
        return value;
    }

    /**
     * The known key closest to {@code unknown} (case-insensitive edit distance), if it is close
     * enough to be the likely intent, else {@code null}.
     */
    static String nearest(String unknown, Collection<String> candidates) {
        String wanted = unknown.toLowerCase(Locale.ROOT);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : candidates) {
            int d = distance(wanted, candidate.toLowerCase(Locale.ROOT));
            if (d < bestDistance) {
                best = candidate;
                bestDistance = d;
            }
        }
        int tolerated = Math.max(2, wanted.length() / 3);
        return bestDistance <= tolerated ? best : null;
    }

    /** Levenshtein distance. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) previous[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }
}
