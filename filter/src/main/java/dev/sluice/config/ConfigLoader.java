package dev.sluice.config;

import dev.sluice.Sluice;
import dev.sluice.config.SluiceConfig.Backend;
import dev.sluice.config.SluiceConfig.BreakerSettings;
import dev.sluice.config.SluiceConfig.ClockSource;
import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.config.SluiceConfig.HostPort;
import dev.sluice.config.SluiceConfig.Mode;
import dev.sluice.config.SluiceConfig.RedisSettings;
import dev.sluice.http.RequestMatcher;
import dev.sluice.key.Cidr;
import dev.sluice.key.ClientIpResolver.Header;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.InvalidRuleException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

import static dev.sluice.config.ConfigKeys.*;
import static dev.sluice.config.ConfigValues.options;

/**
 * Reads Sluice's configuration keys (see the README's configuration reference) into a validated,
 * immutable {@link SluiceConfig}, once, at start-up.
 *
 * <p>Keys and values are trimmed, then {@code ${NAME}}/{@code ${NAME:default}} placeholders are
 * substituted in every value (system property, then environment variable, then the default). A
 * blank value counts as not set. Every problem throws a {@link ConfigException} naming the key,
 * the value and what is accepted; the first problem is reported, found in this fixed order:
 * placeholders (keys sorted), unknown keys (sorted; with the nearest known key as a suggestion),
 * {@code rules}, keys of rules not listed in {@code rules} (sorted), the global keys, then each
 * rule in the order listed.
 */
public final class ConfigLoader {

    static final String DEFAULT_REDIS_URL = "redis://localhost:6379";
    static final int DEFAULT_SENTINEL_PORT = 26379;
    static final Duration DEFAULT_REDIS_TIMEOUT = Duration.ofMillis(50);
    static final int DEFAULT_POOL_MAX_TOTAL = 64;
    static final int DEFAULT_POOL_MIN_IDLE = 4;
    static final int DEFAULT_BREAKER_FAILURE_THRESHOLD = 3;
    static final Duration DEFAULT_BREAKER_OPEN_BASE = Duration.ofMillis(100);
    static final Duration DEFAULT_BREAKER_OPEN_MAX = Duration.ofSeconds(1);
    static final int DEFAULT_LOCAL_MAX_KEYS = 100_000;
    static final int DEFAULT_DENIED_CACHE_MAX_KEYS = 10_000;
    static final String DEFAULT_KEY_PREFIX = "rl:";
    static final int DEFAULT_IPV6_PREFIX = 64;
    static final int DEFAULT_STATUS_CODE = 429;
    static final Algorithm DEFAULT_ALGORITHM = Algorithm.TOKEN_BUCKET;
    static final String DEFAULT_KEY = "ip";
    static final String DEFAULT_MATCH = "/**";

    /** Large enough for any real limit, small enough to stay exact in Lua's double arithmetic. */
    static final long MAX_COUNT = Integer.MAX_VALUE;
    static final int MAX_KEY_PREFIX_LENGTH = 64;

    private static final Pattern RULE_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final Duration ONE_MS = Duration.ofMillis(1);

    /** Algorithms without a bucket: {@code burst} means nothing to them. */
    private static final Set<Algorithm> WINDOWS =
            EnumSet.of(Algorithm.FIXED_WINDOW, Algorithm.SLIDING_WINDOW_COUNTER, Algorithm.SLIDING_WINDOW_LOG);

    private static final String RULES_ACCEPTED =
            "comma-separated rule names of letters, digits, '_' and '-' (at most 64 characters each), e.g. api, login";
    private static final Pattern METHOD_ONLY = Pattern.compile("[A-Z]+");

    private final Placeholders placeholders;

    /** For tests: a loader with its own system-property and environment lookups. */
    ConfigLoader(Placeholders placeholders) {
        this.placeholders = placeholders;
    }

    /**
     * Builds the configuration from key/value pairs with the keys of the contract ({@code config}
     * is not accepted here: it is an init-param, see {@link #fromInitParams}).
     *
     * @throws ConfigException naming the key, the value and what is accepted
     */
    public static SluiceConfig load(Map<String, String> raw) {
        return new ConfigLoader(Placeholders.system()).parse(raw);
    }

    /** {@link #load(Map)} for {@link Properties} (including their defaults). */
    public static SluiceConfig load(Properties properties) {
        return load(toMap(properties));
    }

