package dev.sluice.config;

import dev.sluice.limiter.CalendarWindows;
import dev.sluice.limiter.Rule;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * {@code rule.<r>.calendar} and the calendar windows ({@code 1h}, {@code 1d}, {@code 1w}, {@code 1mo}): read, or
 * refused naming the key.
 */
class CalendarConfigTest {

    private final ConfigLoader loader = new ConfigLoader(new Placeholders(k -> null, k -> null));

    private static Map<String, String> daily(String... keysAndValues) {
        Map<String, String> raw = new LinkedHashMap<>();
        raw.put("rules", "daily");
        raw.put("rule.daily.algorithm", "fixed-window");
        raw.put("rule.daily.limit", "1000");
        raw.put("rule.daily.window", "1d");
        raw.put("rule.daily.calendar", "Europe/Berlin");
        for (int i = 0; i < keysAndValues.length; i += 2) {
            if (keysAndValues[i + 1] == null) raw.remove(keysAndValues[i]);
            else raw.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return raw;
    }

    private RuleConfig load(String... keysAndValues) {
        return loader.parse(daily(keysAndValues)).rules().get(0);
    }

    private ConfigException rejected(String... keysAndValues) {
        ConfigException e = catchThrowableOfType(() -> loader.parse(daily(keysAndValues)), ConfigException.class);
        assertThat(e).as("refused").isNotNull();
        return e;
    }

    @Test
    void aDayInBerlin() {
        Rule rule = load().rule();
        assertThat(rule.calendar()).isEqualTo(new CalendarWindows(ZoneId.of("Europe/Berlin"), ChronoUnit.DAYS, 1));
        assertThat(rule.window()).isEqualTo(Duration.ofDays(1));
    }

    /**
     * A fixed window's limit is not bounded by limit x window (2^50 ms), which its arithmetic never forms:
     * a million tokens a calendar month and 100,000 requests a year load (found by a review of 0.3: both
     * failed at start); a bucket over as long a window keeps the bound, naming the key.
     */
    @Test
    void largeMonthlyAndYearlyQuotasLoadWhileABucketOverAMonthKeepsItsBound() {
        assertThat(load("rule.daily.window", "1mo", "rule.daily.limit", "1000000").rule().limit()).isEqualTo(1_000_000);
        assertThat(load("rule.daily.window", "12mo", "rule.daily.limit", "100000").rule().limit()).isEqualTo(100_000);
        assertThat(load("rule.daily.window", "1d", "rule.daily.limit", Long.toString(Rule.MAX_COUNT)).rule().limit())
                .isEqualTo(Rule.MAX_COUNT);
        ConfigException bucket = rejected("rule.daily.calendar", null, "rule.daily.algorithm", "token-bucket",
                "rule.daily.window", "31d", "rule.daily.limit", "1000000");
        assertThat(bucket.getMessage()).contains("rule.daily.limit").contains("at most 2^50").contains("fixed-window");
    }

    @Test
    void monthsWeeksAndHours() {
        assertThat(load("rule.daily.window", "1mo").rule().calendar())
                .isEqualTo(CalendarWindows.months(ZoneId.of("Europe/Berlin"), 1));
        assertThat(load("rule.daily.window", "1mo").rule().window()).as("the longest month").isEqualTo(Duration.ofDays(31));
        assertThat(load("rule.daily.window", "1w").rule().calendar().unit()).isEqualTo(ChronoUnit.WEEKS);
        assertThat(load("rule.daily.window", "6h", "rule.daily.calendar", "Asia/Kolkata").rule().calendar())
                .isEqualTo(new CalendarWindows(ZoneId.of("Asia/Kolkata"), ChronoUnit.HOURS, 6));
        assertThat(load("rule.daily.calendar", "UTC").rule().calendar().zone()).isEqualTo(ZoneId.of("UTC"));
    }

    @Test
    void aPlanHasItsOwnCalendarWindowInTheRulesZone() {
        RuleConfig config = load("rule.daily.plan", "attr:plan", "rule.daily.plans", "gold",
                "rule.daily.plan.gold.limit", "100000", "rule.daily.plan.gold.window", "1mo");
        Rule gold = config.plans().get(0).rule();
        assertThat(gold.calendar()).isEqualTo(CalendarWindows.months(ZoneId.of("Europe/Berlin"), 1));
        assertThat(gold.limit()).isEqualTo(100_000);
        ConfigException e = rejected("rule.daily.plan", "attr:plan", "rule.daily.plans", "gold",
                "rule.daily.plan.gold.limit", "10", "rule.daily.plan.gold.window", "90m");
        assertThat(e.key()).isEqualTo("rule.daily.plan.gold.window");
        assertThat(e).hasMessageContaining("whole hours that divide a day");
    }

    @Test
    void anUnknownZoneIsRefusedNamingTheKeyWithAHint() {
        ConfigException e = rejected("rule.daily.calendar", "Europe/Berln");
        assertThat(e.key()).isEqualTo("rule.daily.calendar");
        assertThat(e).hasMessageContaining("'Europe/Berln'").hasMessageContaining("Europe/Berlin or America/New_York");
        assertThat(rejected("rule.daily.calendar", "europe/berlin")).hasMessageContaining("did you mean Europe/Berlin?");
    }

    @Test
    void onlyFixedWindowHasACalendar() {
        ConfigException e = rejected("rule.daily.algorithm", "token-bucket");
        assertThat(e.key()).isEqualTo("rule.daily.calendar");
        assertThat(e).hasMessageContaining("only for fixed-window");
        assertThat(rejected("rule.daily.algorithm", "sliding-window-counter").key()).isEqualTo("rule.daily.calendar");
        // a window no calendar has is not what is wrong: the calendar is
        ConfigException minute = rejected("rule.daily.algorithm", "token-bucket", "rule.daily.window", "1m");
        assertThat(minute.key()).isEqualTo("rule.daily.calendar");
        assertThat(minute).hasMessageContaining("token-bucket").hasMessageContaining("remove calendar or use fixed-window");
    }

    @Test
    void theApproximateModeCountsInCalendarWindowsToo() {
        assertThat(load("rule.daily.sync", "1s").rule().syncMillis()).isEqualTo(1000);
        assertThat(rejected("rule.daily.window", "1h", "rule.daily.sync", "31m").key()).isEqualTo("rule.daily.sync");
    }

    /**
     * A sync at least twice in every window, the shortest included (found by a review of 0.3: a sync of
     * half the nominal window, accepted, left a 23-hour day one sync and a window a jump cuts none, the
     * fleet's counts unseen in it): Berlin's day of 23 hours takes at most 11h30m, a month (February: 28
     * days) 14 days, Troll's 3-hour window (one hour across its two-hour jump) 30 minutes.
     */
    @Test
    void aSyncIsAtMostHalfTheShortestCalendarWindow() {
        assertThat(load("rule.daily.sync", "690m").rule().syncMillis()).isEqualTo(Duration.ofMinutes(690).toMillis());
        ConfigException day = rejected("rule.daily.sync", "12h");
        assertThat(day.key()).isEqualTo("rule.daily.sync");
        assertThat(day).hasMessageContaining("half the shortest window").hasMessageContaining("1d in Europe/Berlin")
                .hasMessageContaining("82800000 ms");
        assertThat(load("rule.daily.window", "1mo", "rule.daily.sync", "14d").rule().syncMillis())
                .isEqualTo(Duration.ofDays(14).toMillis());
        assertThat(rejected("rule.daily.window", "1mo", "rule.daily.sync", "15d").key()).isEqualTo("rule.daily.sync");
        assertThat(load("rule.daily.calendar", "Antarctica/Troll", "rule.daily.window", "3h", "rule.daily.sync", "30m")
                .rule().syncMillis()).isEqualTo(Duration.ofMinutes(30).toMillis());
        assertThat(rejected("rule.daily.calendar", "Antarctica/Troll", "rule.daily.window", "3h", "rule.daily.sync", "31m")
                .key()).isEqualTo("rule.daily.sync");
    }

    @Test
    void weeksAndMonthsNeedACalendar() {
        ConfigException e = rejected("rule.daily.calendar", null, "rule.daily.window", "1mo");
        assertThat(e.key()).isEqualTo("rule.daily.window");
        assertThat(e).hasMessageContaining("w and mo (calendar weeks and months) only")
                .hasMessageContaining("rule.<name>.calendar");
        assertThat(rejected("rule.daily.calendar", null, "rule.daily.window", "1w").key()).isEqualTo("rule.daily.window");
    }

    @Test
    void aCalendarWindowIsWholeHoursThatDivideADayDaysWeeksOrMonthsThatDivideAYear() {
        for (String bad : new String[] {"30m", "5h", "36h", "5mo", "90s"}) {
            ConfigException e = rejected("rule.daily.window", bad);
            assertThat(e.key()).as(bad).isEqualTo("rule.daily.window");
            assertThat(e).as(bad).hasMessageContaining("with a calendar: whole hours");
        }
        assertThat(rejected("rule.daily.window", null).key()).isEqualTo("rule.daily.window");
    }
}
