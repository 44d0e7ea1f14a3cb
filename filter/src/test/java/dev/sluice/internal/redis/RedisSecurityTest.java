package dev.sluice.internal.redis;

import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.Settlement;
import dev.sluice.testing.Readme;
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

    /**
     * The README's {@code redis.user} row promises the commands a user needs and gives the ACL that grants
     * them and no more: every kind of call Sluice makes (each algorithm's decision, a denial, a sliding-window
     * log whose count takes another command, several rules at once, give-backs, a charge, a slot taken,
     * renewed and released, Redis's clock), made as a user with exactly that ACL, succeeds.
     */
    @Test
    void theReadmesAclGrantsEverythingTheScriptsRun() throws Exception {
        String readme = Readme.text();
        java.util.regex.Matcher acl = java.util.regex.Pattern.compile("`ACL SETUSER sluice ([^`]+)`").matcher(readme);
        assertThat(acl.find()).as("the README's ACL").isTrue();
        String[] rules = acl.group(1).replace("\\|", "|").split(" ");
        try (RedisProcess server = RedisProcess.start()) {
            try (Jedis admin = new Jedis("127.0.0.1", server.port())) {
                admin.aclSetUser("sluice", rules);
            }
            try (redis.clients.jedis.JedisPooled jedis = new redis.clients.jedis.JedisPooled(
                    java.net.URI.create("redis://sluice:secret@127.0.0.1:" + server.port()))) {
                for (boolean redisClock : new boolean[] {false, true}) {
                    RedisEngine engine = new RedisEngine(jedis, "rl:", redisClock, dev.sluice.limiter.Clock.SYSTEM, false);
                    ClientKey client = ClientKey.parse("ip=192.0.2.7");
                    List<Acquisition> every = new java.util.ArrayList<>();
                    for (Algorithm algorithm : Algorithm.values()) {
                        Rule.Builder builder = Rule.builder("acl-" + algorithm.id() + redisClock).algorithm(algorithm).limit(50);
                        if (algorithm == Algorithm.LEAKY_BUCKET) builder.maxDelay(Duration.ofMinutes(1)); // a queue: more than one admitted
                        Rule rule = (algorithm.isConcurrency() ? builder : builder.window(Duration.ofMinutes(1))).build();
                        every.add(new Acquisition(rule, client));
                        Acquisition one = new Acquisition(rule, client);
                        for (int i = 0; i < 3; i++) { // each after the last: a state (a log's entries, a slot) there
                            Decision d = engine.decide(List.of(one));
                            assertThat(d.allowed()).as(algorithm.id()).isTrue();
                            if (i == 2) engine.settle(List.of(Settlement.giveBack(one, d.rules().get(0))));
                        }
                        if (algorithm.isConcurrency()) {
                            Decision held = engine.decide(List.of(one));
                            assertThat(engine.renew(List.of(one), held.rules())).containsExactly(true);
                        }
                    }
                    Decision all = engine.decide(every);
                    assertThat(all.allowed()).isTrue();
                    Rule charged = Rule.builder("acl-charged" + redisClock).algorithm(Algorithm.TOKEN_BUCKET).limit(50)
                            .window(Duration.ofMinutes(1)).build();
                    Acquisition estimate = new Acquisition(charged, client, 5);
                    engine.settle(List.of(Settlement.ofActualCost(estimate, engine.decide(List.of(estimate)).rules().get(0), 60)));
                    assertThat(engine.decide(List.of(new Acquisition(charged, client))).allowed()).as("charged past the limit").isFalse();
                }
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