    /**
     * Builds the configuration from a filter's init-params. The {@code config} init-param, if
     * present, names a properties file read first: {@code classpath:/ratelimit.properties}
     * (through {@code classLoader}; the leading slash is optional), {@code file:/etc/app/x.properties}
     * or a plain file path; it may use placeholders. The other init-params override the file's values.
     *
     * @param initParams  the init-params, e.g. from {@code FilterConfig}
     * @param classLoader where {@code classpath:} resources are looked up, normally the web
     *                    application's; {@code null} means this library's
     * @throws ConfigException naming {@code config} if the file is missing or unreadable, else as {@link #load(Map)}
     */
    public static SluiceConfig fromInitParams(Map<String, String> initParams, ClassLoader classLoader) {
        return new ConfigLoader(Placeholders.system()).parseInitParams(initParams, classLoader);
    }

    SluiceConfig parseInitParams(Map<String, String> initParams, ClassLoader classLoader) {
        SortedMap<String, String> params = trimmed(initParams);
        String location = params.remove(CONFIG);
        SortedMap<String, String> merged = new TreeMap<>();
        if (location != null && !location.isEmpty()) {
            String resolved = placeholders.resolve(CONFIG, location).trim();
            SortedMap<String, String> file = trimmed(PropertiesFile.read(resolved, classLoader));
            if (file.containsKey(CONFIG)) {
                throw new ConfigException(CONFIG, file.get(CONFIG), "only an init-param: the properties file "
                        + resolved + " cannot name another file");
            }
            merged.putAll(file);
        }
        merged.putAll(params);
        return parse(merged);
    }

    SluiceConfig parse(Map<String, String> raw) {
        SortedMap<String, String> substituted = new TreeMap<>();
        trimmed(raw).forEach((key, value) -> substituted.put(key, placeholders.resolve(key, value).trim()));
        ConfigValues values = new ConfigValues(substituted);

        if (substituted.containsKey(CONFIG)) {
            throw new ConfigException(CONFIG, substituted.get(CONFIG), "accepted only as a filter init-param"
                    + " (ConfigLoader.fromInitParams), where it names a properties file: " + PropertiesFile.ACCEPTED);
        }
        rejectUnknownKeys(values);
        List<String> ruleNames = ruleNames(values);
        rejectUnlistedRules(values, ruleNames);

        FailurePolicy failurePolicy = values.choice(FAILURE_POLICY, FailurePolicy.OPEN,
                options("open", FailurePolicy.OPEN, "closed", FailurePolicy.CLOSED));
        Backend backend = values.choice(BACKEND, Backend.REDIS, options("redis", Backend.REDIS, "local", Backend.LOCAL));
        RedisSettings redis = redis(values);
        BreakerSettings breaker = breaker(values);
        int localMaxKeys = (int) values.integer(LOCAL_MAX_KEYS, DEFAULT_LOCAL_MAX_KEYS, 1, Integer.MAX_VALUE);
        boolean deniedCache = values.bool(DENIED_CACHE, true);
        int deniedCacheMaxKeys = (int) values.integer(DENIED_CACHE_MAX_KEYS, DEFAULT_DENIED_CACHE_MAX_KEYS, 1,
                Integer.MAX_VALUE);
        String keyPrefix = keyPrefix(values);
        ClockSource clock = values.choice(CLOCK, ClockSource.REDIS,
                options("redis", ClockSource.REDIS, "local", ClockSource.LOCAL));
        List<String> trustedProxies = cidrs(values, TRUSTED_PROXIES);
        Header clientIpHeader = values.choice(CLIENT_IP_HEADER, Header.X_FORWARDED_FOR,
                options("X-Forwarded-For", Header.X_FORWARDED_FOR, "Forwarded", Header.FORWARDED));
        int ipv6Prefix = (int) values.integer(IPV6_PREFIX, DEFAULT_IPV6_PREFIX, 0, 128);
        HeaderStyle headers = values.choice(HEADERS, HeaderStyle.BOTH, options("draft", HeaderStyle.DRAFT,
                "legacy", HeaderStyle.LEGACY, "both", HeaderStyle.BOTH, "none", HeaderStyle.NONE));
        int statusCode = (int) values.integer(STATUS_CODE, DEFAULT_STATUS_CODE, 400, 599);
        Mode mode = values.choice(MODE, Mode.ENFORCE, options("enforce", Mode.ENFORCE, "dry-run", Mode.DRY_RUN));
        List<String> exclude = patterns(values, EXCLUDE, List.of());
        List<String> exemptIps = cidrs(values, EXEMPT_IPS);

        List<RuleConfig> rules = new ArrayList<>();
        for (String name : ruleNames) {
            rules.add(ruleConfig(values, name, failurePolicy));
        }

        Map<String, String> extra = new TreeMap<>();
        substituted.forEach((key, value) -> extra.put(key, ConfigKeys.shown(key, value)));
        return new SluiceConfig(rules, backend, redis, keyPrefix, clock, failurePolicy, trustedProxies,
                clientIpHeader, ipv6Prefix, headers, statusCode, mode, exclude, exemptIps, localMaxKeys, deniedCache,
                deniedCacheMaxKeys, breaker, extra);
    }

