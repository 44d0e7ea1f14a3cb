package dev.sluice.internal.redis;

import org.junit.jupiter.api.Test;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Timeouts are recognised however Jedis 5.2 reports them: a read timeout as a cause, a connect
 * timeout as a suppressed exception, a cluster call out of retry time with no cause at all.
 */
class RedisFailureTest {

    /**
     * A real connect timeout from Jedis: a listening socket that never accepts, its backlog full, so
     * the kernel drops the next SYN and the connect times out.
     */
    @Test
    void aConnectTimeoutIsATimeoutThoughJedisSuppressesIt() throws Exception {
        try (ServerSocket never = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            List<Socket> filling = new ArrayList<>();
            try {
                JedisConnectionException failure = null;
                for (int i = 0; i < 16; i++) {
                    failure = connect(never.getLocalPort());
                    if (failure != null && failure.getMessage().startsWith("Failed to connect")) break;
                    Socket s = new Socket(); // it got into the backlog: fill the backlog further
                    try {
                        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), never.getLocalPort()), 200);
                    } catch (java.io.IOException full) {
                        // full already
                    }
                    filling.add(s);
                }
                assertThat(failure).as("a connect that timed out").isNotNull();
                assertThat(failure.getMessage()).startsWith("Failed to connect");
                assertThat(failure.getCause()).as("Jedis gives no cause").isNull();
                assertThat(failure.getSuppressed()).isNotEmpty();
                assertThat(RedisFailure.nodeTimedOut(failure)).isTrue();
                assertThat(RedisFailure.isTimeout(failure)).isTrue();
            } finally {
                for (Socket s : filling) s.close();
            }
        }
    }

    private static JedisConnectionException connect(int port) {
        DefaultJedisClientConfig config = DefaultJedisClientConfig.builder().connectionTimeoutMillis(200)
                .socketTimeoutMillis(200).build();
        return catchThrowableOfType(() -> {
            try (Connection c = new Connection(new HostAndPort("127.0.0.1", port), config)) {
                c.ping();
            }
        }, JedisConnectionException.class);
    }

    @Test
    void aClusterCallOutOfRetryTimeIsATimeoutAndOneOutOfAttemptsIsWhatItsLastFailureWas() {
        assertThat(RedisFailure.nodeTimedOut(new JedisClusterOperationException("Cluster retry deadline exceeded.")))
                .isTrue();
        JedisClusterOperationException attempts = new JedisClusterOperationException("No more cluster attempts left.");
        attempts.addSuppressed(new JedisConnectionException(new java.net.SocketTimeoutException("Read timed out")));
        assertThat(RedisFailure.nodeTimedOut(attempts)).isTrue();
        JedisClusterOperationException refused = new JedisClusterOperationException("No more cluster attempts left.");
        refused.addSuppressed(new JedisConnectionException(new java.net.ConnectException("Connection refused")));
        assertThat(RedisFailure.nodeTimedOut(refused)).isFalse();
    }

    @Test
    void aPoolWaitIsATimeoutOfTheCallButNotOfTheNode() {
        Exception noConnection = new redis.clients.jedis.exceptions.JedisException("Could not get a resource from the pool",
                new java.util.NoSuchElementException("Timeout waiting for idle object"));
        assertThat(RedisFailure.isTimeout(noConnection)).isTrue();
        assertThat(RedisFailure.nodeTimedOut(noConnection)).isFalse();
    }
}
