package dev.sluice.config;

import dev.sluice.config.SluiceConfig.Backend;
import dev.sluice.config.SluiceConfig.ClockSource;
import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.config.SluiceConfig.HostPort;
import dev.sluice.config.SluiceConfig.Mode;
import dev.sluice.http.ActualCost;
import dev.sluice.http.RequestMatcher;
import dev.sluice.http.ResponseStatuses;
import dev.sluice.key.Cidr;
import dev.sluice.key.CidrSet;
import dev.sluice.key.ClientIpResolver.Header;
import dev.sluice.key.KeyCase;
import dev.sluice.key.KeyExpression;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.InvalidRuleException;
import dev.sluice.limiter.Rule;

import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
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
    private static final String PLANS_ACCEPTED =
            "comma-separated plan names of letters, digits, '_' and '-' (at most 64 characters each), e.g. free, pro";
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

    /**
     * The properties file named by the {@code config} init-param as it is now, for reloading: a
     * fingerprint of its content, and the configuration it gives with the init-params, or the problem
     * that keeps it from giving one.
     *
     * @param fingerprint a digest of the file's content, or of why it could not be read (a missing
     *                    file); the same content always gives the same fingerprint
     * @param config      the validated configuration, or {@code null} when {@code problem} is set
     * @param problem     why the file gives no configuration (missing, unreadable, invalid), or {@code null}
     */
    public record FileContent(String fingerprint, SluiceConfig config, ConfigException problem) {
    }

    /**
     * {@link #fromInitParams}, with the fingerprint of the {@code config} file's content it parsed:
     * what a reload compares the file with, taken from the very bytes the configuration came from,
     * so that an edit made while the application starts is not mistaken for the running content.
     *
     * @return the configuration (never a problem), its fingerprint {@code null} without a {@code config} init-param
     * @throws ConfigException as {@link #fromInitParams}
     */
    public static FileContent read(Map<String, String> initParams, ClassLoader classLoader) {
        FileContent content = reread(initParams, classLoader);
        if (content == null) return new FileContent(null, fromInitParams(initParams, classLoader), null);
        if (content.problem() != null) throw content.problem();
        return content;
    }

    /**
     * Where the {@code config} file is, for the log: the file a user edits. Its absolute path (for a
     * {@code classpath:} resource in a directory too, e.g. an unpacked WAR's {@code WEB-INF/classes}),
     * or the URL of a resource that is no file of its own; {@code null} without a {@code config} init-param.
     *
     * @param realPath the file a path of the web application is ({@code ServletContext::getRealPath}),
     *                 for a {@code WEB-INF/classes} resource the class loader serves from a virtual
     *                 file system (WildFly); {@code null} outside a container
     * @throws ConfigException as {@link #fromInitParams} when the file cannot be found
     */
    public static String whereIs(Map<String, String> initParams, ClassLoader classLoader, UnaryOperator<String> realPath) {
        String location = initParams.get(CONFIG);
        if (location == null || location.isBlank()) return null;
        return PropertiesFile.where(Placeholders.system().resolve(CONFIG, location.trim()).trim(), classLoader, realPath);
    }

    /**
     * Reads the {@code config} file again and builds the configuration from it and the init-params,
     * as {@link #fromInitParams} does at start-up, but never throws for the file's sake.
     *
     * @return {@code null} when there is no {@code config} init-param (nothing to reload)
     */
    public static FileContent reread(Map<String, String> initParams, ClassLoader classLoader) {
        ConfigLoader loader = new ConfigLoader(Placeholders.system());
        String location = initParams.get(CONFIG);
        if (location == null || location.isBlank()) return null;
        byte[] content;
        try {
            content = PropertiesFile.bytes(loader.placeholders.resolve(CONFIG, location.trim()).trim(), classLoader);
        } catch (ConfigException unreadable) {
            return new FileContent(digest(unreadable.getMessage().getBytes(StandardCharsets.UTF_8)), null, unreadable);
        }
        try {
            return new FileContent(digest(content), loader.parseInitParams(initParams, classLoader, content), null);
        } catch (ConfigException invalid) {
            return new FileContent(digest(content), null, invalid);
        }
    }

    private static String digest(byte[] bytes) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
            return java.util.HexFormat.of().formatHex(d);
        } catch (java.security.NoSuchAlgorithmException impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    SluiceConfig parseInitParams(Map<String, String> initParams, ClassLoader classLoader) {
        return parseInitParams(initParams, classLoader, null);
    }

    /** @param content the file's content when the caller has read it already, else {@code null} */
    SluiceConfig parseInitParams(Map<String, String> initParams, ClassLoader classLoader, byte[] content) {
        SortedMap<String, String> params = trimmed(initParams);
        String location = params.remove(CONFIG);
        SortedMap<String, String> merged = new TreeMap<>();
        if (location != null && !location.isEmpty()) {
            String resolved = placeholders.resolve(CONFIG, location).trim();
            SortedMap<String, String> file = trimmed(content != null ? PropertiesFile.parsed(resolved, content)
                    : PropertiesFile.read(resolved, classLoader));
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
        integer(values, LOCAL_MAX_KEYS, 1, Integer.MAX_VALUE, b::localMaxKeys);
        integer(values, MAX_HELD_REQUESTS, 1, Integer.MAX_VALUE, b::maxHeldRequests);
        b.deniedCache(values.bool(DENIED_CACHE, true));
        integer(values, DENIED_CACHE_MAX_KEYS, 1, Integer.MAX_VALUE, b::deniedCacheMaxKeys);
        duration(values, DENIED_CACHE_REVALIDATE, b::deniedCacheRevalidate);
        if (values.isSet(KEY_PREFIX)) b.keyPrefix(values.get(KEY_PREFIX));
        b.clock(values.choice(CLOCK, ClockSource.REDIS, options("redis", ClockSource.REDIS, "local", ClockSource.LOCAL)));
        b.trustedProxies(cidrs(values, TRUSTED_PROXIES));
        b.clientIpHeader(values.choice(CLIENT_IP_HEADER, Header.X_FORWARDED_FOR,
                options("X-Forwarded-For", Header.X_FORWARDED_FOR, "Forwarded", Header.FORWARDED)));
        integer(values, IPV6_PREFIX, 0, 128, b::ipv6Prefix);
        b.headers(values.choice(HEADERS, HeaderStyle.BOTH, options("draft", HeaderStyle.DRAFT,
                "legacy", HeaderStyle.LEGACY, "both", HeaderStyle.BOTH, "none", HeaderStyle.NONE)));
        integer(values, STATUS_CODE, 400, 599, b::statusCode);
        Mode mode = values.choice(MODE, Mode.ENFORCE, options("enforce", Mode.ENFORCE, "dry-run", Mode.DRY_RUN));
        b.modeOfRules(mode);
        duration(values, RELOAD, b::reload);
        b.exclude(matcher(values, EXCLUDE, null));
        b.exemptIps(cidrs(values, EXEMPT_IPS));
        b.micrometer(values.bool(METRICS_MICROMETER, true));
        for (String name : ruleNames) {
            b.rule(ruleConfig(values, name, failurePolicy, mode));
        }
        return b.build();
    }

    // ---- structure: which keys exist

    private static void rejectUnknownKeys(ConfigValues values) {
        for (Map.Entry<String, String> e : values.all().entrySet()) {
            String key = e.getKey();
            if (isGlobal(key) || ruleName(key) != null) continue;
            String nearest = nearest(key, known(mentionedRuleNames(values), mentionedPlans(values)));
            throw new ConfigException(key, e.getValue(), "not a Sluice key; "
                    + (nearest != null ? "did you mean " + nearest + "?"
                    : "the keys are " + String.join(", ", GLOBAL) + " and rule.<name>.{"
                    + String.join(", ", RULE) + "}"));
        }
    }

    /** Plan names from each {@code rule.<name>.plans}, to suggest keys from. */
    private static Map<String, List<String>> mentionedPlans(ConfigValues values) {
        Map<String, List<String>> plans = new TreeMap<>();
        for (String name : mentionedRuleNames(values)) {
            plans.put(name, values.list(rule(name, PLANS)));
        }
        return plans;
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
        integer(values, REDIS_POOL_MAX_TOTAL, 1, Integer.MAX_VALUE, b::redisPoolMaxTotal);
        integer(values, REDIS_POOL_MAX_IDLE, 0, Integer.MAX_VALUE, b::redisPoolMaxIdle);
        integer(values, REDIS_POOL_MIN_IDLE, 0, Integer.MAX_VALUE, b::redisPoolMinIdle);
        duration(values, REDIS_POOL_MAX_WAIT, b::redisPoolMaxWait);
        duration(values, REDIS_CLUSTER_REFRESH_PERIOD, b::redisClusterRefreshPeriod);
    }

    private static void breaker(ConfigValues values, SluiceConfig.Builder b) {
        integer(values, REDIS_BREAKER_FAILURE_THRESHOLD, 1, Integer.MAX_VALUE, b::breakerFailureThreshold);
        duration(values, REDIS_BREAKER_OPEN_BASE, b::breakerOpenBase);
        duration(values, REDIS_BREAKER_OPEN_MAX, b::breakerOpenMax);
    }

    /** A whole number from {@code min} to {@code max} (the range its error names), when set; the builder checks it too. */
    private static void integer(ConfigValues values, String key, int min, int max, java.util.function.IntConsumer setter) {
        if (values.isSet(key)) setter.accept((int) values.integer(key, 0, min, max));
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
        if (entries.isEmpty() && defaultValue != null) {
            // set, yet no pattern (",", or placeholders that are all empty): a rule that matches nothing limits nothing
            throw new ConfigException(key, values.get(key), "comma-separated [METHOD ]pattern entries, at least one"
                    + " (a rule matching nothing would limit nothing); leave the key out for every path (" + defaultValue + ")");
        }
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

    private static RuleConfig ruleConfig(ConfigValues values, String name, FailurePolicy globalPolicy, Mode globalMode) {
        String algorithmKey = rule(name, ALGORITHM);
        Algorithm algorithm = DEFAULT_ALGORITHM;
        if (values.isSet(algorithmKey)) {
            algorithm = Algorithm.fromId(values.get(algorithmKey));
            if (algorithm == null) {
                throw new ConfigException(algorithmKey, values.get(algorithmKey), "one of " + Algorithm.ids());
            }
        }
        long limit = values.requiredInteger(rule(name, LIMIT), 1, Rule.MAX_COUNT);
        String calendarKey = rule(name, CALENDAR);
        if (algorithm != Algorithm.FIXED_WINDOW && values.isSet(calendarKey)) {
            // before the window is read: a calendar's window units would be blamed on the window
            throw new ConfigException(calendarKey, values.get(calendarKey), "only for fixed-window (windows that start and"
                    + " end on the calendar); " + algorithmKey + " is " + algorithm.id() + (algorithm.isConcurrency()
                    ? ", which has no window: remove it" : ": remove " + CALENDAR + " or use fixed-window"));
        }
        ZoneId zone = values.isSet(calendarKey) ? zone(calendarKey, values.get(calendarKey)) : null;
        CalendarWindows calendar = zone == null ? null : calendarWindows(values, rule(name, WINDOW), zone);
        Duration window;
        if (algorithm.isConcurrency()) {
            if (values.isSet(rule(name, WINDOW))) {
                throw new ConfigException(rule(name, WINDOW), values.get(rule(name, WINDOW)), "a concurrency rule has no"
                        + " window: it limits the requests in flight, each holding a slot until it completes; remove it"
                        + " (" + rule(name, LEASE) + " says how long a slot outlives an instance that died)");
            }
            window = values.duration(rule(name, LEASE), Rule.DEFAULT_LEASE, Rule.MIN_LEASE);
        } else {
            if (values.isSet(rule(name, LEASE))) {
                throw new ConfigException(rule(name, LEASE), values.get(rule(name, LEASE)), "only for concurrency (how long"
                        + " a slot outlives an instance that died); " + algorithmKey + " is " + algorithm.id() + ": remove it");
            }
            window = calendar != null ? calendar.nominal() : values.requiredDuration(rule(name, WINDOW), ONE_MS);
        }
        long burst = values.integer(rule(name, BURST), limit, 1, Rule.MAX_COUNT);
        long cost = values.integer(rule(name, COST), 1, 1, Rule.MAX_COUNT);
        FailurePolicy failurePolicy = values.choice(rule(name, RULE_FAILURE_POLICY), globalPolicy,
                options("open", FailurePolicy.OPEN, "closed", FailurePolicy.CLOSED));
        long fallbackLimit = values.integer(rule(name, FALLBACK_LIMIT), limit, 1, Rule.MAX_COUNT);
        Duration maxDelay = values.duration(rule(name, MAX_DELAY), Duration.ZERO, Duration.ZERO);
        Duration sync = values.duration(rule(name, SYNC), Duration.ZERO, Duration.ZERO);
        boolean dryRun = values.choice(rule(name, RULE_MODE), globalMode,
                options("enforce", Mode.ENFORCE, "dry-run", Mode.DRY_RUN)) == Mode.DRY_RUN;
        Rule rule;
        try {
            rule = new Rule(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay, dryRun,
                    null, sync, calendar);
        } catch (InvalidRuleException invalid) {
            String badKey = rule(name, invalid.field());
            String problem = MAX_DELAY.equals(invalid.field()) ? "only for leaky-bucket; " + algorithmKey + " is "
                    + algorithm.id() + ": remove " + badKey + " or use algorithm leaky-bucket" : invalid.problem();
            throw new ConfigException(badKey, values.get(badKey), problem);
        }
        List<RuleConfig.Plan> plans = plans(values, rule);
        KeyExpression planKey = null;
        String planKeyKey = rule(name, PLAN);
        if (values.isSet(planKeyKey)) {
            try {
                planKey = KeyExpression.parse(values.get(planKeyKey));
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(planKeyKey, values.get(planKeyKey), bad.getMessage());
            }
            if (planKey.alternatives().stream().anyMatch(composite -> composite.size() > 1)) {
                throw new ConfigException(planKeyKey, values.get(planKeyKey), "one source names a plan (alternatives"
                        + " with | are fine, composites with + are not), e.g. attr:plan or attr:plan|attr:tier");
            }
        }
        boolean planSourceTrusted = values.bool(rule(name, PLAN_SOURCE_TRUSTED), false);
        ResponseStatuses count = null;
        String countKey = rule(name, COUNT);
        if (values.isSet(countKey)) {
            try {
                count = ResponseStatuses.parse(values.list(countKey));
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(countKey, values.get(countKey), bad.getMessage());
            }
        }

        String keyKey = rule(name, KEY);
        KeyExpression key;
        try {
            key = values.isSet(keyKey) ? KeyExpression.parse(values.get(keyKey)) : RuleConfig.DEFAULT_KEY;
        } catch (IllegalArgumentException bad) {
            throw new ConfigException(keyKey, values.get(keyKey), bad.getMessage());
        }
        KeyCase keyCase = values.choice(rule(name, KEY_CASE), KeyCase.SENSITIVE,
                options("sensitive", KeyCase.SENSITIVE, "insensitive", KeyCase.INSENSITIVE));
        RequestMatcher match = matcher(values, rule(name, MATCH), DEFAULT_MATCH);
        ActualCost actualCost = null;
        String actualCostKey = rule(name, ACTUAL_COST);
        if (values.isSet(actualCostKey)) {
            try {
                actualCost = ActualCost.parse(values.get(actualCostKey));
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(actualCostKey, values.get(actualCostKey), bad.getMessage());
            }
        }
        String maxActualCostKey = rule(name, MAX_ACTUAL_COST);
        if (values.isSet(maxActualCostKey)) {
            if (actualCost == null) {
                throw new ConfigException(maxActualCostKey, values.get(maxActualCostKey), "bounds the cost stated where "
                        + actualCostKey + " says, which is not set: set it, or remove this key");
            }
            // at least the rule's cost: SluiceConfig's build checks it, for configurations made in code too
            actualCost = actualCost.withMax(values.integer(maxActualCostKey, Long.MAX_VALUE, 1, Long.MAX_VALUE));
        }
        return new RuleConfig(rule, key, match, planKey, plans, count, planSourceTrusted, keyCase, actualCost);
    }

    /**
     * {@code rule.<name>.plans} and each plan's {@code limit} (a number or {@code unlimited}),
     * {@code window}, {@code burst} and {@code fallback-limit}, the rule's own where not given.
     */
    private static List<RuleConfig.Plan> plans(ConfigValues values, Rule rule) {
        String name = rule.name();
        String plansKey = rule(name, PLANS);
        List<String> names = planNames(values, name);
        for (Map.Entry<String, String> e : values.all().entrySet()) {
            if (!e.getKey().startsWith(rule(name, PLAN + "."))) continue;
            String plan = planName(ConfigKeys.ruleSubKey(e.getKey()));
            if (plan != null && !names.contains(plan)) {
                throw new ConfigException(e.getKey(), e.getValue(), "a key of plan '" + plan + "', which is not listed in "
                        + plansKey + (names.isEmpty() ? "" : " (" + String.join(", ", names) + ")")
                        + ": add it there or remove the key");
            }
        }
        List<RuleConfig.Plan> plans = new ArrayList<>();
        for (String plan : names) {
            String limitKey = planKey(name, plan, LIMIT);
            String limitText = values.required(limitKey, "a whole number, at least 1, or unlimited");
            if (limitText.equalsIgnoreCase("unlimited")) {
                for (String sub : List.of(WINDOW, BURST, FALLBACK_LIMIT)) {
                    String k = planKey(name, plan, sub);
                    if (values.isSet(k)) {
                        throw new ConfigException(k, values.get(k), "an unlimited plan has no " + sub + ": remove it");
                    }
                }
                plans.add(RuleConfig.Plan.unlimited(plan));
                continue;
            }
            long limit = values.requiredInteger(limitKey, 1, Rule.MAX_COUNT);
            String planWindowKey = planKey(name, plan, WINDOW);
            if (rule.algorithm().isConcurrency() && values.isSet(planWindowKey)) {
                throw new ConfigException(planWindowKey, values.get(planWindowKey), "plan " + plan + ": a concurrency rule"
                        + " has no window (its plans differ in limit only); remove it");
            }
            CalendarWindows calendar = rule.calendar() == null || !values.isSet(planWindowKey) ? rule.calendar()
                    : calendarWindows(values, planWindowKey, rule.calendar().zone());
            Duration window = calendar != null ? calendar.nominal() : values.duration(planWindowKey, rule.window(), ONE_MS);
            boolean ownBurst = rule.burst() != rule.limit();
            long burst = values.integer(planKey(name, plan, BURST), ownBurst ? rule.burst() : limit, 1, Rule.MAX_COUNT);
            boolean ownFallback = rule.fallbackLimit() != rule.limit();
            long fallback = values.integer(planKey(name, plan, FALLBACK_LIMIT), ownFallback ? rule.fallbackLimit() : limit,
                    1, Rule.MAX_COUNT);
            try {
                plans.add(new RuleConfig.Plan(plan, new Rule(name, rule.algorithm(), limit, window, burst, rule.cost(),
                        rule.failurePolicy(), fallback, rule.maxDelay(), rule.dryRun(), plan, rule.sync(), calendar)));
            } catch (InvalidRuleException invalid) {
                String badKey = PLAN_KEYS.contains(invalid.field()) ? planKey(name, plan, invalid.field())
                        : rule(name, invalid.field());
                throw new ConfigException(badKey, values.get(badKey), "plan " + plan + ": " + invalid.problem());
            }
        }
        return plans;
    }

    /** {@code rule.<r>.calendar}: a time-zone id of the JDK's time-zone data. */
    private static ZoneId zone(String key, String value) {
        try {
            return ZoneId.of(value);
        } catch (DateTimeException bad) {
            String hint = ZoneId.getAvailableZoneIds().stream().filter(id -> id.equalsIgnoreCase(value)).findFirst()
                    .map(id -> "; did you mean " + id + "? (ids are case-sensitive)")
                    .orElse("; a region id such as Europe/Berlin or America/New_York (java.time.ZoneId, the JDK's"
                            + " tzdata), UTC, or an offset such as +05:30");
            throw new ConfigException(key, value, "a time-zone id" + hint);
        }
    }

    /** A calendar rule's (or plan's) window: whole hours, days, weeks or {@code 1mo}, in {@code zone}. */
    private static CalendarWindows calendarWindows(ConfigValues values, String key, ZoneId zone) {
        String v = values.required(key, CalendarWindows.ACCEPTED);
        try {
            Integer months = Durations.months(v);
            Integer weeks = Durations.weeks(v);
            if (months != null) return CalendarWindows.months(zone, months);
            if (weeks != null) return new CalendarWindows(zone, ChronoUnit.WEEKS, weeks);
            return CalendarWindows.of(zone, Durations.parse(key, v));
        } catch (IllegalArgumentException bad) {
            throw new ConfigException(key, v, bad.getMessage());
        }
    }

    private static List<String> planNames(ConfigValues values, String rule) {
        String plansKey = rule(rule, PLANS);
        Set<String> names = new LinkedHashSet<>();
        for (String plan : values.list(plansKey)) {
            if (!Rule.NAME.matcher(plan).matches()) {
                throw new ConfigException(plansKey, values.get(plansKey), PLANS_ACCEPTED + "; '" + plan + "' is not a plan name");
            }
            if (!names.add(plan)) {
                throw new ConfigException(plansKey, values.get(plansKey), PLANS_ACCEPTED + "; '" + plan + "' is listed twice");
            }
        }
        return List.copyOf(names);
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