    // ---- structure: which keys exist

    private static void rejectUnknownKeys(ConfigValues values) {
        for (Map.Entry<String, String> e : values.all().entrySet()) {
            String key = e.getKey();
            if (isGlobal(key) || ruleName(key) != null) continue;
            String nearest = nearest(key, known(mentionedRuleNames(values)));
            throw new ConfigException(key, e.getValue(), "not a Sluice key; "
                    + (nearest != null ? "did you mean " + nearest + "?"
                    : "the keys are " + String.join(", ", GLOBAL) + " and rule.<name>.{"
                    + String.join(", ", RULE) + "}"));
        }
    }

    /** Rule names from {@code rules} and from {@code rule.<name>.*} keys, to suggest keys from. */
    private static Set<String> mentionedRuleNames(ConfigValues values) {
        Set<String> names = new TreeSet<>();
        String listed = values.get(RULES);
        if (listed != null) names.addAll(ConfigValues.split(listed));
        for (String key : values.all().keySet()) {
            String name = ruleName(key);
            if (name != null) names.add(name);
        }
        return names;
    }

    private static List<String> ruleNames(ConfigValues values) {
        Set<String> names = new LinkedHashSet<>();
        for (String name : ConfigValues.split(values.required(RULES, RULES_ACCEPTED))) {
            if (!RULE_NAME.matcher(name).matches()) {
                throw new ConfigException(RULES, values.get(RULES), RULES_ACCEPTED + "; '" + name + "' is not a rule name");
            }
            if (!names.add(name)) {
                throw new ConfigException(RULES, values.get(RULES), RULES_ACCEPTED + "; '" + name + "' is listed twice");
            }
        }
        if (names.isEmpty()) throw new ConfigException(RULES, values.get(RULES), "required: " + RULES_ACCEPTED);
        return List.copyOf(names);
    }

    private static void rejectUnlistedRules(ConfigValues values, List<String> ruleNames) {
        for (Map.Entry<String, String> e : values.all().entrySet()) {
            String name = ruleName(e.getKey());
            if (name == null || ruleNames.contains(name)) continue;
            String nearest = nearest(e.getKey(), known(ruleNames));
            throw new ConfigException(e.getKey(), e.getValue(), "a key of rule '" + name + "', which is not listed in "
                    + RULES + " (" + String.join(", ", ruleNames) + "): add it there or remove the key"
                    + (nearest != null && !isGlobal(nearest) ? "; or did you mean " + nearest + "?" : ""));
        }
    }

    // ---- global settings

