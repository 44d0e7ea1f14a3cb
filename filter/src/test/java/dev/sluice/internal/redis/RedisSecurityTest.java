package dev.sluice.internal.redis;

import dev.sluice.testing.RedisProcess;
import dev.sluice.testing.TestRedisSettings;
import dev.sluice.testing.TestTls;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;

import javax.net.ssl.SSLContext;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** TLS and Redis 6 ACL through {@link RedisClients}, against servers of the test's own. */
class RedisSecurityTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @Test
    void rediss_urlTalksTlsAndTrustsOnlyWhatTheJvmTrusts() throws Exception {
        assumeTrue(TestTls.redisSupportsTls(), "the installed redis-server is built without TLS");
        TestTls tls = TestTls.generate();
        int port = RedisProcess.freePort();
        SSLContext jvmDefault = SSLContext.getDefault();
        try (RedisProcess server = RedisProcess.startOn(port, tls.redisArgs(port))) {
            String url = "rediss://127.0.0.1:" + server.port();

            try (UnifiedJedis untrusting = RedisClients.create(TestRedisSettings.standalone(url).timeout(TIMEOUT).build())) {
                assertThatThrownBy(() -> untrusting.ping())
                        .as("a server certificate from an unknown CA is refused")
                        .isInstanceOf(JedisConnectionException.class)
                        .satisfies(e -> assertThat(causes(e)).hasAtLeastOneElementOfType(javax.net.ssl.SSLHandshakeException.class));
            }

            SSLContext.setDefault(tls.clientContext()); // what -Djavax.net.ssl.trustStore does for a user
            try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings.standalone(url).timeout(TIMEOUT).build())) {
                String sha = jedis.scriptLoad("return redis.call('INCR', KEYS[1])");
                assertThat(jedis.evalsha(sha, List.of("{tls}"), List.of())).isEqualTo(1L);
            }
        } finally {
            SSLContext.setDefault(jvmDefault);
        }
    }

    @Test
    void plainRedisUrlCannotTalkToATlsOnlyServer() {
        assumeTrue(TestTls.redisSupportsTls(), "the installed redis-server is built without TLS");
        TestTls tls = TestTls.generate();
        int port = RedisProcess.freePort();
        try (RedisProcess server = RedisProcess.startOn(port, tls.redisArgs(port));
             UnifiedJedis jedis = RedisClients.create(TestRedisSettings.standalone("redis://127.0.0.1:" + server.port())
                     .timeout(Duration.ofMillis(300)).build())) {
            assertThatThrownBy(jedis::ping).isInstanceOf(JedisConnectionException.class);
        }
    }

    @Test
    void aclUserAndPasswordFromTheUrlAuthenticate() {
        try (RedisProcess server = RedisProcess.start()) {
            createAclUserAndDisableDefault(server, "sluice", "Tr0ub4dor&3");

            try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings
                    .standalone("redis://sluice:Tr0ub4dor&3@127.0.0.1:" + server.port()).timeout(TIMEOUT).build())) {
                String sha = jedis.scriptLoad("return redis.call('INCR', KEYS[1])");
                assertThat(jedis.evalsha(sha, List.of("{acl}"), List.of())).isEqualTo(1L);
                assertThat(jedis.sendCommand(redis.clients.jedis.Protocol.Command.ACL, "WHOAMI")).isEqualTo("sluice".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void aWrongPasswordIsAnAccessErrorNotAHang() {
        try (RedisProcess server = RedisProcess.start()) {
            createAclUserAndDisableDefault(server, "sluice", "right");

            try (UnifiedJedis jedis = RedisClients.create(TestRedisSettings
                    .standalone("redis://127.0.0.1:" + server.port()).credentials("sluice", "wrong").timeout(TIMEOUT).build())) {
                assertThatThrownBy(jedis::ping).isInstanceOf(JedisAccessControlException.class)
                        .satisfies(e -> assertThat(e.toString()).doesNotContain("wrong"));
            }
        }
    }

    private static List<Throwable> causes(Throwable t) {
        List<Throwable> out = new java.util.ArrayList<>();
        for (Throwable c = t; c != null && out.size() < 10; c = c.getCause()) out.add(c);
        return out;
    }

    static void createAclUserAndDisableDefault(RedisProcess server, String user, String password) {
        try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
            admin.aclSetUser(user, "on", ">" + password, "~*", "+@all");
            admin.aclSetUser("default", "off");
        }
    }
}
