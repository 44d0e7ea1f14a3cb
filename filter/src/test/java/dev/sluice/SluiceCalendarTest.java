package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.InvalidRuleException;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import dev.sluice.testing.ManualClock;
import dev.sluice.testing.TestRedis;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.Period;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/** Calendar rules built in code ({@code Rule.builder(...).calendar(zone)}), decided by {@link Sluice} on Redis and locally. */
class SluiceCalendarTest {

    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");

    private static long ms(String offsetDateTime) {
        return OffsetDateTime.parse(offsetDateTime).toInstant().toEpochMilli();
    }

    @Test
    void aMonthlyQuotaInBerlinResetsAtMidnightOfTheFirst() {
        Rule monthly = Rule.builder("monthly").algorithm(Algorithm.FIXED_WINDOW).limit(2).calendar(BERLIN)
                .window(Period.ofMonths(1)).build();
        ManualClock clock = new ManualClock(ms("2027-01-31T23:59:59.000+01:00")); // the last second of January
        SluiceConfig config = SluiceConfig.builder().rule(monthly).redisUrl(TestRedis.url())
                .keyPrefix(TestRedis.uniquePrefix("calendar-month")).clock(SluiceConfig.ClockSource.LOCAL).build();
        try (Sluice sluice = Sluice.builder(config).clock(clock).build()) {
            ClientKey customer = ClientKey.of("customer-42");
            assertThat(sluice.tryAcquire("monthly", customer).allowed()).isTrue();
            Decision second = sluice.tryAcquire("monthly", customer);
            assertThat(second.allowed()).isTrue();
            assertThat(second.rules().get(0).windowMs()).as("January: 31 days").isEqualTo(31 * 86_400_000L);
            Decision third = sluice.tryAcquire("monthly", customer);
            assertThat(third.allowed()).isFalse();
            assertThat(third.retryAfter()).isEqualTo(Duration.ofSeconds(1));
            clock.advance(1000);
            Decision february = sluice.tryAcquire("monthly", customer);
            assertThat(february.allowed()).isTrue();
            assertThat(february.rules().get(0).remaining()).isEqualTo(1);
            assertThat(february.rules().get(0).windowMs()).as("February 2027: w=2419200").isEqualTo(2_419_200_000L);
            assertThat(february.rules().get(0).reset()).isEqualTo(Duration.ofDays(28));
        }
    }

    @Test
    void aDayInNewYorkOf25HoursOnTheLocalBackend() {
        Rule daily = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(1).calendar(ZoneId.of("America/New_York"))
                .window(Duration.ofDays(1)).build();
        ManualClock clock = new ManualClock(ms("2026-11-01T00:00-04:00"));
        SluiceConfig config = SluiceConfig.builder().rule(daily).backend(SluiceConfig.Backend.LOCAL).build();
        try (Sluice sluice = Sluice.builder(config).clock(clock).build()) {
            Decision first = sluice.tryAcquire("daily", "k");
            assertThat(first.rules().get(0).windowMs()).isEqualTo(25 * 3_600_000L);
            assertThat(first.rules().get(0).reset()).isEqualTo(Duration.ofHours(25));
            clock.set(ms("2026-11-01T23:59:59.999-05:00"));
            assertThat(sluice.tryAcquire("daily", "k").retryAfter()).isEqualTo(Duration.ofMillis(1));
            clock.advance(1);
            assertThat(sluice.tryAcquire("daily", "k").allowed()).isTrue();
        }
    }

    /** While Redis is away, the local backstop counts in the same calendar windows, at fallback-limit per instance. */
    @Test
    void theLocalBackstopCountsInTheCalendarsWindows() {
        Rule daily = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(100).fallbackLimit(1).calendar(BERLIN)
                .window(Duration.ofDays(1)).build();
        ManualClock clock = new ManualClock(ms("2026-10-25T23:00+01:00")); // a day of 25 hours
        SluiceConfig config = SluiceConfig.builder().rule(daily).redisUrl("redis://127.0.0.1:1")
                .redisTimeout(Duration.ofMillis(50)).clock(SluiceConfig.ClockSource.LOCAL).build();
        try (Sluice sluice = Sluice.builder(config).clock(clock).build()) {
            Decision first = sluice.tryAcquire("daily", "k");
            assertThat(first.rules().get(0).source()).isEqualTo(RuleDecision.Source.BACKSTOP);
            assertThat(first.allowed()).isTrue();
            assertThat(first.rules().get(0).windowMs()).isEqualTo(25 * 3_600_000L);
            Decision second = sluice.tryAcquire("daily", "k");
            assertThat(second.allowed()).isFalse();
            assertThat(second.retryAfter()).as("until midnight in Berlin").isEqualTo(Duration.ofHours(1));
        }
    }