    private static RedisSettings redis(ConfigValues values) {
        List<HostPort> clusterNodes = values.isSet(REDIS_CLUSTER_NODES)
                ? HostPorts.parseList(REDIS_CLUSTER_NODES, values.get(REDIS_CLUSTER_NODES), RedisUrl.DEFAULT_PORT)
                : List.of();
        String sentinelMaster = values.get(REDIS_SENTINEL_MASTER);
        List<HostPort> sentinelNodes = values.isSet(REDIS_SENTINEL_NODES)
                ? HostPorts.parseList(REDIS_SENTINEL_NODES, values.get(REDIS_SENTINEL_NODES), DEFAULT_SENTINEL_PORT)
                : List.of();
        if (sentinelMaster != null && sentinelNodes.isEmpty()) {
            throw new ConfigException(REDIS_SENTINEL_NODES, values.get(REDIS_SENTINEL_NODES), "required with "
                    + REDIS_SENTINEL_MASTER + ": the sentinels as " + HostPorts.ACCEPTED.replace("6379", "26379"));
        }
        if (sentinelMaster == null && !sentinelNodes.isEmpty()) {
            throw new ConfigException(REDIS_SENTINEL_MASTER, null, "required with " + REDIS_SENTINEL_NODES
                    + ": the name of the master the sentinels monitor, e.g. mymaster");
        }
        boolean sentinel = sentinelMaster != null;
        boolean cluster = !clusterNodes.isEmpty();
        if (cluster && sentinel) {
            throw new ConfigException(REDIS_CLUSTER_NODES, values.get(REDIS_CLUSTER_NODES), "Redis Cluster and Sentinel"
                    + " exclude each other: set either " + REDIS_CLUSTER_NODES + " or " + REDIS_SENTINEL_MASTER
                    + " and " + REDIS_SENTINEL_NODES);
        }
        if ((cluster || sentinel) && values.isSet(REDIS_URL)) {
            throw new ConfigException(REDIS_URL, values.get(REDIS_URL), "only for a standalone Redis; with "
                    + (cluster ? REDIS_CLUSTER_NODES : REDIS_SENTINEL_MASTER) + " remove it (or leave it blank)"
                    + " and give credentials and TLS with " + REDIS_USER + ", " + REDIS_PASSWORD + " and " + REDIS_SSL);
        }

        RedisUrl url = cluster || sentinel ? null : RedisUrl.parse(values.string(REDIS_URL, DEFAULT_REDIS_URL));
        String user = values.string(REDIS_USER, url == null ? null : url.user());
        String password = values.string(REDIS_PASSWORD, url == null ? null : url.password());
        boolean ssl = values.bool(REDIS_SSL, url != null && url.ssl());

        Duration timeout = values.duration(REDIS_TIMEOUT, DEFAULT_REDIS_TIMEOUT, ONE_MS);
        int maxTotal = (int) values.integer(REDIS_POOL_MAX_TOTAL, DEFAULT_POOL_MAX_TOTAL, 1, Integer.MAX_VALUE);
        int maxIdle = (int) values.integer(REDIS_POOL_MAX_IDLE, maxTotal, 0, maxTotal);
        int minIdle = (int) values.integer(REDIS_POOL_MIN_IDLE, Math.min(DEFAULT_POOL_MIN_IDLE, maxIdle), 0, maxIdle);
        Duration maxWait = values.duration(REDIS_POOL_MAX_WAIT, timeout, Duration.ZERO);

        return new RedisSettings(url == null ? null : url.address().host(), url == null ? 0 : url.address().port(),
                url == null ? 0 : url.database(), user, password, ssl, clusterNodes, sentinelMaster, sentinelNodes,
                timeout, maxTotal, maxIdle, minIdle, maxWait);
    }

    private static BreakerSettings breaker(ConfigValues values) {
        int threshold = (int) values.integer(REDIS_BREAKER_FAILURE_THRESHOLD, DEFAULT_BREAKER_FAILURE_THRESHOLD,
                1, Integer.MAX_VALUE);
        Duration openBase = values.duration(REDIS_BREAKER_OPEN_BASE, DEFAULT_BREAKER_OPEN_BASE, ONE_MS);
        Duration defaultMax = openBase.compareTo(DEFAULT_BREAKER_OPEN_MAX) > 0 ? openBase : DEFAULT_BREAKER_OPEN_MAX;
        Duration openMax = values.duration(REDIS_BREAKER_OPEN_MAX, defaultMax, openBase);
        return new BreakerSettings(threshold, openBase, openMax);
    }

    private static String keyPrefix(ConfigValues values) {
        String prefix = values.string(KEY_PREFIX, DEFAULT_KEY_PREFIX);
        boolean bad = prefix.length() > MAX_KEY_PREFIX_LENGTH
                || prefix.chars().anyMatch(c -> c == '{' || c == '}' || Character.isWhitespace(c) || Character.isISOControl(c));
        if (bad) {
            throw new ConfigException(KEY_PREFIX, prefix, "a non-empty prefix of at most " + MAX_KEY_PREFIX_LENGTH
                    + " characters without '{', '}', whitespace or control characters, e.g. rl: or myapp:rl:");
        }
        return prefix;
    }

    private static List<String> cidrs(ConfigValues values, String key) {
        List<String> cidrs = values.list(key);
        for (String cidr : cidrs) {
            try {
                Cidr.parse(cidr);
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(key, cidr, bad.getMessage());
            }
        }
        return cidrs;
    }

    /** Comma-separated {@code [METHODS ]pattern} entries, validated by {@link RequestMatcher#parse}. */
    private static List<String> patterns(ConfigValues values, String key, List<String> defaultValue) {
        List<String> entries = values.isSet(key) ? values.list(key) : defaultValue;
        for (String entry : entries) {
            try {
                RequestMatcher.parse(List.of(entry));
            } catch (IllegalArgumentException bad) {
                String hint = METHOD_ONLY.matcher(entry).matches()
                        ? "; entries are separated by commas, so join several methods with |, e.g. GET|POST /api/**" : "";
                throw new ConfigException(key, values.get(key), bad.getMessage() + hint);
            }
        }
        return entries;
    }

