package dev.sluice.config;

import dev.sluice.http.RequestMatcher;
import dev.sluice.key.CidrSet;
import dev.sluice.key.ClientIpResolver;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static dev.sluice.config.ConfigKeys.*;
import static dev.sluice.config.ConfigValues.integerRange;

/**
 * Everything a Sluice instance needs, as parsed objects: rules, CIDR sets, request matchers, key
 * expressions, Redis settings. Immutable. Made by one {@link Builder}, whose {@link Builder#build()}
 * validates every value and every combination once and throws a {@link ConfigException} naming the
 * configuration key; the properties, {@code Map} and init-param front ends ({@link ConfigLoader})
 * only turn text into these objects.
 *
 * <pre>{@code
 * SluiceConfig config = SluiceConfig.builder()
 *         .rule(Rule.builder("api").limit(100).window(Duration.ofMinutes(1)).build())
 *         .redisUrl("redis://cache.internal:6379")
 *         .build();
 * }</pre>
 *
 * <p>Accessor names follow the configuration keys of the README's reference.
 */
public final class SluiceConfig {

    static final String DEFAULT_REDIS_URL = "redis://localhost:6379";
    static final Duration DEFAULT_REDIS_TIMEOUT = Duration.ofMillis(50);
    static final int DEFAULT_POOL_MAX_TOTAL = 64;
    static final int DEFAULT_POOL_MIN_IDLE = 4;
    static final Duration DEFAULT_CLUSTER_REFRESH_PERIOD = Duration.ofSeconds(10);
    static final Duration MIN_CLUSTER_REFRESH_PERIOD = Duration.ofMillis(100);
    static final int DEFAULT_BREAKER_FAILURE_THRESHOLD = 3;
    static final Duration DEFAULT_BREAKER_OPEN_BASE = Duration.ofMillis(100);
    static final Duration DEFAULT_BREAKER_OPEN_MAX = Duration.ofSeconds(1);
    static final int DEFAULT_LOCAL_MAX_KEYS = 100_000;
    /** A quarter of Tomcat's default 200 threads: without async, held requests park at most this many. */
    static final int DEFAULT_MAX_HELD_REQUESTS = 50;
    static final int DEFAULT_DENIED_CACHE_MAX_KEYS = 10_000;
    static final Duration DEFAULT_DENIED_CACHE_REVALIDATE = Duration.ofSeconds(1);
    static final String DEFAULT_KEY_PREFIX = "rl:";
    static final int DEFAULT_IPV6_PREFIX = 64;
    static final int DEFAULT_STATUS_CODE = 429;
    static final int MAX_KEY_PREFIX_LENGTH = 64;
    private static final Duration ONE_MS = Duration.ofMillis(1);

    private final List<RuleConfig> rules;
    private final Backend backend;
    private final RedisSettings redis;
    private final String keyPrefix;
    private final ClockSource clock;
    private final FailurePolicy failurePolicy;
    private final CidrSet trustedProxies;
    private final ClientIpResolver.Header clientIpHeader;
    private final int ipv6Prefix;
    private final HeaderStyle headers;
    private final int statusCode;
    private final Mode mode;
    private final RequestMatcher exclude;
    private final CidrSet exemptIps;
    private final int localMaxKeys;
    private final int maxHeldRequests;
    private final DeniedCacheSettings deniedCache;
    private final BreakerSettings breaker;
    private final Duration reload;
    private final boolean micrometer;
    private final Map<String, String> source;

    private SluiceConfig(Builder b, RedisSettings redis, BreakerSettings breaker) {
        this.rules = List.copyOf(b.rules);
        this.backend = b.backend;
        this.redis = redis;
        this.keyPrefix = b.keyPrefix;
        this.clock = b.clock;
        this.failurePolicy = b.failurePolicy;
        this.trustedProxies = b.trustedProxies;
        this.clientIpHeader = b.clientIpHeader;
        this.ipv6Prefix = b.ipv6Prefix;
        this.headers = b.headers;
        this.statusCode = b.statusCode;
        this.mode = b.mode;
        this.exclude = b.exclude;
        this.exemptIps = b.exemptIps;
        this.localMaxKeys = b.localMaxKeys;
        this.maxHeldRequests = b.maxHeldRequests;
        this.deniedCache = new DeniedCacheSettings(b.deniedCache, b.deniedCacheMaxKeys, b.deniedCacheRevalidate);
        this.breaker = breaker;
        this.reload = b.reload;
        this.micrometer = b.micrometer;
        Map<String, String> shown = new TreeMap<>();
        b.source.forEach((key, value) -> shown.put(key, ConfigKeys.shown(key, value)));
        this.source = Collections.unmodifiableMap(shown);
    }

    /** A builder with every default of the configuration reference; at least one rule is required. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this configuration, to derive a changed one. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.rules.addAll(rules);
        b.backend = backend;
        b.redisFrom(redis);
        b.keyPrefix = keyPrefix;
        b.clock = clock;
        b.failurePolicy = failurePolicy;
        b.trustedProxies = trustedProxies;
        b.clientIpHeader = clientIpHeader;
        b.ipv6Prefix = ipv6Prefix;
        b.headers = headers;
        b.statusCode = statusCode;
        b.mode = mode;
        b.exclude = exclude;
        b.exemptIps = exemptIps;
        b.localMaxKeys = localMaxKeys;
        b.maxHeldRequests = maxHeldRequests;
        b.deniedCache = deniedCache.enabled();
        b.deniedCacheMaxKeys = deniedCache.maxKeys();
        b.deniedCacheRevalidate = deniedCache.revalidateAfter();
        b.breakerFailureThreshold = breaker.failureThreshold();
        b.breakerOpenBase = breaker.openBase();
        b.breakerOpenMax = breaker.openMax();
        b.reload = reload;
        b.micrometer = micrometer;
        b.source.putAll(source);
        return b;
    }

    /** The rules, in the order listed in {@code rules}. */
    public List<RuleConfig> rules() {
        return rules;
    }

