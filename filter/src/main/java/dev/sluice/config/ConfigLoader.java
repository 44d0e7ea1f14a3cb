package dev.sluice.config;

import dev.sluice.config.SluiceConfig.Backend;
import dev.sluice.config.SluiceConfig.ClockSource;
import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.config.SluiceConfig.HostPort;
import dev.sluice.config.SluiceConfig.Mode;
import dev.sluice.http.RequestMatcher;
import dev.sluice.key.Cidr;
import dev.sluice.key.CidrSet;
import dev.sluice.key.ClientIpResolver.Header;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.InvalidRuleException;
import dev.sluice.limiter.Rule;

import java.time.Duration;
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

    static final int DEFAULT_SENTINEL_PORT = 26379;
    static final Algorithm DEFAULT_ALGORITHM = Algorithm.TOKEN_BUCKET;
    static final String DEFAULT_MATCH = "/**";

    private static final Duration ONE_MS = Duration.ofMillis(1);
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

        SluiceConfig.Builder b = SluiceConfig.builder().source(substituted);
        FailurePolicy failurePolicy = values.choice(FAILURE_POLICY, FailurePolicy.OPEN,
                options("open", FailurePolicy.OPEN, "closed", FailurePolicy.CLOSED));
        b.failurePolicy(failurePolicy);
        b.backend(values.choice(BACKEND, Backend.REDIS, options("redis", Backend.REDIS, "local", Backend.LOCAL)));
        redis(values, b);
        breaker(values, b);
        integer(values, LOCAL_MAX_KEYS, b::localMaxKeys);
        b.deniedCache(values.bool(DENIED_CACHE, true));
        integer(values, DENIED_CACHE_MAX_KEYS, b::deniedCacheMaxKeys);
        duration(values, DENIED_CACHE_REVALIDATE, b::deniedCacheRevalidate);
        if (values.isSet(KEY_PREFIX)) b.keyPrefix(values.get(KEY_PREFIX));
        b.clock(values.choice(CLOCK, ClockSource.REDIS, options("redis", ClockSource.REDIS, "local", ClockSource.LOCAL)));
        b.trustedProxies(cidrs(values, TRUSTED_PROXIES));
        b.clientIpHeader(values.choice(CLIENT_IP_HEADER, Header.X_FORWARDED_FOR,
                options("X-Forwarded-For", Header.X_FORWARDED_FOR, "Forwarded", Header.FORWARDED)));
        integer(values, IPV6_PREFIX, b::ipv6Prefix);
        b.headers(values.choice(HEADERS, HeaderStyle.BOTH, options("draft", HeaderStyle.DRAFT,
                "legacy", HeaderStyle.LEGACY, "both", HeaderStyle.BOTH, "none", HeaderStyle.NONE)));
        integer(values, STATUS_CODE, b::statusCode);
        b.mode(values.choice(MODE, Mode.ENFORCE, options("enforce", Mode.ENFORCE, "dry-run", Mode.DRY_RUN)));
        b.exclude(matcher(values, EXCLUDE, null));
        b.exemptIps(cidrs(values, EXEMPT_IPS));
        for (String name : ruleNames) {
            b.rule(ruleConfig(values, name, failurePolicy));
        }
        return b.build();
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
            if (!Rule.NAME.matcher(name).matches()) {
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

    // ---- global settings: text to values; the builder checks ranges and combinations

    private static void redis(ConfigValues values, SluiceConfig.Builder b) {
        if (values.isSet(REDIS_CLUSTER_NODES)) {
            b.redisClusterNodes(HostPorts.parseList(REDIS_CLUSTER_NODES, values.get(REDIS_CLUSTER_NODES), RedisUrl.DEFAULT_PORT));
        }
        List<HostPort> sentinelNodes = values.isSet(REDIS_SENTINEL_NODES)
                ? HostPorts.parseList(REDIS_SENTINEL_NODES, values.get(REDIS_SENTINEL_NODES), DEFAULT_SENTINEL_PORT)
                : List.of();
        b.redisSentinel(values.get(REDIS_SENTINEL_MASTER), sentinelNodes);
        if (values.isSet(REDIS_URL)) b.redisUrl(values.get(REDIS_URL));
        if (values.isSet(REDIS_USER)) b.redisUser(values.get(REDIS_USER));
        if (values.isSet(REDIS_PASSWORD)) b.redisPassword(values.get(REDIS_PASSWORD));
        if (values.isSet(REDIS_SSL)) b.redisSsl(values.bool(REDIS_SSL, false));
        duration(values, REDIS_TIMEOUT, b::redisTimeout);
        integer(values, REDIS_POOL_MAX_TOTAL, b::redisPoolMaxTotal);
        integer(values, REDIS_POOL_MAX_IDLE, b::redisPoolMaxIdle);
        integer(values, REDIS_POOL_MIN_IDLE, b::redisPoolMinIdle);
        duration(values, REDIS_POOL_MAX_WAIT, b::redisPoolMaxWait);
    }

    private static void breaker(ConfigValues values, SluiceConfig.Builder b) {
        integer(values, REDIS_BREAKER_FAILURE_THRESHOLD, b::breakerFailureThreshold);
        duration(values, REDIS_BREAKER_OPEN_BASE, b::breakerOpenBase);
        duration(values, REDIS_BREAKER_OPEN_MAX, b::breakerOpenMax);
    }

    /** A whole number that fits an int, when set; its range is the builder's to check. */
    private static void integer(ConfigValues values, String key, java.util.function.IntConsumer setter) {
        if (values.isSet(key)) setter.accept((int) values.integer(key, 0, Integer.MIN_VALUE, Integer.MAX_VALUE));
    }

    /** A duration with a unit, when set; its bounds are the builder's to check. */
    private static void duration(ConfigValues values, String key, java.util.function.Consumer<Duration> setter) {
        if (values.isSet(key)) setter.accept(Durations.parse(key, values.get(key)));
    }

    private static CidrSet cidrs(ConfigValues values, String key) {
        List<String> entries = values.list(key);
        for (String cidr : entries) {
            try {
                Cidr.parse(cidr);
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(key, cidr, bad.getMessage());
            }
        }
        return CidrSet.parse(entries);
    }

    /** Comma-separated {@code [METHODS ]pattern} entries, compiled once. */
    private static RequestMatcher matcher(ConfigValues values, String key, String defaultValue) {
        List<String> entries = values.isSet(key) ? values.list(key)
                : defaultValue == null ? List.of() : List.of(defaultValue);
        try {
            return RequestMatcher.parse(entries);
        } catch (IllegalArgumentException bad) {
            String entry = entries.stream().filter(e -> METHOD_ONLY.matcher(e).matches()).findFirst().orElse(null);
            String hint = entry != null
                    ? "; entries are separated by commas, so join several methods with |, e.g. GET|POST /api/**" : "";
            throw new ConfigException(key, values.get(key), bad.getMessage() + hint);
        }
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
        long limit = values.requiredInteger(rule(name, LIMIT), 1, Rule.MAX_COUNT);
        Duration window = values.requiredDuration(rule(name, WINDOW), ONE_MS);
        long burst = values.integer(rule(name, BURST), limit, 1, Rule.MAX_COUNT);
        long cost = values.integer(rule(name, COST), 1, 1, Rule.MAX_COUNT);
        FailurePolicy failurePolicy = values.choice(rule(name, RULE_FAILURE_POLICY), globalPolicy,
                options("open", FailurePolicy.OPEN, "closed", FailurePolicy.CLOSED));
        long fallbackLimit = values.integer(rule(name, FALLBACK_LIMIT), limit, 1, Rule.MAX_COUNT);
        Duration maxDelay = values.duration(rule(name, MAX_DELAY), Duration.ZERO, Duration.ZERO);
        Rule rule;
        try {
            rule = new Rule(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay);
        } catch (InvalidRuleException invalid) {
            String badKey = rule(name, invalid.field());
            String problem = MAX_DELAY.equals(invalid.field()) ? "only for leaky-bucket; " + algorithmKey + " is "
                    + algorithm.id() + ": remove " + badKey + " or use algorithm leaky-bucket" : invalid.problem();
            throw new ConfigException(badKey, values.get(badKey), problem);
        }

        String keyKey = rule(name, KEY);
        KeyExpression key;
        try {
            key = values.isSet(keyKey) ? KeyExpression.parse(values.get(keyKey)) : RuleConfig.DEFAULT_KEY;
        } catch (IllegalArgumentException bad) {
            throw new ConfigException(keyKey, values.get(keyKey), bad.getMessage());
        }
        RequestMatcher match = matcher(values, rule(name, MATCH), DEFAULT_MATCH);
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
