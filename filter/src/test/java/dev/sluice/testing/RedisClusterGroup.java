package dev.sluice.testing;

import dev.sluice.config.SluiceConfig.HostPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.MigrateParams;
import redis.clients.jedis.resps.ClusterShardInfo;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of {@code masters} masters, each with {@code replicas} replicas (none by default),
 * each node a {@link RedisProcess} of the test's own started with {@code --cluster-enabled yes}, joined
 * by {@code redis-cli --cluster create ... --cluster-replicas R --cluster-yes}. {@link #start} returns
 * once every node reports {@code cluster_state:ok} with all 16384 slots assigned and every replica is
 * in sync with its master. A master that does not answer for {@code cluster-node-timeout} is replaced by
 * its replica ({@code cluster-replica-validity-factor 0}: whatever its replication lag); meanwhile the
 * other masters go on answering for their slots ({@code cluster-require-full-coverage no}: with the
 * default, every node refuses every command with {@code CLUSTERDOWN} until the lost slots are covered).
 */
public final class RedisClusterGroup implements AutoCloseable {

    private final List<RedisProcess> nodes = new ArrayList<>();
    private final int replicas;

    private RedisClusterGroup(int replicas) {
        this.replicas = replicas;
    }

    public static RedisClusterGroup start(int masters) {
        return start(masters, 0, Duration.ofMillis(2000));
    }

    /**
     * @param masters     masters, holding the slots evenly
     * @param replicas    replicas per master
     * @param nodeTimeout {@code cluster-node-timeout}: how long a master may not answer before its replica takes over
     */
    public static RedisClusterGroup start(int masters, int replicas, Duration nodeTimeout) {
        RedisClusterGroup g = new RedisClusterGroup(replicas);
        try {
            for (int i = 0; i < masters * (1 + replicas); i++) {
                g.nodes.add(RedisProcess.start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", Long.toString(nodeTimeout.toMillis()),
                        "--cluster-replica-validity-factor", "0", "--cluster-require-full-coverage", "no"));
            }
            g.create();
            for (RedisProcess n : g.nodes) {
                Poll.until(Duration.ofSeconds(20), "cluster_state:ok on " + n.port(), () -> clusterOk(n));
            }
            g.awaitReplicasInSync();
            return g;
        } catch (RuntimeException | Error e) {
            g.close();
            throw e;
        }
    }

    /** Waits until every live node is a master or a replica in sync with its master (no resync going on). */
    public void awaitReplicasInSync() {
        if (replicas == 0) return;
        for (RedisProcess n : nodes) {
            if (!n.isAlive()) continue;
            Poll.until(Duration.ofSeconds(30), "node " + n.port() + " a master or a replica in sync", () -> roleReady(n));
        }
    }

    private static boolean roleReady(RedisProcess n) {
        try (Jedis j = new Jedis("127.0.0.1", n.port(), 1000)) {
            String info = j.info("replication");
            return info.contains("role:master") || info.contains("master_link_status:up")
                    && info.contains("master_sync_in_progress:0");
        } catch (RuntimeException e) {
            return false;
        }
    }

    private void create() {
        List<String> cmd = new ArrayList<>(List.of(redisCli(), "--cluster", "create"));
        for (RedisProcess n : nodes) cmd.add("127.0.0.1:" + n.port());
        if (replicas > 0) cmd.addAll(List.of("--cluster-replicas", Integer.toString(replicas)));
        cmd.add("--cluster-yes");
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("redis-cli --cluster create failed: " + out);
            }
        } catch (IOException e) {
            throw new IllegalStateException("could not run redis-cli", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String redisCli() {
        String server = RedisProcess.binary();
        if (server == null) throw new IllegalStateException("redis-server is not on PATH");
        java.io.File cli = new java.io.File(new java.io.File(server).getParentFile(), "redis-cli");
        if (!cli.canExecute()) throw new IllegalStateException("redis-cli is not next to " + server);
        return cli.getAbsolutePath();
    }

    private static boolean clusterOk(RedisProcess n) {
        try (Jedis j = new Jedis("127.0.0.1", n.port(), 1000)) {
            String info = j.clusterInfo();
            return info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384");
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Every node, as seeds for {@code redis.cluster.nodes}. */
    public List<HostPort> seeds() {
        List<HostPort> out = new ArrayList<>();
        for (RedisProcess n : nodes) out.add(new HostPort("127.0.0.1", n.port()));
        return out;
    }

    public List<RedisProcess> nodes() {
        return List.copyOf(nodes);
    }

    /** How many keys under {@code pattern} each master holds, by port. */
    public Map<Integer, Integer> keysPerNode(String pattern) {
        Map<Integer, Integer> out = new LinkedHashMap<>();
        for (RedisProcess n : nodes) {
            try (Jedis j = new Jedis("127.0.0.1", n.port(), 2000)) {
                out.put(n.port(), j.keys(pattern).size());
            }
        }
        return out;
    }

    /** The master that serves {@code key}'s slot now, as a node that answers sees it. */
    public RedisProcess ownerOf(String key) {
        int slot = JedisClusterCRC16.getSlot(key);
        try (Jedis any = new Jedis("127.0.0.1", answering().port(), 2000)) {
            for (ClusterShardInfo shard : any.clusterShards()) {
                for (List<Long> range : shard.getSlots()) {
                    if (slot >= range.get(0) && slot <= range.get(1)) {
                        long port = shard.getNodes().stream().filter(n -> "master".equals(n.getRole()))
                                .findFirst().orElseThrow().getPort();
                        return nodes.stream().filter(n -> n.port() == port).findFirst().orElseThrow();
                    }
                }
            }
        }
        throw new IllegalStateException("no master serves slot " + slot);
    }

    /**
     * Moves {@code key}'s slot, with its keys, to {@code target} the way {@code redis-cli --cluster
     * reshard} does (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE on every master). Clients that cached
     * the old owner get {@code MOVED} on their next command for that slot.
     */
    public void moveSlotOf(String key, RedisProcess target) {
        RedisProcess source = ownerOf(key);
        startMovingSlotOf(key, target);
        finishMovingSlotOf(key, source, target);
    }

    /**
     * Starts moving {@code key}'s slot to {@code target} ({@code CLUSTER SETSLOT ... IMPORTING} there,
     * {@code MIGRATING} on its owner) and moves none of its keys yet: while it migrates, a call naming
     * several of the slot's keys, some of them absent from the owner, is refused with {@code TRYAGAIN}.
     */
    public void startMovingSlotOf(String key, RedisProcess target) {
        int slot = JedisClusterCRC16.getSlot(key);
        RedisProcess source = ownerOf(key);
        if (source == target) throw new IllegalArgumentException("slot " + slot + " is already on " + target.port());
        try (Jedis from = new Jedis("127.0.0.1", source.port(), 5000);
             Jedis to = new Jedis("127.0.0.1", target.port(), 5000)) {
            to.clusterSetSlotImporting(slot, from.clusterMyId());
            from.clusterSetSlotMigrating(slot, to.clusterMyId());
        }
    }

    /** Moves the keys of {@code key}'s slot, migrating from {@code source}, to {@code target} and gives it the slot. */
    public void finishMovingSlotOf(String key, RedisProcess source, RedisProcess target) {
        int slot = JedisClusterCRC16.getSlot(key);
        try (Jedis from = new Jedis("127.0.0.1", source.port(), 5000);
             Jedis to = new Jedis("127.0.0.1", target.port(), 5000)) {
            String targetId = to.clusterMyId();
            List<String> keys;
            while (!(keys = from.clusterGetKeysInSlot(slot, 100)).isEmpty()) {
                from.migrate("127.0.0.1", target.port(), 0, 5000, new MigrateParams(), keys.toArray(new String[0]));
            }
            for (RedisProcess n : masters()) {
                try (Jedis j = new Jedis("127.0.0.1", n.port(), 5000)) {
                    j.clusterSetSlotNode(slot, targetId);
                }
            }
        }
    }

    /** Calls {@code node} has refused with {@code TRYAGAIN} since it started ({@code INFO errorstats}). */
    public static long tryAgainRefusals(RedisProcess node) {
        try (Jedis j = new Jedis("127.0.0.1", node.port(), 5000)) {
            for (String line : j.info("errorstats").split("\r?\n")) {
                if (line.startsWith("errorstat_TRYAGAIN:count=")) {
                    return Long.parseLong(line.substring("errorstat_TRYAGAIN:count=".length()).trim());
                }
            }
            return 0;
        }
    }

    /** A node that answers now (not paused, not killed). */
    private RedisProcess answering() {
        for (RedisProcess n : nodes) {
            if (!n.isAlive() || n.isPaused()) continue;
            try (Jedis j = new Jedis("127.0.0.1", n.port(), 500)) {
                j.ping();
                return n;
            } catch (RuntimeException e) {
                // next
            }
        }
        throw new IllegalStateException("no node of the cluster answers");
    }

    /** The masters that serve slots now. */
    public List<RedisProcess> masters() {
        List<RedisProcess> out = new ArrayList<>();
        try (Jedis any = new Jedis("127.0.0.1", answering().port(), 2000)) {
            for (ClusterShardInfo shard : any.clusterShards()) {
                if (shard.getSlots().isEmpty()) continue;
                shard.getNodes().stream().filter(n -> "master".equals(n.getRole()) && "online".equals(n.getHealth()))
                        .forEach(n -> nodes.stream().filter(p -> p.port() == n.getPort()).forEach(out::add));
            }
        }
        return out;
    }

    /**
     * Waits until another node serves the slots {@code lost} served (its replica was promoted), as the
     * nodes that answer see it, and returns the new master.
     */
    public RedisProcess awaitPromotion(RedisProcess lost, String keyOfItsSlots, Duration timeout) {
        RedisProcess[] promoted = {null};
        Poll.until(timeout, "a replica of " + lost.port() + " promoted", () -> {
            try {
                RedisProcess owner = ownerOf(keyOfItsSlots);
                if (owner == lost) return false;
                try (Jedis j = new Jedis("127.0.0.1", owner.port(), 500)) {
                    if (!j.info("replication").contains("role:master")) return false;
                }
                promoted[0] = owner;
                return true;
            } catch (RuntimeException notYet) {
                return false;
            }
        });
        return promoted[0];
    }

    @Override
    public void close() {
        for (RedisProcess n : nodes) n.close();
    }
}
