package dev.sluice.testing;

import dev.sluice.config.SluiceConfig.HostPort;
import redis.clients.jedis.Jedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A master, one replica and three Sentinels (quorum 2), each a {@link RedisProcess} of the test's
 * own on a free port. {@link #start()} returns once the replica is in sync and every Sentinel knows
 * the replica and the other Sentinels, so {@link #failover()} can promote the replica at once.
 * Sentinels consider the master down after 1 s.
 */
public final class RedisSentinelGroup implements AutoCloseable {

    public static final String MASTER_NAME = "sluice-master";

    private final List<RedisProcess> all = new ArrayList<>();
    private final RedisProcess master;
    private final RedisProcess replica;
    private final List<RedisProcess> sentinels = new ArrayList<>();

    private RedisSentinelGroup() {
        try {
            master = add(RedisProcess.start());
            replica = add(RedisProcess.start("--replicaof", "127.0.0.1", Integer.toString(master.port())));
            String conf = "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + master.port() + " 2\n"
                    + "sentinel down-after-milliseconds " + MASTER_NAME + " 1000\n"
                    + "sentinel failover-timeout " + MASTER_NAME + " 10000\n"
                    + "sentinel parallel-syncs " + MASTER_NAME + " 1\n";
            for (int i = 0; i < 3; i++) {
                sentinels.add(add(RedisProcess.startSentinel(conf)));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Starts the group and waits (at most 20 s) until it can fail over. */
    public static RedisSentinelGroup start() {
        RedisSentinelGroup g = new RedisSentinelGroup();
        try {
            Poll.until(Duration.ofSeconds(20), "replica in sync with the master", () -> g.replicaInSync(g.replica));
            for (RedisProcess s : g.sentinels) {
                Poll.until(Duration.ofSeconds(20), "sentinel " + s.port() + " knows the replica and 2 sentinels",
                        () -> g.sentinelReady(s));
            }
            return g;
        } catch (RuntimeException | Error e) {
            g.close();
            throw e;
        }
    }

    private RedisProcess add(RedisProcess p) {
        all.add(p);
        return p;
    }

    public String masterName() {
        return MASTER_NAME;
    }

    public List<HostPort> sentinelNodes() {
        List<HostPort> out = new ArrayList<>();
        for (RedisProcess s : sentinels) out.add(new HostPort("127.0.0.1", s.port()));
        return out;
    }

    public List<RedisProcess> sentinels() {
        return List.copyOf(sentinels);
    }

    public RedisProcess initialMaster() {
        return master;
    }

    public RedisProcess initialReplica() {
        return replica;
    }

    /** The master's port as the first Sentinel sees it now. */
    public int masterPort() {
        try (Jedis j = new Jedis("127.0.0.1", sentinels.get(0).port(), 1000)) {
            return Integer.parseInt(j.sentinelGetMasterAddrByName(MASTER_NAME).get(1));
        }
    }

    /** {@code SENTINEL FAILOVER}: promotes the replica without waiting for the master to fail. */
    public void failover() {
        try (Jedis j = new Jedis("127.0.0.1", sentinels.get(0).port(), 1000)) {
            j.sentinelFailover(MASTER_NAME);
        }
    }

    /** Waits until every Sentinel names a master other than {@code oldPort} and that server says it is a master. */
    public int awaitNewMaster(int oldPort, Duration timeout) {
        Poll.until(timeout, "a new master announced by all sentinels", () -> {
            for (RedisProcess s : sentinels) {
                try (Jedis j = new Jedis("127.0.0.1", s.port(), 1000)) {
                    if (Integer.parseInt(j.sentinelGetMasterAddrByName(MASTER_NAME).get(1)) == oldPort) return false;
                }
            }
            int port = masterPort();
            try (Jedis j = new Jedis("127.0.0.1", port, 1000)) {
                return j.info("replication").contains("role:master");
            }
        });
        return masterPort();
    }

    private boolean replicaInSync(RedisProcess r) {
        try (Jedis j = new Jedis("127.0.0.1", r.port(), 1000)) {
            return j.info("replication").contains("master_link_status:up");
        } catch (RuntimeException e) {
            return false;
        }
    }

    private boolean sentinelReady(RedisProcess s) {
        try (Jedis j = new Jedis("127.0.0.1", s.port(), 1000)) {
            return j.sentinelReplicas(MASTER_NAME).size() == 1 && j.sentinelSentinels(MASTER_NAME).size() == 2;
        } catch (RuntimeException e) {
            return false;
        }
    }

    @Override
    public void close() {
        for (RedisProcess p : all) p.close();
    }
}
