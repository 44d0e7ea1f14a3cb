package dev.sluice.testing;

import dev.sluice.config.SluiceConfig.HostPort;
import dev.sluice.config.SluiceConfig.RedisSettings;

import java.net.URI;
import java.time.Duration;
import java.util.List;

/**
 * Builds {@link RedisSettings} for tests without going through configuration parsing: standalone
 * from a URL, Sentinel or Cluster from test-started servers, with the contract's defaults
 * (timeout 50 ms, pool 16/16/0, max-wait = timeout) unless a test says otherwise.
 */
public final class TestRedisSettings {

    private String host = "127.0.0.1";
    private int port = 6379;
    private int database;
    private String user;
    private String password;
    private boolean ssl;
    private List<HostPort> clusterNodes = List.of();
    private String sentinelMaster;
    private List<HostPort> sentinelNodes = List.of();
    private Duration timeout = Duration.ofMillis(50);
    private int poolMaxTotal = 16;
    private int poolMaxIdle = 16;
    private int poolMinIdle;
    private Duration poolMaxWait;
    private Duration clusterRefreshPeriod = Duration.ofSeconds(10);

    private TestRedisSettings() {
    }

    /** Standalone, from {@code redis://[user[:password]@]host[:port][/db]} or {@code rediss://...}. */
    public static TestRedisSettings standalone(String url) {
        URI u = URI.create(url);
        TestRedisSettings s = new TestRedisSettings();
        s.ssl = "rediss".equals(u.getScheme());
        s.host = u.getHost();
        s.port = u.getPort() < 0 ? 6379 : u.getPort();
        if (u.getPath() != null && u.getPath().length() > 1) s.database = Integer.parseInt(u.getPath().substring(1));
        if (u.getUserInfo() != null) {
            String[] up = u.getUserInfo().split(":", 2);
            if (up.length == 2) {
                s.user = up[0].isEmpty() ? null : up[0];
                s.password = up[1];
            } else {
                s.password = up[0];
            }
        }
        return s;
    }

    public static TestRedisSettings cluster(List<HostPort> seeds) {
        TestRedisSettings s = new TestRedisSettings();
        s.clusterNodes = List.copyOf(seeds);
        return s;
    }

    public static TestRedisSettings sentinel(String master, List<HostPort> sentinels) {
        TestRedisSettings s = new TestRedisSettings();
        s.sentinelMaster = master;
        s.sentinelNodes = List.copyOf(sentinels);
        return s;
    }

    public TestRedisSettings timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    public TestRedisSettings pool(int maxTotal, Duration maxWait) {
        this.poolMaxTotal = maxTotal;
        this.poolMaxIdle = maxTotal;
        this.poolMaxWait = maxWait;
        return this;
    }

    /** {@code redis.cluster.refresh-period}. */
    public TestRedisSettings clusterRefreshPeriod(Duration period) {
        this.clusterRefreshPeriod = period;
        return this;
    }

    public TestRedisSettings credentials(String user, String password) {
        this.user = user;
        this.password = password;
        return this;
    }

    public TestRedisSettings ssl(boolean on) {
        this.ssl = on;
        return this;
    }

    public RedisSettings build() {
        return new RedisSettings(host, port, database, user, password, ssl, clusterNodes, sentinelMaster, sentinelNodes,
                timeout, poolMaxTotal, poolMaxIdle, poolMinIdle, poolMaxWait == null ? timeout : poolMaxWait,
                clusterRefreshPeriod);
    }
}
