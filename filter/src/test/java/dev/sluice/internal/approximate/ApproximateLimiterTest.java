package dev.sluice.internal.approximate;

import dev.sluice.config.SluiceConfig;
import dev.sluice.internal.failover.FailoverLimiter;
import dev.sluice.internal.local.LocalEngine;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.LimiterUnavailableException;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.limiter.Settlement;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where the approximate mode sits in the composition: what goes to the exact path, what never does,
 * and how a request with both kinds of rules stays atomic.
 */
class ApproximateLimiterTest {

    private static final ClientKey CLIENT = ClientKey.parse("ip=203.0.113.7");
    private static final Rule APPROX = Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(3)
            .window(Duration.ofMinutes(1)).sync(Duration.ofMillis(100)).fallbackLimit(1).build();
    private static final Rule EXACT = Rule.builder("login").algorithm(Algorithm.TOKEN_BUCKET).limit(2)
            .window(Duration.ofMinutes(1)).build();

    private final ManualClock clock = new ManualClock(ManualClock.MINUTE_BOUNDARY);
    private final FleetCounts counts = new FleetCounts(clock);
    private final ApproximateEngine engine = new ApproximateEngine(clock, true, counts, "t:", 100, false, () -> "test");
    /** Stands for Redis on the exact path: a real engine, counting what it is asked. */
    private final Recording redis = new Recording(new LocalEngine(clock, 100));
    private final FailoverLimiter failover = new FailoverLimiter(redis, new LocalEngine(clock, 100),
            new SluiceConfig.BreakerSettings(3, Duration.ofSeconds(1), Duration.ofSeconds(8)), "test");
    private final ApproximateLimiter limiter = new ApproximateLimiter(failover, failover, engine);

    private static final class Recording implements RateLimiter {
        final RateLimiter engine;
        final List<List<Acquisition>> asked = new ArrayList<>();
        boolean failing;

        Recording(RateLimiter engine) {
            this.engine = engine;
        }

        @Override
        public Decision decide(List<Acquisition> acquisitions) {
            asked.add(acquisitions);
            if (failing) throw new LimiterUnavailableException("partitioned", null, true);
            return engine.decide(acquisitions);
        }
    }

    private static List<Acquisition> request(Rule... rules) {
        List<Acquisition> out = new ArrayList<>();
        for (Rule r : rules) out.add(new Acquisition(r, CLIENT));
        return out;
    }

    /**
     * The defect of 0.2: a request an approximate rule denies asks its exact rules for their figures
     * with a cost no rule admits; those probes went through the denied-client cache, whose denial of
     * the probe replaced the client's real remembered denial, so its next request went to Redis.
     */
    @Test
    void aProbeForTheExactRulesLeavesTheClientsRememberedDenialInTheCache() {
        RateLimiter asRedis = acquisitions -> Decision.of(redis.decide(acquisitions).rules().stream()
                .map(r -> r.withSource(RuleDecision.Source.REDIS)).toList());
        FailoverLimiter exactPath = new FailoverLimiter(asRedis, new LocalEngine(clock, 100),
                new SluiceConfig.BreakerSettings(3, Duration.ofSeconds(1), Duration.ofSeconds(8)), "test");
        dev.sluice.internal.cache.DeniedClientCache cache = new dev.sluice.internal.cache.DeniedClientCache(exactPath,
                true, 100, Duration.ofHours(1).toNanos(), () -> true, System::nanoTime);
        ApproximateLimiter withCache = new ApproximateLimiter(cache, exactPath, engine);
        for (int i = 0; i < 2; i++) withCache.decide(request(EXACT));
        assertThat(withCache.decide(request(EXACT)).allowed()).isFalse();
        for (int i = 0; i < 3; i++) withCache.decide(request(APPROX));
        assertThat(cache.size()).as("the client's denial, remembered").isEqualTo(1);

        Decision mixed = withCache.decide(request(APPROX, EXACT));

        assertThat(mixed.allowed()).isFalse();
        long hits = cache.hits();
        Decision again = withCache.decide(request(EXACT));
        assertThat(again.rules().get(0).source()).isEqualTo(RuleDecision.Source.CACHE);
        assertThat(cache.hits()).as("answered from the remembered denial").isEqualTo(hits + 1);
    }

