package dev.sluice.dist;

import dev.sluice.testing.TestRedis;
import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The test Redis's {@code CLIENT LIST}, narrowed to the connections one server JVM holds (matched
 * by the client's local port with the JVM's sockets in {@code /proc}), so other servers sharing
 * the Redis do not blur a leak check.
 */
final class RedisConnections {

    private RedisConnections() {
    }

    /** How many clients Redis lists whose connection belongs to process {@code pid}. */
    static int of(long pid) {
        Set<Integer> ports = localPortsToRedis(pid);
        try (Jedis jedis = new Jedis(TestRedis.host(), TestRedis.port())) {
            int n = 0;
            for (String client : jedis.clientList().split("\n")) {
                int port = clientPort(client);
                if (port > 0 && ports.contains(port)) n++;
            }
            return n;
        }
    }

    /** The {@code addr=ip:port} field's port of one {@code CLIENT LIST} line. */
    private static int clientPort(String line) {
        for (String field : line.split(" ")) {
            if (field.startsWith("addr=")) {
                return Integer.parseInt(field.substring(field.lastIndexOf(':') + 1).trim());
            }
        }
        return -1;
    }

    /** Local ports of the process's TCP sockets connected to the test Redis's port. */
    private static Set<Integer> localPortsToRedis(long pid) {
        Set<String> inodes = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "fd"))) {
            for (Path fd : fds) {
                try {
                    String link = Files.readSymbolicLink(fd).toString();
                    if (link.startsWith("socket:[")) inodes.add(link.substring(8, link.length() - 1));
                } catch (IOException closedMeanwhile) {
                    // the descriptor went away while listing
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list the sockets of pid " + pid, e);
        }
        Set<Integer> ports = new HashSet<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table));
            } catch (IOException e) {
                continue;
            }
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                // sl local_address rem_address st ... inode (field 9); ports are hex after the colon
                int local = Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1), 16);
                int remote = Integer.parseInt(f[2].substring(f[2].indexOf(':') + 1), 16);
                if (remote == TestRedis.port() && inodes.contains(f[9])) ports.add(local);
            }
        }
        return ports;
    }
}