    /**
     * A reload moving the rule to another zone: the count lasts until the end of the window it was
     * counted in (Berlin's midnight), as any change of window; then New York's days apply.
     */
    @Test
    void aReloadToAnotherZoneKeepsTheCountUntilItsWindowEndsThenCountsInTheNewZone() {
        Rule berlin = Rule.builder("daily").algorithm(Algorithm.FIXED_WINDOW).limit(1).calendar(BERLIN)
                .window(Duration.ofDays(1)).build();
        Rule newYork = berlin.toBuilder().calendar(ZoneId.of("America/New_York")).build();
        ManualClock clock = new ManualClock(ms("2026-12-02T23:30+01:00"));
        String prefix = TestRedis.uniquePrefix("calendar-reload");
        try (Sluice sluice = Sluice.builder(localClock(berlin, prefix)).clock(clock).build()) {
            assertThat(sluice.tryAcquire("daily", "k").allowed()).isTrue();
            sluice.reconfigure(localClock(newYork, prefix));
            clock.set(ms("2026-12-02T23:45+01:00"));
            Decision kept = sluice.tryAcquire("daily", "k");
            assertThat(kept.allowed()).as("the count of Berlin's day still counts").isFalse();
            assertThat(kept.retryAfter()).as("until midnight in Berlin, the count's end").isEqualTo(Duration.ofMinutes(15));
            clock.set(ms("2026-12-03T00:00+01:00"));
            Decision fresh = sluice.tryAcquire("daily", "k");
            assertThat(fresh.allowed()).isTrue();
            assertThat(fresh.rules().get(0).reset()).as("until midnight in New York (06:00 in Berlin)")
                    .isEqualTo(Duration.ofHours(6));
        }
    }

    private static SluiceConfig localClock(Rule rule, String prefix) {
        return SluiceConfig.builder().rule(rule).redisUrl(TestRedis.url()).keyPrefix(prefix)
                .clock(SluiceConfig.ClockSource.LOCAL).build();
    }

    @Test
    void theBuilderNamesWhatDoesNotFit() {
        InvalidRuleException months = catchThrowableOfType(() -> Rule.builder("m").algorithm(Algorithm.FIXED_WINDOW)
                .limit(1).window(Period.ofMonths(1)).build(), InvalidRuleException.class);
        assertThat(months.field()).isEqualTo("window");
        assertThat(months).hasMessageContaining("only with a calendar");
        InvalidRuleException bucket = catchThrowableOfType(() -> Rule.builder("b").limit(1).calendar(BERLIN)
                .window(Duration.ofDays(1)).build(), InvalidRuleException.class);
        assertThat(bucket.field()).isEqualTo("calendar");
        InvalidRuleException hours = catchThrowableOfType(() -> Rule.builder("h").algorithm(Algorithm.FIXED_WINDOW)
                .limit(1).calendar(BERLIN).window(Duration.ofMinutes(90)).build(), InvalidRuleException.class);
        assertThat(hours.field()).isEqualTo("window");
    }

    @Test
    void aCalendarRuleSurvivesToBuilderAndAsFallback() {
        Rule weekly = Rule.builder("weekly").algorithm(Algorithm.FIXED_WINDOW).limit(700).fallbackLimit(70)
                .calendar(BERLIN).window(Period.ofWeeks(1)).build();
        assertThat(weekly.calendar()).isEqualTo(new CalendarWindows(BERLIN, ChronoUnit.WEEKS, 1));
        assertThat(weekly.toBuilder().build()).isEqualTo(weekly);
        assertThat(weekly.asFallback().calendar()).isEqualTo(weekly.calendar());
        Rule monthly = weekly.toBuilder().window(Period.ofMonths(1)).build();
        assertThat(monthly.toBuilder().limit(5).build().calendar()).isEqualTo(CalendarWindows.months(BERLIN, 1));
        assertThat(monthly.toBuilder().calendar(ZoneId.of("UTC")).build().calendar())
                .isEqualTo(CalendarWindows.months(ZoneId.of("UTC"), 1));
    }
}