    // ---- rules

    private static RuleConfig ruleConfig(ConfigValues values, String name, FailurePolicy globalPolicy) {
        String algorithmKey = rule(name, ALGORITHM);
        Algorithm algorithm = DEFAULT_ALGORITHM;
        if (values.isSet(algorithmKey)) {
            algorithm = Algorithm.fromId(values.get(algorithmKey));
            if (algorithm == null) {
                throw new ConfigException(algorithmKey, values.get(algorithmKey), "one of " + Algorithm.ids());
            }
        }
        long limit = values.requiredInteger(rule(name, LIMIT), 1, MAX_COUNT);
        Duration window = values.requiredDuration(rule(name, WINDOW), ONE_MS);

        String burstKey = rule(name, BURST);
        if (WINDOWS.contains(algorithm) && values.isSet(burstKey)) {
            throw new ConfigException(burstKey, values.get(burstKey), "only for token-bucket, leaky-bucket and gcra;"
                    + " " + algorithmKey + " is " + algorithm.id() + ", which allows exactly " + LIMIT
                    + " per " + WINDOW + ": remove " + burstKey);
        }
        long burst = values.integer(burstKey, limit, 1, MAX_COUNT);

        String costKey = rule(name, COST);
        long cost = values.integer(costKey, 1, 1, MAX_COUNT);
        if (cost > burst) {
            throw new ConfigException(costKey, values.get(costKey), "a whole number from 1 to " + burst + " (the rule's "
                    + (values.isSet(burstKey) ? BURST : LIMIT) + "): a request costing more could never be admitted");
        }

        String keyKey = rule(name, KEY);
        String key = values.string(keyKey, DEFAULT_KEY);
        try {
            KeyExpression.parse(key);
        } catch (IllegalArgumentException bad) {
            throw new ConfigException(keyKey, key, bad.getMessage());
        }

        List<String> match = patterns(values, rule(name, MATCH), List.of(DEFAULT_MATCH));
        FailurePolicy failurePolicy = values.choice(rule(name, RULE_FAILURE_POLICY), globalPolicy,
                options("open", FailurePolicy.OPEN, "closed", FailurePolicy.CLOSED));
        long fallbackLimit = values.integer(rule(name, FALLBACK_LIMIT), limit, 1, MAX_COUNT);

        String maxDelayKey = rule(name, MAX_DELAY);
        if (algorithm != Algorithm.LEAKY_BUCKET && values.isSet(maxDelayKey)) {
            throw new ConfigException(maxDelayKey, values.get(maxDelayKey), "only for leaky-bucket; " + algorithmKey
                    + " is " + algorithm.id() + ": remove " + maxDelayKey + " or use algorithm leaky-bucket");
        }
        Duration maxDelay = values.duration(maxDelayKey, Duration.ZERO, Duration.ZERO);

        Rule rule;
        try {
            rule = new Rule(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay);
        } catch (InvalidRuleException invalid) {
            String badKey = rule(name, invalid.field());
            throw new ConfigException(badKey, values.get(badKey), invalid.problem());
        }
        return new RuleConfig(rule, key, match);
    }

    // ---- input

    /** Trims keys and values; a null value becomes blank. Two keys equal once trimmed are an error. */
    private static SortedMap<String, String> trimmed(Map<String, String> raw) {
        SortedMap<String, String> sorted = new TreeMap<>();
        for (Map.Entry<String, String> e : raw.entrySet()) {
            if (e.getKey() == null) throw new ConfigException("(null)", e.getValue(), "keys must not be null");
            sorted.put(e.getKey(), e.getValue());
        }
        SortedMap<String, String> out = new TreeMap<>();
        for (Map.Entry<String, String> e : sorted.entrySet()) {
            String key = e.getKey().trim();
            String value = e.getValue() == null ? "" : e.getValue().trim();
            if (out.put(key, value) != null) {
                throw new ConfigException(key, value, "each key once; it is given twice (with different whitespace)");
            }
        }
        return out;
    }

    static Map<String, String> toMap(Properties properties) {
        Map<String, String> map = new TreeMap<>();
        for (String name : properties.stringPropertyNames()) {
            map.put(name, properties.getProperty(name));
        }
        return map;
    }
}