    /** The rule named {@code name}, or {@code null}. */
    public RuleConfig rule(String name) {
        for (RuleConfig r : rules) {
            if (r.name().equals(name)) return r;
        }
        return null;
    }

    /** {@code backend}. */
    public Backend backend() {
        return backend;
    }

    /** How to reach Redis ({@code redis.*}); unused with {@code backend=local}. */
    public RedisSettings redis() {
        return redis;
    }

    /** {@code key-prefix}. */
    public String keyPrefix() {
        return keyPrefix;
    }

    /** {@code clock}. */
    public ClockSource clock() {
        return clock;
    }

    /** The global {@code failure-policy}; each rule carries its effective one. */
    public FailurePolicy failurePolicy() {
        return failurePolicy;
    }

    /** {@code trusted-proxies}. */
    public CidrSet trustedProxies() {
        return trustedProxies;
    }

    /** {@code client-ip-header}. */
    public ClientIpResolver.Header clientIpHeader() {
        return clientIpHeader;
    }

    /** {@code ipv6-prefix}. */
    public int ipv6Prefix() {
        return ipv6Prefix;
    }

    /** {@code headers}. */
    public HeaderStyle headers() {
        return headers;
    }

    /** {@code status-code}. */
    public int statusCode() {
        return statusCode;
    }

    /** {@code mode}. */
    public Mode mode() {
        return mode;
    }

    /** {@code exclude}: empty matches nothing. */
    public RequestMatcher exclude() {
        return exclude;
    }

    /** {@code exempt-ips}. */
    public CidrSet exemptIps() {
        return exemptIps;
    }

    /** {@code local.max-keys}. */
    public int localMaxKeys() {
        return localMaxKeys;
    }

    /** {@code max-held-requests}: most requests this instance holds for their leaky-bucket slot at once. */
    public int maxHeldRequests() {
        return maxHeldRequests;
    }

    /** {@code denied-cache}, {@code denied-cache.max-keys}, {@code denied-cache.revalidate}. */
    public DeniedCacheSettings deniedCache() {
        return deniedCache;
    }

    /** {@code redis.breaker.*}. */
    public BreakerSettings breaker() {
        return breaker;
    }

    /** {@code reload}: how often the properties file is checked for changes; zero: never. */
    public Duration reload() {
        return reload;
    }

    /**
     * {@code metrics.micrometer}: whether Sluice registers its meters with Micrometer when Micrometer
     * is on its class path (in the global registry, or the one handed to {@code Sluice.Builder}).
     */
    public boolean micrometer() {
        return micrometer;
    }

    /**
     * The key/value pairs this configuration was read from, after substitution, sorted by key,
     * secrets masked (diagnostics only); empty for a configuration built in code.
     */
    public Map<String, String> source() {
        return source;
    }

    /**
     * Checks that this configuration can replace {@code running} while Sluice runs: everything about
     * rules and requests can change (rules added, removed or changed, plans, modes, matchers, keys,
     * proxies, headers, status code), but not what needs new Redis connections, another key layout or
     * a rebuilt engine. A client's Redis state survives every change that is allowed.
     *
     * @throws ConfigException naming the first key that differs and cannot change while running
     */
    public void checkReplaces(SluiceConfig running) {
        refuseChange(BACKEND, backend, running.backend, "the engine is built at start");
        RedisSettings r = running.redis;
        String connections = "it needs new Redis connections";
        // each topology key on its own, so that the message names the key that changed and shows its value
        refuseChange(REDIS_CLUSTER_NODES, nodes(redis.clusterNodes()), nodes(r.clusterNodes()), connections);
        refuseChange(REDIS_SENTINEL_MASTER, redis.sentinelMaster(), r.sentinelMaster(), connections);
        refuseChange(REDIS_SENTINEL_NODES, nodes(redis.sentinelNodes()), nodes(r.sentinelNodes()), connections);
        if (source.containsKey(REDIS_SSL) || running.source.containsKey(REDIS_SSL)) {
            refuseChange(REDIS_SSL, redis.ssl(), r.ssl(), connections); // set on its own: named on its own
        }
        refuseChange(REDIS_URL, redis.url(), r.url(), connections);
        refuseChange(REDIS_USER, redis.user(), r.user(), connections);
        if (!Objects.equals(redis.password(), r.password())) {
            throw new ConfigException(REDIS_PASSWORD, redis.password(), "cannot change while running: " + connections
                    + "; restart the application to apply it");
        }
        refuseChange(REDIS_SSL, redis.ssl(), r.ssl(), connections);
        refuseChange(REDIS_TIMEOUT, redis.timeout(), r.timeout(), connections);
        refuseChange(REDIS_POOL_MAX_TOTAL, redis.poolMaxTotal(), r.poolMaxTotal(), connections);
        refuseChange(REDIS_POOL_MAX_IDLE, redis.poolMaxIdle(), r.poolMaxIdle(), connections);
        refuseChange(REDIS_POOL_MIN_IDLE, redis.poolMinIdle(), r.poolMinIdle(), connections);
        refuseChange(REDIS_POOL_MAX_WAIT, redis.poolMaxWait(), r.poolMaxWait(), connections);
        refuseChange(REDIS_CLUSTER_REFRESH_PERIOD, redis.clusterRefreshPeriod(), r.clusterRefreshPeriod(),
                "the cluster client is built at start");
        refuseChange(KEY_PREFIX, keyPrefix, running.keyPrefix, "every client's state is under the running prefix,"
                + " and a new one would start every client afresh");
        refuseChange(CLOCK, clock, running.clock, "the engines and the denied-client cache are built for one clock");
        refuseChange(LOCAL_MAX_KEYS, localMaxKeys, running.localMaxKeys, "the local engine is sized at start");
        refuseChange(DENIED_CACHE, deniedCache.enabled(), running.deniedCache.enabled(), "the cache is built at start");
        refuseChange(DENIED_CACHE_MAX_KEYS, deniedCache.maxKeys(), running.deniedCache.maxKeys(), "the cache is built at start");
        refuseChange(DENIED_CACHE_REVALIDATE, deniedCache.revalidateAfter(), running.deniedCache.revalidateAfter(),
                "the cache is built at start");
        refuseChange(REDIS_BREAKER_FAILURE_THRESHOLD, breaker.failureThreshold(), running.breaker.failureThreshold(),
                "the circuit breaker is built at start");
        refuseChange(REDIS_BREAKER_OPEN_BASE, breaker.openBase(), running.breaker.openBase(), "the circuit breaker is built at start");
        refuseChange(REDIS_BREAKER_OPEN_MAX, breaker.openMax(), running.breaker.openMax(), "the circuit breaker is built at start");
        refuseChange(RELOAD, reload, running.reload, "the file is watched at the interval it started with");
        refuseChange(METRICS_MICROMETER, micrometer, running.micrometer, "the meters are registered at start");
    }

