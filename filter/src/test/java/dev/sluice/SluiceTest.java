package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.TestRedis;
import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisPooled;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The programmatic API against a real Redis. */
class SluiceTest {

    /**
     * The fixed windows here are of an hour and a day on Redis's clock: a test's requests in one (an
     * hour's end, midnight UTC among them, would start the count afresh).
     */
    @BeforeEach
    void roomInRedissHour() {
        WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(10));
    }

    private static SluiceConfig.Builder config(String name, Rule... rules) {
        SluiceConfig.Builder b = SluiceConfig.builder().redisUrl(TestRedis.url())
                .keyPrefix(TestRedis.uniquePrefix(name)).redisTimeout(Duration.ofSeconds(2));
        for (Rule r : rules) b.rule(r);
        return b;
    }

    @Test
    void tryAcquireAndDecideCountTheSameClientOnce() {
        Rule api = Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(3).window(Duration.ofHours(1)).build();
        try (Sluice sluice = Sluice.builder(config("same-client", api).build()).build()) {
            assertThat(sluice.tryAcquire("api", "customer-42").allowed()).isTrue();
            assertThat(sluice.decide(List.of(new Acquisition(api, ClientKey.of("customer-42")))).allowed()).isTrue();
            assertThat(sluice.tryAcquire("api", ClientKey.of("customer-42")).allowed()).isTrue();
            Decision fourth = sluice.decide(List.of(new Acquisition(api, ClientKey.of("customer-42"))));
            assertThat(fourth.allowed()).as("one counter, whichever method").isFalse();
            assertThat(fourth.retryAfter()).isPositive().isLessThanOrEqualTo(Duration.ofHours(1));
        }
    }

    @Test
    void aBraceInAnApplicationKeyCannotMoveTheHashTagNorShareAnotherRulesKey() {
        Rule a = Rule.of("a", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        Rule ab = Rule.of("a-b", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        try (Sluice sluice = Sluice.builder(config("hash-tag", a, ab).build()).build()) {
            assertThat(ClientKey.of("x}{y").value()).doesNotContain("{", "}");
            assertThat(sluice.tryAcquire("a", "b:c").allowed()).isTrue();
            assertThat(sluice.tryAcquire("a-b", "c").allowed()).as("rule a with b:c and rule a-b with c are two counters")
                    .isTrue();
        }
        assertThatThrownBy(() -> Rule.of("a:b", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1)))
                .hasMessageContaining("name");
    }

    @Test
    void acquireWaitsForTheNextTokenWithinItsMaximumWait() throws Exception {
        Rule bucket = Rule.builder("jobs").limit(2).window(Duration.ofSeconds(1)).burst(1).build(); // one per 500 ms
        try (Sluice sluice = Sluice.builder(config("blocking", bucket).build()).build()) {
            ClientKey job = ClientKey.of("batch-7");
            assertThat(sluice.tryAcquire("jobs", job).allowed()).isTrue();
            long started = System.nanoTime();
            Decision waited = sluice.acquire("jobs", job, 1, Duration.ofSeconds(2));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertThat(waited.allowed()).isTrue();
            assertThat(tookMs).as("waited for the next token, 500 ms after the first").isBetween(300L, 1900L);
        }
    }

    @Test
    void acquireReturnsTheDenialAtOnceWhenTheTokensCannotComeWithinTheMaximumWait() throws Exception {
        Rule hourly = Rule.of("hourly", Algorithm.TOKEN_BUCKET, 1, Duration.ofHours(1));
        try (Sluice sluice = Sluice.builder(config("blocking-denied", hourly).build()).build()) {
            ClientKey job = ClientKey.of("batch-8");
            sluice.tryAcquire("hourly", job);
            long started = System.nanoTime();
            Decision d = sluice.acquire("hourly", job, 1, Duration.ofSeconds(5));
            assertThat(d.allowed()).isFalse();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).as("no pointless wait").isLessThan(1000);
            assertThat(d.retryAfter()).isGreaterThan(Duration.ofMinutes(50));
        }
    }

    @Test
    void acquireAsyncCompletesWithoutBlockingTheCaller() throws Exception {
        Rule bucket = Rule.builder("async").limit(10).window(Duration.ofSeconds(1)).burst(1).build();
        try (Sluice sluice = Sluice.builder(config("async", bucket).build()).build()) {
            ClientKey job = ClientKey.of("consumer-1");
            Decision first = sluice.decideAsync(List.of(new Acquisition(bucket, job))).get(5, TimeUnit.SECONDS);
            assertThat(first.allowed()).isTrue();
            long started = System.nanoTime();
            CompletableFuture<Decision> second = sluice.acquireAsync("async", job, 1, Duration.ofSeconds(2));
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)).as("the call returns at once")
                    .isLessThan(50);
            assertThat(second.get(5, TimeUnit.SECONDS).allowed()).isTrue();
            assertThat(sluice.acquireAsync("async", job, 5, Duration.ofSeconds(1)).get(5, TimeUnit.SECONDS).allowed())
                    .as("a cost above the burst never fits: the denial, at once").isFalse();
        }
    }

    @Test
    void aCallersOwnJedisClientIsUsedAndNotClosed() {
        Rule api = Rule.of("own", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1));
        try (JedisPooled mine = new JedisPooled(TestRedis.host(), TestRedis.port())) {
            String prefix = TestRedis.uniquePrefix("own-client");
            SluiceConfig config = SluiceConfig.builder().rule(api).keyPrefix(prefix).build();
            try (Sluice sluice = Sluice.builder(config).redis(mine).build()) {
                assertThat(sluice.tryAcquire("own", "k1").rules().get(0).source()).isEqualTo(RuleDecision.Source.REDIS);
            }
            assertThat(mine.exists(prefix + "{own:k=k1}")).as("the state is where the caller's client writes")
                    .isTrue();
            assertThat(mine.ping()).as("still open after Sluice closed").isEqualTo("PONG");
        }
    }

    @Test
    void resetGivesOneClientAFullQuotaAgain() {
        Rule daily = Rule.of("daily", Algorithm.FIXED_WINDOW, 1, Duration.ofDays(1));
        try (Sluice sluice = Sluice.builder(config("reset", daily).build()).build()) {
            ClientKey customer = ClientKey.of("customer-9");
            sluice.tryAcquire("daily", customer);
            assertThat(sluice.tryAcquire("daily", customer).allowed()).isFalse();
            assertThat(sluice.tryAcquire("daily", "someone-else").allowed()).isTrue();

            sluice.reset("daily", customer);

            assertThat(sluice.tryAcquire("daily", customer).allowed()).isTrue();
            assertThat(sluice.tryAcquire("daily", "someone-else").allowed()).as("the others keep their state").isFalse();
        }
    }

    @Test
    void operatorsClearTheDeniedCacheAndResetOneClientOverJmx() throws Exception {
        Rule daily = Rule.of("daily", Algorithm.FIXED_WINDOW, 1, Duration.ofDays(1));
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        try (Sluice sluice = Sluice.builder(config("jmx", daily).build()).build()) {
            String name = sluice.registerMBeans("jmx-ops");
            ObjectName bean = new ObjectName("dev.sluice:type=RateLimiter,name=" + name);
            sluice.tryAcquire("daily", "c1");
            sluice.tryAcquire("daily", "c1");
            sluice.tryAcquire("daily", "c1");
            assertThat((Long) jmx.getAttribute(bean, "DeniedCacheHits")).isEqualTo(1);
            assertThat((Integer) jmx.getAttribute(bean, "DeniedCacheSize")).isEqualTo(1);

            assertThat(jmx.invoke(bean, "clearDeniedCache", null, null)).isEqualTo(1);
            assertThat((Integer) jmx.getAttribute(bean, "DeniedCacheSize")).isZero();

            Object said = jmx.invoke(bean, "resetClient", new Object[] {"daily", "k=c1"},
                    new String[] {String.class.getName(), String.class.getName()});
            assertThat(said).asString().contains("reset rule daily for client k=c1");
            assertThat(sluice.tryAcquire("daily", "c1").allowed()).isTrue();
            assertThat(jmx.invoke(bean, "resetClient", new Object[] {"nope", "k=c1"},
                    new String[] {String.class.getName(), String.class.getName()})).asString().contains("no rule 'nope'");
        }
    }

    @Test
    void plansAreDataAndAClientKeepsItsCountersWhenItsPlanChanges() {
        Rule api = Rule.of("api", Algorithm.FIXED_WINDOW, 2, Duration.ofHours(1));
        Rule pro = api.toBuilder().limit(5).plan("pro").build();
        SluiceConfig config = config("plans-as-data").rule(new dev.sluice.config.RuleConfig(api,
                dev.sluice.config.RuleConfig.DEFAULT_KEY, dev.sluice.config.RuleConfig.DEFAULT_MATCH,
                dev.sluice.key.KeyExpression.parse("attr:plan"),
                List.of(new dev.sluice.config.RuleConfig.Plan("pro", pro),
                        dev.sluice.config.RuleConfig.Plan.unlimited("internal")), null)).build();
        try (Sluice sluice = Sluice.builder(config).build()) {
            ClientKey customer = ClientKey.of("customer-1");
            assertThat(sluice.tryAcquire("api", null, customer).allowed()).isTrue();
            assertThat(sluice.tryAcquire("api", null, customer).allowed()).isTrue();
            assertThat(sluice.tryAcquire("api", null, customer).allowed()).as("the free plan's 2").isFalse();
            Decision upgraded = sluice.tryAcquire("api", "pro", customer);
            assertThat(upgraded.allowed()).as("moved to pro: its 5, with the 2 it has had").isTrue();
            assertThat(upgraded.rules().get(0).remaining()).isEqualTo(2);
            assertThat(sluice.tryAcquire("api", "internal", customer).rules()).as("unlimited: no rule applies").isEmpty();
            assertThat(sluice.rule("api", "nope")).as("an unlisted plan: the rule's own figures").isEqualTo(api);
        }
    }

    @Test
    void aNewConfigurationHandedInAppliesToTheNextDecisionAndKeepsCounters() {
        Rule api = Rule.of("api", Algorithm.FIXED_WINDOW, 2, Duration.ofHours(1));
        SluiceConfig first = config("reconfigure", api).build();
        try (Sluice sluice = Sluice.builder(first).build()) {
            sluice.tryAcquire("api", "c");
            sluice.tryAcquire("api", "c");
            assertThat(sluice.tryAcquire("api", "c").allowed()).isFalse();

            sluice.reconfigure(first.toBuilder().rules(List.of(dev.sluice.config.RuleConfig.of(
                    api.toBuilder().limit(4).build()))).build());
            assertThat(sluice.tryAcquire("api", "c").allowed()).as("the third of 4").isTrue();

            assertThatThrownBy(() -> sluice.reconfigure(first.toBuilder().keyPrefix("elsewhere:").build()))
                    .isInstanceOf(dev.sluice.config.ConfigException.class).hasMessageContaining("key-prefix")
                    .hasMessageContaining("cannot change while running");
            assertThat(sluice.rule("api").limit()).as("nothing changed").isEqualTo(4);
        }
    }
}