    @Test
    void anApproximateRulesRequestNeverGoesToTheExactPath() {
        for (int i = 0; i < 5; i++) limiter.decide(request(APPROX));
        assertThat(redis.asked).isEmpty();
        Decision d = limiter.decide(request(APPROX));
        assertThat(d.allowed()).isFalse();
        assertThat(d.rules().get(0).source()).isEqualTo(RuleDecision.Source.APPROXIMATE);
    }

    @Test
    void anExactRulesRequestGoesToTheExactPathUntouched() {
        List<Acquisition> exact = request(EXACT);
        limiter.decide(exact);
        assertThat(redis.asked).containsExactly(exact);
    }

    @Test
    void aRequestTheExactRulesDenyTakesNothingFromTheApproximateOnes() {
        assertThat(limiter.decide(request(APPROX, EXACT)).allowed()).isTrue();
        assertThat(limiter.decide(request(APPROX, EXACT)).allowed()).isTrue();
        Decision denied = limiter.decide(request(APPROX, EXACT));
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.rules().get(0).allowed()).as("api would admit it").isTrue();
        assertThat(denied.rules().get(0).remaining()).as("and took nothing").isEqualTo(1);
        assertThat(denied.rules().get(1).allowed()).isFalse();
        assertThat(limiter.decide(request(APPROX)).allowed()).as("api's last one is still there").isTrue();
    }

    @Test
    void aRequestAnApproximateRuleDeniesTakesNothingFromTheExactOnesAndShowsTheirFigures() {
        for (int i = 0; i < 3; i++) limiter.decide(request(APPROX));
        Decision denied = limiter.decide(request(APPROX, EXACT));
        assertThat(denied.allowed()).isFalse();
        RuleDecision login = denied.rules().get(1);
        assertThat(login.allowed()).as("login would admit it").isTrue();
        assertThat(login.remaining()).as("untouched").isEqualTo(2);
        assertThat(denied.violated()).extracting(r -> r.rule().name()).containsExactly("api");
        assertThat(redis.asked.get(0).get(0).cost()).as("asked for more than any rule holds").isEqualTo(ApproximateLimiter.PROBE_COST);
        assertThat(limiter.decide(request(EXACT)).rules().get(0).remaining()).as("both tokens still there").isEqualTo(1);
    }

    @Test
    void whileSyncsFailApproximateRulesAreDecidedByTheFailurePolicyWithoutARedisCallPerRequest() {
        limiter.decide(request(APPROX)); // counted here, to be sent
        counts.failWith(new LimiterUnavailableException("partitioned", null, true));
        engine.sync();
        assertThat(engine.available()).isFalse();

        Decision first = limiter.decide(request(APPROX));
        assertThat(first.rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
        assertThat(first.allowed()).isTrue();
        assertThat(limiter.decide(request(APPROX)).allowed()).as("the backstop's fallback-limit of 1").isFalse();
        assertThat(redis.asked).isEmpty();

        Decision mixed = limiter.decide(request(APPROX, EXACT));
        assertThat(redis.asked).as("with an exact rule, the whole request in its one call").containsExactly(request(APPROX, EXACT));
        assertThat(mixed.rules().get(0).source()).isEqualTo(RuleDecision.Source.LOCAL); // the stand-in's source

        counts.failWith(null);
        engine.sync();
        assertThat(limiter.decide(request(APPROX)).rules().get(0).source()).isEqualTo(RuleDecision.Source.APPROXIMATE);
    }

    @Test
    void aClientWithNoRoomHereIsDecidedExactly() {
        ApproximateEngine full = new ApproximateEngine(clock, true, counts, "t:", 1, false, () -> "test");
        ApproximateLimiter small = new ApproximateLimiter(failover, failover, full);
        small.decide(request(APPROX));
        List<Acquisition> other = List.of(new Acquisition(APPROX, ClientKey.parse("ip=10.0.0.9")));
        small.decide(other);
        assertThat(redis.asked).containsExactly(other);
    }

    @Test
    void giveBackOfAnApproximateRuleIsMadeHereAndTheOthersPassOn() {
        List<Acquisition> both = request(APPROX, EXACT);
        Decision d = limiter.decide(both);
        List<Acquisition> passed = new ArrayList<>();
        ApproximateLimiter l = new ApproximateLimiter(new RateLimiter() {
            @Override
            public Decision decide(List<Acquisition> acquisitions) {
                return failover.decide(acquisitions);
            }

            @Override
            public void settle(List<Settlement> settlements) {
                for (Settlement s : settlements) passed.add(s.acquisition());
            }
        }, failover, engine);
        l.giveBack(both, d.rules());
        assertThat(passed).containsExactly(both.get(1));
        assertThat(admittedOf(3, APPROX)).as("the approximate rule's 3 again").isEqualTo(3);
    }

    /** How many of {@code n} requests of {@code rule} alone are admitted. */
    private int admittedOf(int n, Rule rule) {
        int admitted = 0;
        for (int i = 0; i < n + 1; i++) {
            if (limiter.decide(request(rule)).allowed()) admitted++;
        }
        return admitted;
    }

    private static final String APPROX_KEY = "t:{api:" + CLIENT.value() + "}";

    /**
     * A request refused past max-held-requests gives back what it took: an approximate rule's take, not yet
     * synced, comes off this instance's count, so the fleet never hears of it.
     */
    @Test
    void anApproximateTakeGivenBackBeforeTheSyncIsNeverSent() {
        Decision first = limiter.decide(request(APPROX));
        limiter.decide(request(APPROX));
        limiter.decide(request(APPROX));
        assertThat(limiter.decide(request(APPROX)).allowed()).isFalse();
        limiter.giveBack(request(APPROX), first.rules());
        assertThat(limiter.decide(request(APPROX)).allowed()).as("given back: room for one").isTrue();
        assertThat(limiter.decide(request(APPROX)).allowed()).isFalse();
        engine.sync();
        assertThat(counts.count(APPROX_KEY, clock.millis())).as("3 admitted, one given back, one more admitted").isEqualTo(3);
    }

    @Test
    void anApproximateTakeGivenBackAfterTheSyncIsSentAsAGiveBackOfItsWindow() {
        Decision first = limiter.decide(request(APPROX));
        limiter.decide(request(APPROX));
        engine.sync();
        assertThat(counts.count(APPROX_KEY, clock.millis())).isEqualTo(2);
        limiter.giveBack(request(APPROX), first.rules());
        engine.sync();
        assertThat(counts.count(APPROX_KEY, clock.millis())).as("the fleet's count, given back").isEqualTo(1);
        assertThat(admittedOf(3, APPROX)).isEqualTo(2);
    }

    @Test
    void anApproximateTakeGivenBackAfterItsWindowGivesNothingToTheNext() {
        Decision first = limiter.decide(request(APPROX));
        engine.sync();
        clock.advance(Duration.ofMinutes(1).toMillis());
        for (int i = 0; i < 3; i++) assertThat(limiter.decide(request(APPROX)).allowed()).isTrue();
        limiter.giveBack(request(APPROX), first.rules());
        assertThat(limiter.decide(request(APPROX)).allowed()).as("the next window's count is its own").isFalse();
        engine.sync();
        assertThat(counts.count(APPROX_KEY, clock.millis())).isEqualTo(3);
    }

    /**
     * A client whose window got shorter counts on in the fleet's count of the longer window until it ends
     * (off the shorter window's grid): a take there given back after that count ended gives nothing to
     * the aligned window that followed, which never held it.
     */
    @Test
    void anApproximateTakeInACountOfAnotherWindowLengthGivesNothingToTheWindowAfterIt() {
        Rule longer = Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(3).window(Duration.ofSeconds(90))
                .sync(Duration.ofMillis(100)).build();
        Rule shorter = Rule.builder("api").algorithm(Algorithm.FIXED_WINDOW).limit(3).window(Duration.ofSeconds(60))
                .sync(Duration.ofMillis(100)).build();
        long b = Math.floorDiv(clock.millis(), 180_000) * 180_000 + 180_000; // a start of both lengths' windows
        clock.set(b + 1_000);
        assertThat(limiter.decide(request(longer)).allowed()).isTrue();
        engine.sync(); // the fleet's count ends at b + 90 s
        limiter.decide(request(shorter)); // the plan of 60 s: counts on in the count that runs until b + 90 s
        engine.sync();
        clock.set(b + 10_000);
        Decision x = limiter.decide(request(shorter));
        assertThat(x.allowed()).isTrue();
        assertThat(x.rules().get(0).take().ms()).as("counted in the count that ends at b + 90 s").isEqualTo(b + 90_000);
        clock.set(b + 95_000);
        for (int i = 0; i < 3; i++) assertThat(limiter.decide(request(shorter)).allowed()).isTrue();
        limiter.giveBack(request(shorter), x.rules());
        assertThat(limiter.decide(request(shorter)).allowed()).as("the window from b + 60 s holds 3 of its own").isFalse();
    }

    @Test
    void anApproximateTakeOfCountsResetSinceGivesNothingBack() {
        Decision before = limiter.decide(request(APPROX));
        engine.sync();
        limiter.reset(APPROX, CLIENT); // an operator's reset: this instance's counts of the client are forgotten
        for (int i = 0; i < 3; i++) assertThat(limiter.decide(request(APPROX)).allowed()).isTrue();
        limiter.giveBack(request(APPROX), before.rules());
        assertThat(limiter.decide(request(APPROX)).allowed()).as("a take of the counts before the reset").isFalse();
    }

    /**
     * A request with an approximate rule and a concurrency rule, which the approximate rule denies: the
     * concurrency rule is asked for its figures without taking a slot (a cost above its limit only asks).
     */
    @Test
    void aConcurrencyRuleOfARequestAnApproximateRuleDeniesTakesNoSlot() {
        Rule exports = Rule.builder("exports").algorithm(Algorithm.CONCURRENCY).limit(2).build();
        for (int i = 0; i < 3; i++) assertThat(limiter.decide(request(APPROX)).allowed()).isTrue();
        Decision denied = limiter.decide(request(APPROX, exports));
        assertThat(denied.allowed()).isFalse();
        RuleDecision slots = denied.rules().get(1);
        assertThat(List.of(slots.allowed(), slots.remaining(), slots.taken())).as("untouched: two slots free")
                .containsExactly(true, 2L, false);
        Decision held = redis.decide(request(exports));
        assertThat(held.rules().get(0).remaining()).as("no slot was taken by the denied request").isEqualTo(1);
    }

    /**
     * Found in a review of 0.3's calendar windows: when an approximate rule denied, an exact calendar rule of the
     * request, only probed, showed the longest month's {@code w} (31 days) in February.
     */
    @Test
    void anExactCalendarRuleProbedAfterAnApproximateDenialShowsItsWindowsLength() {
        ManualClock clock = new ManualClock(java.time.OffsetDateTime.parse("2027-02-10T12:00+01:00").toInstant().toEpochMilli());
        Rule burst = Rule.builder("burst").algorithm(Algorithm.FIXED_WINDOW).limit(1)
                .window(Duration.ofMinutes(1)).sync(Duration.ofMillis(100)).build();
        Rule monthly = Rule.builder("monthly").algorithm(Algorithm.FIXED_WINDOW).limit(100)
                .calendar(java.time.ZoneId.of("Europe/Berlin")).window(java.time.Period.ofMonths(1)).build();
        ApproximateEngine engine = new ApproximateEngine(clock, true, new FleetCounts(clock), "t:", 100, false, () -> "t");
        FailoverLimiter failover = new FailoverLimiter(new LocalEngine(clock, 100), new LocalEngine(clock, 100),
                new SluiceConfig.BreakerSettings(3, Duration.ofSeconds(1), Duration.ofSeconds(8)), "test");
        ApproximateLimiter limiter = new ApproximateLimiter(failover, failover, engine);
        ClientKey client = ClientKey.parse("ip=203.0.113.7");
        List<Acquisition> request = List.of(new Acquisition(burst, client), new Acquisition(monthly, client));

        Decision admitted = limiter.decide(request);
        assertThat(admitted.allowed()).isTrue();
        assertThat(admitted.rules().get(1).windowMs()).as("February 2027 when admitted").isEqualTo(28 * 86_400_000L);

        Decision denied = limiter.decide(request); // burst denies: monthly is only probed
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.rules().get(1).windowMs()).as("February 2027 (w=2419200) when burst denies")
                .isEqualTo(28 * 86_400_000L);
    }
}