    /** A node list as {@code redis.cluster.nodes} and {@code redis.sentinel.nodes} are written; null when empty. */
    private static String nodes(List<HostPort> nodes) {
        return nodes.isEmpty() ? null : nodes.stream().map(HostPort::toString).collect(Collectors.joining(","));
    }

    private void refuseChange(String key, Object proposed, Object current, String why) {
        if (Objects.equals(proposed, current)) return;
        String shown = source.get(key);
        throw new ConfigException(key, shown != null ? shown : String.valueOf(proposed), "cannot change while running ("
                + why + "; running: " + ConfigKeys.shown(key, String.valueOf(current)) + "); restart the application"
                + " to apply it. Nothing of the new configuration was applied");
    }

    /** Equal when every setting is equal ({@link #source()} is not compared). */
    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof SluiceConfig c)) return false;
        return rules.equals(c.rules) && backend == c.backend && redis.equals(c.redis) && keyPrefix.equals(c.keyPrefix)
                && clock == c.clock && failurePolicy == c.failurePolicy && trustedProxies.equals(c.trustedProxies)
                && clientIpHeader == c.clientIpHeader && ipv6Prefix == c.ipv6Prefix && headers == c.headers
                && statusCode == c.statusCode && mode == c.mode && exclude.equals(c.exclude)
                && exemptIps.equals(c.exemptIps) && localMaxKeys == c.localMaxKeys && maxHeldRequests == c.maxHeldRequests
                && deniedCache.equals(c.deniedCache) && breaker.equals(c.breaker) && reload.equals(c.reload)
                && micrometer == c.micrometer;
    }

    @Override
    public int hashCode() {
        return Objects.hash(rules, backend, redis, keyPrefix, clock, failurePolicy, trustedProxies, clientIpHeader,
                ipv6Prefix, headers, statusCode, mode, exclude, exemptIps, localMaxKeys, maxHeldRequests, deniedCache, breaker,
                reload, micrometer);
    }

    /** Every setting; never a secret. */
    @Override
    public String toString() {
        return "SluiceConfig{rules=" + rules + ", backend=" + backend + ", redis=" + redis + ", keyPrefix=" + keyPrefix
                + ", clock=" + clock + ", failurePolicy=" + failurePolicy + ", trustedProxies=" + trustedProxies
                + ", clientIpHeader=" + clientIpHeader + ", ipv6Prefix=" + ipv6Prefix + ", headers=" + headers
                + ", statusCode=" + statusCode + ", mode=" + mode + ", exclude=" + exclude + ", exemptIps=" + exemptIps
                + ", localMaxKeys=" + localMaxKeys + ", maxHeldRequests=" + maxHeldRequests + ", deniedCache=" + deniedCache + ", breaker=" + breaker
                + ", reload=" + reload + ", micrometer=" + micrometer + '}';
    }

    public enum Backend { REDIS, LOCAL }

    public enum ClockSource { REDIS, LOCAL }

    public enum HeaderStyle {
        DRAFT, LEGACY, BOTH, NONE;

        public boolean draft() {
            return this == DRAFT || this == BOTH;
        }

        public boolean legacy() {
            return this == LEGACY || this == BOTH;
        }
    }

    public enum Mode { ENFORCE, DRY_RUN }

    /**
     * How to reach Redis. Exactly one of: standalone ({@code host}), Sentinel ({@code sentinelMaster}
     * + {@code sentinelNodes}) or Cluster ({@code clusterNodes}).
     *
     * @param host           standalone host (from {@code redis.url}; IPv6 without brackets); null in Cluster
     *                       and Sentinel mode
     * @param port           standalone port; 0 in Cluster and Sentinel mode
     * @param database       standalone database index; 0 in Cluster and Sentinel mode
     * @param user           ACL user, or null
     * @param password       password, or null (never logged)
     * @param ssl            TLS ({@code rediss://} or {@code redis.ssl=true})
     * @param clusterNodes   {@code host:port} seeds; non-empty turns on Cluster mode
     * @param sentinelMaster the Sentinel master name, or null
     * @param sentinelNodes  {@code host:port} of the sentinels
     * @param timeout        {@code redis.timeout}: connect and read timeout of every call
     * @param poolMaxTotal   {@code redis.pool.max-total}
     * @param poolMaxIdle    {@code redis.pool.max-idle}
     * @param poolMinIdle    {@code redis.pool.min-idle}
     * @param poolMaxWait    {@code redis.pool.max-wait}: waiting for a pooled connection
     */
    public record RedisSettings(String host, int port, int database, String user, String password, boolean ssl,
                                List<HostPort> clusterNodes, String sentinelMaster, List<HostPort> sentinelNodes,
                                Duration timeout, int poolMaxTotal, int poolMaxIdle, int poolMinIdle,
                                Duration poolMaxWait, Duration clusterRefreshPeriod) {

        public RedisSettings {
            clusterNodes = List.copyOf(clusterNodes);
            sentinelNodes = List.copyOf(sentinelNodes);
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(poolMaxWait, "poolMaxWait");
            Objects.requireNonNull(clusterRefreshPeriod, "clusterRefreshPeriod");
        }

        /** The settings before {@code redis.cluster.refresh-period}: its default. */
        public RedisSettings(String host, int port, int database, String user, String password, boolean ssl,
                             List<HostPort> clusterNodes, String sentinelMaster, List<HostPort> sentinelNodes,
                             Duration timeout, int poolMaxTotal, int poolMaxIdle, int poolMinIdle, Duration poolMaxWait) {
            this(host, port, database, user, password, ssl, clusterNodes, sentinelMaster, sentinelNodes, timeout,
                    poolMaxTotal, poolMaxIdle, poolMinIdle, poolMaxWait, DEFAULT_CLUSTER_REFRESH_PERIOD);
        }

        public boolean cluster() {
            return !clusterNodes.isEmpty();
        }

        public boolean sentinel() {
            return sentinelMaster != null;
        }

        /** What {@code redis.url} sets, as a URL without credentials (TLS, the node, the database); null on Cluster and Sentinel. */
        String url() {
            return host == null ? null : (ssl ? "rediss://" : "redis://") + new HostPort(host, port) + "/" + database;
        }

        /** Where Redis is, for log lines: never the password. */
        public String describe() {
            String scheme = ssl ? "rediss://" : "redis://";
            if (cluster()) return "cluster " + clusterNodes;
            if (sentinel()) return "sentinel master '" + sentinelMaster + "' via " + sentinelNodes;
            return scheme + new HostPort(host, port) + "/" + database;
        }

        @Override
        public String toString() {
            return "RedisSettings{" + describe() + ", user=" + user + ", password=" + (password == null ? "none" : "****")
                    + ", timeout=" + timeout + ", pool=" + poolMaxTotal + "/" + poolMaxIdle + "/" + poolMinIdle
                    + ", maxWait=" + poolMaxWait + '}';
        }
    }

    /** A Redis node; an IPv6 {@code host} is held without brackets and printed with them. */
    public record HostPort(String host, int port) {

        public HostPort {
            Objects.requireNonNull(host, "host");
        }

        @Override
        public String toString() {
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /**
     * The circuit breaker around Redis.
     *
     * @param failureThreshold consecutive failures that open the breaker ({@code redis.breaker.failure-threshold})
     * @param openBase         first open interval ({@code redis.breaker.open-base})
     * @param openMax          longest open interval; intervals double up to it ({@code redis.breaker.open-max})
     */
    public record BreakerSettings(int failureThreshold, Duration openBase, Duration openMax) {

        public BreakerSettings {
            Objects.requireNonNull(openBase, "openBase");
            Objects.requireNonNull(openMax, "openMax");
        }
    }

    /**
     * The denied-client cache in front of Redis.
     *
     * @param enabled         {@code denied-cache}
     * @param maxKeys         {@code denied-cache.max-keys}: most (rule, client) denials remembered
     * @param revalidateAfter {@code denied-cache.revalidate}: how long a remembered denial is answered
     *                        without asking Redis again, while Redis answers
     */
    public record DeniedCacheSettings(boolean enabled, int maxKeys, Duration revalidateAfter) {

        public DeniedCacheSettings {
            Objects.requireNonNull(revalidateAfter, "revalidateAfter");
        }
    }

    /**
     * Builds a {@link SluiceConfig}. Setters take parsed values; {@link #build()} checks every value
     * and combination and reports the first problem as a {@link ConfigException} naming the key
     * (with the value as configured when the configuration came from text). Not thread-safe.
     */
    public static final class Builder {
        private final List<RuleConfig> rules = new ArrayList<>();
        private Backend backend = Backend.REDIS;
        private boolean redisUrlSet;
        private String redisUrl = DEFAULT_REDIS_URL;
        private RedisUrl parsedUrl = RedisUrl.parse(DEFAULT_REDIS_URL);
        private String redisUser;
        private String redisPassword;
        private Boolean redisSsl;
        private List<HostPort> clusterNodes = List.of();
        private String sentinelMaster;
        private List<HostPort> sentinelNodes = List.of();
        private Duration redisTimeout = DEFAULT_REDIS_TIMEOUT;
        private int poolMaxTotal = DEFAULT_POOL_MAX_TOTAL;
        private Integer poolMaxIdle;
        private Integer poolMinIdle;
        private Duration poolMaxWait;
        private Duration clusterRefreshPeriod = DEFAULT_CLUSTER_REFRESH_PERIOD;
        private int breakerFailureThreshold = DEFAULT_BREAKER_FAILURE_THRESHOLD;
        private Duration breakerOpenBase = DEFAULT_BREAKER_OPEN_BASE;
        private Duration breakerOpenMax;
        private int localMaxKeys = DEFAULT_LOCAL_MAX_KEYS;
        private int maxHeldRequests = DEFAULT_MAX_HELD_REQUESTS;
        private boolean deniedCache = true;
        private int deniedCacheMaxKeys = DEFAULT_DENIED_CACHE_MAX_KEYS;
        private Duration deniedCacheRevalidate = DEFAULT_DENIED_CACHE_REVALIDATE;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private ClockSource clock = ClockSource.REDIS;
        private FailurePolicy failurePolicy = FailurePolicy.OPEN;
        private CidrSet trustedProxies = CidrSet.empty();
        private ClientIpResolver.Header clientIpHeader = ClientIpResolver.Header.X_FORWARDED_FOR;
        private int ipv6Prefix = DEFAULT_IPV6_PREFIX;
        private HeaderStyle headers = HeaderStyle.BOTH;
        private int statusCode = DEFAULT_STATUS_CODE;
        private Mode mode = Mode.ENFORCE;
        private boolean rulesCarryMode;
        private RequestMatcher exclude = RequestMatcher.none();
        private CidrSet exemptIps = CidrSet.empty();
        private Duration reload = Duration.ZERO;
        private boolean micrometer = true;
        private final Map<String, String> source = new TreeMap<>();

        private Builder() {
        }

        /** Adds a rule that applies to every path ({@code match=/**}) and counts per client IP ({@code key=ip}). */
        public Builder rule(Rule rule) {
            return rule(RuleConfig.of(rule));
        }

        /** Adds a rule with its HTTP side; rules are decided in the order added. */
        public Builder rule(RuleConfig rule) {
            rules.add(Objects.requireNonNull(rule, "rule"));
            return this;
        }

        /** Replaces every rule. */
        public Builder rules(List<RuleConfig> newRules) {
            rules.clear();
            newRules.forEach(this::rule);
            return this;
        }

        /** {@code backend}; default {@code redis}. */
        public Builder backend(Backend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
            return this;
        }

        /**
         * {@code redis.url}: {@code redis://[user[:password]@]host[:port][/db]}, {@code rediss://} for
         * TLS; default {@code redis://localhost:6379}. Standalone only.
         */
        public Builder redisUrl(String url) {
            this.parsedUrl = RedisUrl.parse(Objects.requireNonNull(url, "url"));
            this.redisUrl = url;
            this.redisUrlSet = true;
            return this;
        }

        /** {@code redis.user}: overrides the URL's; for Cluster and Sentinel. */
        public Builder redisUser(String user) {
            this.redisUser = user;
            return this;
        }

        /** {@code redis.password}: overrides the URL's; for Cluster and Sentinel. Never logged. */
        public Builder redisPassword(String password) {
            this.redisPassword = password;
            return this;
        }

        /** {@code redis.ssl}: overrides the URL's scheme; for Cluster and Sentinel. */
        public Builder redisSsl(boolean ssl) {
            this.redisSsl = ssl;
            return this;
        }

        /** {@code redis.cluster.nodes}: seeds; turns on Redis Cluster mode. */
        public Builder redisClusterNodes(List<HostPort> nodes) {
            this.clusterNodes = List.copyOf(nodes);
            return this;
        }

        /** {@code redis.sentinel.master} and {@code redis.sentinel.nodes}: turns on Sentinel mode. */
        public Builder redisSentinel(String master, List<HostPort> nodes) {
            this.sentinelMaster = master;
            this.sentinelNodes = nodes == null ? List.of() : List.copyOf(nodes);
            return this;
        }

        /** {@code redis.timeout}: connect and read timeout of every call; default 50 ms. */
        public Builder redisTimeout(Duration timeout) {
            this.redisTimeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /** {@code redis.pool.max-total}; default 64. */
        public Builder redisPoolMaxTotal(int maxTotal) {
            this.poolMaxTotal = maxTotal;
            return this;
        }

        /** {@code redis.pool.max-idle}; default: max-total. */
        public Builder redisPoolMaxIdle(int maxIdle) {
            this.poolMaxIdle = maxIdle;
            return this;
        }

        /** {@code redis.pool.min-idle}; default: 4, at most max-idle. */
        public Builder redisPoolMinIdle(int minIdle) {
            this.poolMinIdle = minIdle;
            return this;
        }

        /** {@code redis.pool.max-wait}; default: the timeout. */
        public Builder redisPoolMaxWait(Duration maxWait) {
            this.poolMaxWait = maxWait;
            return this;
        }

        /** {@code redis.cluster.refresh-period}: how often a Cluster client reads the slot map anyway; default 10 s. */
        public Builder redisClusterRefreshPeriod(Duration period) {
            this.clusterRefreshPeriod = Objects.requireNonNull(period, "period");
            return this;
        }

        /** {@code redis.breaker.failure-threshold}; default 3. */
        public Builder breakerFailureThreshold(int threshold) {
            this.breakerFailureThreshold = threshold;
            return this;
        }

        /** {@code redis.breaker.open-base}; default 100 ms. */
        public Builder breakerOpenBase(Duration openBase) {
            this.breakerOpenBase = Objects.requireNonNull(openBase, "openBase");
            return this;
        }

        /** {@code redis.breaker.open-max}; default 1 s, at least open-base. */
        public Builder breakerOpenMax(Duration openMax) {
            this.breakerOpenMax = openMax;
            return this;
        }

        /** {@code local.max-keys}; default 100000. */
        public Builder localMaxKeys(int maxKeys) {
            this.localMaxKeys = maxKeys;
            return this;
        }

        /** {@code max-held-requests}; default 50, at least 1. */
        public Builder maxHeldRequests(int max) {
            this.maxHeldRequests = max;
            return this;
        }

        /** {@code denied-cache}; default true. */
        public Builder deniedCache(boolean enabled) {
            this.deniedCache = enabled;
            return this;
        }

        /** {@code denied-cache.max-keys}; default 10000. */
        public Builder deniedCacheMaxKeys(int maxKeys) {
            this.deniedCacheMaxKeys = maxKeys;
            return this;
        }

        /** {@code denied-cache.revalidate}; default 1 s. */
        public Builder deniedCacheRevalidate(Duration after) {
            this.deniedCacheRevalidate = Objects.requireNonNull(after, "after");
            return this;
        }

        /** {@code key-prefix}; default {@code rl:}. */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        /** {@code clock}; default {@code redis}. */
        public Builder clock(ClockSource clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * The global {@code failure-policy}. Rules carry their own ({@link Rule#failurePolicy()}); the
         * text front end gives it to every rule that sets none.
         */
        public Builder failurePolicy(FailurePolicy policy) {
            this.failurePolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** {@code trusted-proxies}; default none. */
        public Builder trustedProxies(CidrSet proxies) {
            this.trustedProxies = Objects.requireNonNull(proxies, "proxies");
            return this;
        }

        /** {@code client-ip-header}; default {@code X-Forwarded-For}. */
        public Builder clientIpHeader(ClientIpResolver.Header header) {
            this.clientIpHeader = Objects.requireNonNull(header, "header");
            return this;
        }

        /** {@code ipv6-prefix}; default 64. */
        public Builder ipv6Prefix(int prefix) {
            this.ipv6Prefix = prefix;
            return this;
        }

        /** {@code headers}; default {@code both}. */
        public Builder headers(HeaderStyle style) {
            this.headers = Objects.requireNonNull(style, "style");
            return this;
        }

        /** {@code status-code}; default 429. */
        public Builder statusCode(int status) {
            this.statusCode = status;
            return this;
        }

        /**
         * {@code mode}; default {@code enforce}. Rules carry their own ({@link Rule#dryRun()}), as the text
         * front end sets them from this key and {@code rule.<name>.mode}: {@code DRY_RUN} here with a rule
         * that enforces fails {@link #build()}, rather than leave a shadow roll-out refusing requests.
         */
        public Builder mode(Mode mode) {
            this.mode = Objects.requireNonNull(mode, "mode");
            this.rulesCarryMode = false;
            return this;
        }

        /** The text front end's {@code mode}: its rules already carry it, or their own {@code rule.<name>.mode}. */
        Builder modeOfRules(Mode mode) {
            this.mode = Objects.requireNonNull(mode, "mode");
            this.rulesCarryMode = true;
            return this;
        }

        /** {@code exclude}; default none. */
        public Builder exclude(RequestMatcher exclude) {
            this.exclude = Objects.requireNonNull(exclude, "exclude");
            return this;
        }

        /** {@code exempt-ips}; default none. */
        public Builder exemptIps(CidrSet exempt) {
            this.exemptIps = Objects.requireNonNull(exempt, "exempt");
            return this;
        }

        /** {@code reload}: how often the filter checks its properties file for changes; default zero (never). */
        public Builder reload(Duration interval) {
            this.reload = Objects.requireNonNull(interval, "interval");
            return this;
        }

        /** {@code metrics.micrometer}; default true. */
        public Builder micrometer(boolean enabled) {
            this.micrometer = enabled;
            return this;
        }

        /** The text the configuration came from (substituted, unmasked): for messages and {@link #source()}. */
        Builder source(Map<String, String> text) {
            source.clear();
            source.putAll(text);
            return this;
        }

        private void redisFrom(RedisSettings r) {
            clusterNodes = r.clusterNodes();
            sentinelMaster = r.sentinelMaster();
            sentinelNodes = r.sentinelNodes();
            if (!r.cluster() && !r.sentinel()) {
                parsedUrl = new RedisUrl(r.ssl(), r.user(), r.password(), new HostPort(r.host(), r.port()), r.database());
                redisUrl = parsedUrl.toString();
                redisUrlSet = true;
            }
            redisUser = r.user();
            redisPassword = r.password();
            redisSsl = r.ssl();
            redisTimeout = r.timeout();
            poolMaxTotal = r.poolMaxTotal();
            poolMaxIdle = r.poolMaxIdle();
            poolMinIdle = r.poolMinIdle();
            poolMaxWait = r.poolMaxWait();
            clusterRefreshPeriod = r.clusterRefreshPeriod();
        }

        /**
         * Checks everything and builds the configuration.
         *
         * @throws ConfigException naming the first key at fault, its value and what is accepted
         */
        public SluiceConfig build() {
            validateRules();
            RedisSettings redis = redis();
            BreakerSettings breaker = breaker();
            atLeast(LOCAL_MAX_KEYS, localMaxKeys, 1);
            atLeast(MAX_HELD_REQUESTS, maxHeldRequests, 1);
            atLeast(DENIED_CACHE_MAX_KEYS, deniedCacheMaxKeys, 1);
            atLeast(DENIED_CACHE_REVALIDATE, deniedCacheRevalidate, ONE_MS);
            validateKeyPrefix();
            between(IPV6_PREFIX, ipv6Prefix, 0, 128);
            between(STATUS_CODE, statusCode, 400, 599);
            if (!reload.isZero()) atLeast(RELOAD, reload, Duration.ofMillis(100));
            return new SluiceConfig(this, redis, breaker);
        }

        private void validateRules() {
            if (rules.isEmpty()) {
                throw new ConfigException(RULES, shown(RULES, null), "required: at least one rule");
            }
            if (mode == Mode.DRY_RUN && !rulesCarryMode) {
                for (RuleConfig r : rules) {
                    if (!r.rule().dryRun()) {
                        throw new ConfigException(MODE, "dry-run", "a mode each rule carries: rule " + r.rule().name()
                                + " enforces; build it with Rule.builder(...).dryRun(true), as mode=dry-run in a"
                                + " configuration file does for every rule");
                    }
                }
            }
            Set<String> names = new LinkedHashSet<>();
            for (RuleConfig r : rules) {
                if (!names.add(r.name())) {
                    throw new ConfigException(RULES, shown(RULES, String.join(", ", names)), "each rule once; '"
                            + r.name() + "' is listed twice");
                }
                String name = r.name();
                if (r.count() != null && r.rule().algorithm() == dev.sluice.limiter.Algorithm.LEAKY_BUCKET) {
                    throw new ConfigException(ConfigKeys.rule(name, COUNT), shown(ConfigKeys.rule(name, COUNT), r.count().toString()),
                            "not available with leaky-bucket: a request it admits has been given its drain slot, which"
                                    + " cannot be given back; remove it or use another algorithm");
                }
                if (r.count() != null && r.rule().algorithm().isConcurrency()) {
                    throw new ConfigException(ConfigKeys.rule(name, COUNT), shown(ConfigKeys.rule(name, COUNT), r.count().toString()),
                            "not available with concurrency: a request's slot is freed when it completes, whatever its"
                                    + " status; remove it, or count outcomes in a rule of its own");
                }
                if (r.actualCost() != null && (!r.rule().algorithm().settlesCost() || r.rule().approximate())) {
                    throw new ConfigException(ConfigKeys.rule(name, ACTUAL_COST), shown(ConfigKeys.rule(name, ACTUAL_COST),
                            r.actualCost().toString()), "only for fixed-window, sliding-window-counter, token-bucket and gcra,"
                            + " exact (without " + ConfigKeys.rule(name, SYNC) + "); the rule is " + r.rule().algorithm().id()
                            + (r.rule().approximate() ? " with sync" : "") + ": remove one of them");
                }
                if (r.actualCost() != null && r.actualCost().max() < r.rule().cost()) {
                    String key = ConfigKeys.rule(name, MAX_ACTUAL_COST);
                    throw new ConfigException(key, shown(key, Long.toString(r.actualCost().max())), "at least the rule's"
                            + " cost (" + ConfigKeys.rule(name, COST) + "=" + r.rule().cost() + "): a bound below what"
                            + " admission takes would give back part of every estimate");
                }
                if (r.count() != null && r.rule().approximate()) {
                    throw new ConfigException(ConfigKeys.rule(name, COUNT), shown(ConfigKeys.rule(name, COUNT), r.count().toString()),
                            "not available with " + ConfigKeys.rule(name, SYNC) + " (the approximate mode counts per"
                                    + " instance and sends its counts later, so it cannot tell which window a give-back"
                                    + " belongs to); remove one of them");
                }
                if (!r.plans().isEmpty() && r.planKey() == null) {
                    throw new ConfigException(ConfigKeys.rule(name, PLAN), null, "required with " + ConfigKeys.rule(name, PLANS)
                            + ": the key source naming a request's plan, e.g. attr:plan set by your authentication filter");
                }
                if (r.planSourceClientSet() && !r.planSourceTrusted()) {
                    throw new ConfigException(ConfigKeys.rule(name, PLAN), shown(ConfigKeys.rule(name, PLAN), r.planKey().toString()),
                            "the client sets this source itself, so any client could name a plan of its choice"
                                    + " (an unlimited one); name the plan with attr:NAME set by your authentication filter"
                                    + " (e.g. attr:plan), or, if a trusted hop (a gateway, an authentication filter) sets this"
                                    + " value and strips the client's own, say so with "
                                    + ConfigKeys.rule(name, PLAN_SOURCE_TRUSTED) + "=true");
                }
                if (r.planSourceTrusted() && r.planKey() == null) {
                    throw new ConfigException(ConfigKeys.rule(name, PLAN_SOURCE_TRUSTED), "true", "only with "
                            + ConfigKeys.rule(name, PLAN) + ": it says that a trusted hop sets the plan source");
                }
                if (r.plans().isEmpty() && r.planKey() != null) {
                    throw new ConfigException(ConfigKeys.rule(name, PLANS), null, "required with " + ConfigKeys.rule(name, PLAN)
                            + ": the plan names, e.g. free, pro");
                }
            }
        }

        private RedisSettings redis() {
            boolean cluster = !clusterNodes.isEmpty();
            boolean sentinel = sentinelMaster != null;
            if (sentinel && sentinelNodes.isEmpty()) {
                throw new ConfigException(REDIS_SENTINEL_NODES, shown(REDIS_SENTINEL_NODES, null), "required with "
                        + REDIS_SENTINEL_MASTER + ": the sentinels as " + HostPorts.ACCEPTED.replace("6379", "26379"));
            }
            if (!sentinel && !sentinelNodes.isEmpty()) {
                throw new ConfigException(REDIS_SENTINEL_MASTER, null, "required with " + REDIS_SENTINEL_NODES
                        + ": the name of the master the sentinels monitor, e.g. mymaster");
            }
            if (cluster && sentinel) {
                throw new ConfigException(REDIS_CLUSTER_NODES, shown(REDIS_CLUSTER_NODES, clusterNodes.toString()),
                        "Redis Cluster and Sentinel exclude each other: set either " + REDIS_CLUSTER_NODES + " or "
                                + REDIS_SENTINEL_MASTER + " and " + REDIS_SENTINEL_NODES);
            }
            if ((cluster || sentinel) && redisUrlSet) {
                throw new ConfigException(REDIS_URL, shown(REDIS_URL, redisUrl), "only for a standalone Redis; with "
                        + (cluster ? REDIS_CLUSTER_NODES : REDIS_SENTINEL_MASTER) + " remove it (or leave it blank)"
                        + " and give credentials and TLS with " + REDIS_USER + ", " + REDIS_PASSWORD + " and " + REDIS_SSL);
            }
            RedisUrl url = cluster || sentinel ? null : parsedUrl;
            String user = redisUser != null ? redisUser : url == null ? null : url.user();
            String password = redisPassword != null ? redisPassword : url == null ? null : url.password();
            boolean ssl = redisSsl != null ? redisSsl : url != null && url.ssl();

            atLeast(REDIS_TIMEOUT, redisTimeout, ONE_MS);
            atLeast(REDIS_POOL_MAX_TOTAL, poolMaxTotal, 1);
            int maxIdle = poolMaxIdle == null ? poolMaxTotal : poolMaxIdle;
            between(REDIS_POOL_MAX_IDLE, maxIdle, 0, poolMaxTotal);
            int minIdle = poolMinIdle == null ? Math.min(DEFAULT_POOL_MIN_IDLE, maxIdle) : poolMinIdle;
            between(REDIS_POOL_MIN_IDLE, minIdle, 0, maxIdle);
            Duration maxWait = poolMaxWait == null ? redisTimeout : poolMaxWait;
            atLeast(REDIS_POOL_MAX_WAIT, maxWait, Duration.ZERO);
            atLeast(REDIS_CLUSTER_REFRESH_PERIOD, clusterRefreshPeriod, MIN_CLUSTER_REFRESH_PERIOD);
            return new RedisSettings(url == null ? null : url.address().host(), url == null ? 0 : url.address().port(),
                    url == null ? 0 : url.database(), user, password, ssl, clusterNodes, sentinelMaster, sentinelNodes,
                    redisTimeout, poolMaxTotal, maxIdle, minIdle, maxWait, clusterRefreshPeriod);
        }

        private BreakerSettings breaker() {
            atLeast(REDIS_BREAKER_FAILURE_THRESHOLD, breakerFailureThreshold, 1);
            atLeast(REDIS_BREAKER_OPEN_BASE, breakerOpenBase, ONE_MS);
            Duration openMax = breakerOpenMax != null ? breakerOpenMax
                    : breakerOpenBase.compareTo(DEFAULT_BREAKER_OPEN_MAX) > 0 ? breakerOpenBase : DEFAULT_BREAKER_OPEN_MAX;
            if (openMax.compareTo(breakerOpenBase) < 0) {
                throw new ConfigException(REDIS_BREAKER_OPEN_MAX, shown(REDIS_BREAKER_OPEN_MAX, openMax.toString()),
                        Durations.ACCEPTED + ", at least " + ConfigValues.text(breakerOpenBase) + " ("
                                + REDIS_BREAKER_OPEN_BASE + ")");
            }
            return new BreakerSettings(breakerFailureThreshold, breakerOpenBase, openMax);
        }

        private void validateKeyPrefix() {
            boolean bad = keyPrefix.isEmpty() || keyPrefix.length() > MAX_KEY_PREFIX_LENGTH || keyPrefix.chars()
                    .anyMatch(c -> c == '{' || c == '}' || Character.isWhitespace(c) || Character.isISOControl(c));
            if (bad) {
                throw new ConfigException(KEY_PREFIX, shown(KEY_PREFIX, keyPrefix), "a non-empty prefix of at most "
                        + MAX_KEY_PREFIX_LENGTH + " characters without '{', '}', whitespace or control characters,"
                        + " e.g. rl: or myapp:rl:");
            }
        }

        private void atLeast(String key, long value, long min) {
            if (value < min) throw new ConfigException(key, shown(key, Long.toString(value)), integerRange(min, Integer.MAX_VALUE));
        }

        private void between(String key, long value, long min, long max) {
            if (value < min || value > max) {
                throw new ConfigException(key, shown(key, Long.toString(value)), integerRange(min, max));
            }
        }

        private void atLeast(String key, Duration value, Duration min) {
            if (value.compareTo(min) < 0) {
                throw new ConfigException(key, shown(key, value.toString()), Durations.ACCEPTED + ", at least "
                        + ConfigValues.text(min));
            }
        }

        /** The value as configured when it came from text, else as built. */
        private String shown(String key, String built) {
            String text = source.get(key);
            return text != null && !text.isEmpty() ? text : built;
        }
    }
}
