package dev.sluice.config;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Everything the filter and the engines need, parsed and validated once. Built by
 * {@link ConfigLoader}; immutable. Field names follow the configuration keys of the contract.
 *
 * @param rules            the rules, in the order listed in {@code rules}
 * @param backend          {@code redis} or {@code local}
 * @param redis            how to reach Redis (ignored with {@code backend=local})
 * @param keyPrefix        {@code key-prefix}, e.g. {@code rl:}
 * @param clock            {@code clock}: where the scripts read the time
 * @param failurePolicy    the global {@code failure-policy} (each rule carries its effective one)
 * @param trustedProxies   {@code trusted-proxies}: CIDR strings, validated
 * @param clientIpHeader   {@code client-ip-header}
 * @param ipv6Prefix       {@code ipv6-prefix}, 0..128
 * @param headers          {@code headers}
 * @param statusCode       {@code status-code}, 400..599
 * @param mode             {@code mode}
 * @param exclude          {@code exclude}: path patterns, validated
 * @param exemptIps        {@code exempt-ips}: CIDR strings, validated
 * @param localMaxKeys     {@code local.max-keys}: bound on the local engine's keys
 * @param deniedCache      {@code denied-cache}: answer a client Redis denied locally until its retry-after
 * @param deniedCacheMaxKeys {@code denied-cache.max-keys}: bound on the denied clients remembered
 * @param breaker          circuit breaker settings
 * @param extra            every key/value as given after substitution (for diagnostics), secrets masked,
 *                         sorted by key
 */
public record SluiceConfig(
        List<RuleConfig> rules,
        Backend backend,
        RedisSettings redis,
        String keyPrefix,
        ClockSource clock,
        dev.sluice.limiter.FailurePolicy failurePolicy,
        List<String> trustedProxies,
        dev.sluice.key.ClientIpResolver.Header clientIpHeader,
        int ipv6Prefix,
        HeaderStyle headers,
        int statusCode,
        Mode mode,
        List<String> exclude,
        List<String> exemptIps,
        int localMaxKeys,
        boolean deniedCache,
        int deniedCacheMaxKeys,
        BreakerSettings breaker,
        Map<String, String> extra) {

    public SluiceConfig {
        rules = List.copyOf(rules);
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(redis, "redis");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        trustedProxies = List.copyOf(trustedProxies);
        Objects.requireNonNull(clientIpHeader, "clientIpHeader");
        Objects.requireNonNull(headers, "headers");
        Objects.requireNonNull(mode, "mode");
        exclude = List.copyOf(exclude);
        exemptIps = List.copyOf(exemptIps);
        Objects.requireNonNull(breaker, "breaker");
        extra = Collections.unmodifiableMap(new TreeMap<>(extra));
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
     * How to reach Redis. Exactly one of: standalone ({@code url}), Sentinel ({@code sentinelMaster}
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
                                Duration poolMaxWait) {

        public RedisSettings {
            clusterNodes = List.copyOf(clusterNodes);
            sentinelNodes = List.copyOf(sentinelNodes);
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(poolMaxWait, "poolMaxWait");
        }

        public boolean cluster() {
            return !clusterNodes.isEmpty();
        }

        public boolean sentinel() {
            return sentinelMaster != null;
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
}
