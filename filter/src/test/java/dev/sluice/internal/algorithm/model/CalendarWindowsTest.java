package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.CalendarWindows;
import dev.sluice.testing.TestSeed;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The calendar windows at their edges: months of 28 to 31 days, days of 23 and 25 hours across both
 * daylight-saving changes in Europe and America, hours across them, a half-hour zone, weeks from
 * Monday, February 29, a zone whose rules changed; and, at random instants over fifty years in zones
 * with every kind of change, the same windows as {@link CalendarModel}'s brute force.
 */
class CalendarWindowsTest {

    static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");
    static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    static final ZoneId KOLKATA = ZoneId.of("Asia/Kolkata");

    private static final CalendarWindows BERLIN_DAYS = CalendarWindows.of(BERLIN, Duration.ofDays(1));
    private static final CalendarWindows BERLIN_HOURS = CalendarWindows.of(BERLIN, Duration.ofHours(1));
    private static final CalendarWindows BERLIN_MONTHS = CalendarWindows.months(BERLIN, 1);
    private static final CalendarWindows NEW_YORK_DAYS = CalendarWindows.of(NEW_YORK, Duration.ofDays(1));
    private static final CalendarWindows NEW_YORK_HOURS = CalendarWindows.of(NEW_YORK, Duration.ofHours(1));

    static long ms(String offsetDateTime) {
        return OffsetDateTime.parse(offsetDateTime).toInstant().toEpochMilli();
    }

    private static void assertWindow(CalendarWindows c, long at, String start, String end) {
        CalendarWindows.Window w = c.windowAt(at);
        assertThat(Instant.ofEpochMilli(w.startMs())).as("start of the window holding %s", Instant.ofEpochMilli(at))
                .isEqualTo(Instant.ofEpochMilli(ms(start)));
        assertThat(Instant.ofEpochMilli(w.endMs())).as("end of the window holding %s", Instant.ofEpochMilli(at))
                .isEqualTo(Instant.ofEpochMilli(ms(end)));
        long[] model = CalendarModel.window(c, at);
        assertThat(new long[] {w.startMs(), w.endMs()}).as("the model's").containsExactly(model);
    }

    @Test
    void theLastSecondOfAMonthIsInThatMonthAndTheNextMsStartsTheNext() {
        long last = ms("2027-01-31T23:59:59.999+01:00");
        assertWindow(BERLIN_MONTHS, last, "2027-01-01T00:00+01:00", "2027-02-01T00:00+01:00");
        assertWindow(BERLIN_MONTHS, last + 1, "2027-02-01T00:00+01:00", "2027-03-01T00:00+01:00");
        assertThat(BERLIN_MONTHS.windowAt(last + 1).lengthMs()).as("February 2027: 28 days").isEqualTo(2_419_200_000L);
        assertThat(BERLIN_MONTHS.windowAt(ms("2027-04-10T12:00+02:00")).lengthMs()).as("April: 30 days, in summer time")
                .isEqualTo(30 * 86_400_000L);
        // March holds the change to summer time: 31 days less an hour
        assertThat(BERLIN_MONTHS.windowAt(ms("2027-03-10T12:00+01:00")).lengthMs()).isEqualTo(31 * 86_400_000L - 3_600_000);
    }

    @Test
    void february29thOf2028IsADayAndFebruaryHas29Days() {
        assertWindow(BERLIN_DAYS, ms("2028-02-29T23:59:59.999+01:00"), "2028-02-29T00:00+01:00", "2028-03-01T00:00+01:00");
        assertThat(BERLIN_MONTHS.windowAt(ms("2028-02-29T12:00+01:00")).lengthMs()).isEqualTo(29 * 86_400_000L);
    }

    @Test
    void berlinsDaysAcrossTheChangesAre23And25HoursLong() {
        assertWindow(BERLIN_DAYS, ms("2026-03-29T12:00+02:00"), "2026-03-29T00:00+01:00", "2026-03-30T00:00+02:00");
        assertThat(BERLIN_DAYS.windowAt(ms("2026-03-29T12:00+02:00")).lengthMs()).isEqualTo(23 * 3_600_000L);
        assertWindow(BERLIN_DAYS, ms("2026-10-25T12:00+01:00"), "2026-10-25T00:00+02:00", "2026-10-26T00:00+01:00");
        assertThat(BERLIN_DAYS.windowAt(ms("2026-10-25T12:00+01:00")).lengthMs()).isEqualTo(25 * 3_600_000L);
    }

    @Test
    void berlinsHoursAcrossTheChangesStayAnHourAndTheRepeatedHourIsItsOwnWindow() {
        // spring: 01:00 CET is followed by 03:00 CEST
        assertWindow(BERLIN_HOURS, ms("2026-03-29T01:59:59.999+01:00"), "2026-03-29T01:00+01:00", "2026-03-29T03:00+02:00");
        assertWindow(BERLIN_HOURS, ms("2026-03-29T03:00+02:00"), "2026-03-29T03:00+02:00", "2026-03-29T04:00+02:00");
        // autumn: 02:00 is shown twice, in summer time then in winter time
        assertWindow(BERLIN_HOURS, ms("2026-10-25T02:30+02:00"), "2026-10-25T02:00+02:00", "2026-10-25T02:00+01:00");
        assertWindow(BERLIN_HOURS, ms("2026-10-25T02:30+01:00"), "2026-10-25T02:00+01:00", "2026-10-25T03:00+01:00");
        // windows of three hours from midnight: 00:00-03:00 lasts four hours in autumn, two in spring
        CalendarWindows threeHours = CalendarWindows.of(BERLIN, Duration.ofHours(3));
        assertWindow(threeHours, ms("2026-10-25T02:30+01:00"), "2026-10-25T00:00+02:00", "2026-10-25T03:00+01:00");
        assertWindow(threeHours, ms("2026-03-29T01:30+01:00"), "2026-03-29T00:00+01:00", "2026-03-29T03:00+02:00");
    }

    /**
     * Havana puts its clock back from 01:00 to 00:00 (the first Sunday of November): its midnight shows twice. The
     * day starts at the first and lasts 25 hours (in 0.3's first calendar a day of one hour, then one of 24, began
     * there); an hourly window of the repeated hour is one of its own.
     */
    @Test
    void aMidnightTheClockShowsTwiceStartsOneDayOf25Hours() {
        ZoneId havana = ZoneId.of("America/Havana");
        CalendarWindows days = CalendarWindows.of(havana, Duration.ofDays(1));
        assertWindow(days, ms("2026-11-01T00:30-04:00"), "2026-11-01T00:00-04:00", "2026-11-02T00:00-05:00");
        assertWindow(days, ms("2026-11-01T00:30-05:00"), "2026-11-01T00:00-04:00", "2026-11-02T00:00-05:00");
        assertThat(days.windowAt(ms("2026-11-01T12:00-05:00")).lengthMs()).isEqualTo(25 * 3_600_000L);
        CalendarWindows hours = CalendarWindows.of(havana, Duration.ofHours(1));
        assertWindow(hours, ms("2026-11-01T00:30-05:00"), "2026-11-01T00:00-05:00", "2026-11-01T01:00-05:00");
        assertWindow(CalendarWindows.months(havana, 1), ms("2026-11-01T00:30-05:00"), "2026-11-01T00:00-04:00",
                "2026-12-01T00:00-05:00");
    }

    @Test
    void newYorksDaysAndHoursAcrossTheChanges() {
        assertWindow(NEW_YORK_DAYS, ms("2026-03-08T12:00-04:00"), "2026-03-08T00:00-05:00", "2026-03-09T00:00-04:00");
        assertThat(NEW_YORK_DAYS.windowAt(ms("2026-03-08T12:00-04:00")).lengthMs()).isEqualTo(23 * 3_600_000L);
        assertWindow(NEW_YORK_DAYS, ms("2026-11-01T12:00-05:00"), "2026-11-01T00:00-04:00", "2026-11-02T00:00-05:00");
        assertThat(NEW_YORK_DAYS.windowAt(ms("2026-11-01T12:00-05:00")).lengthMs()).isEqualTo(25 * 3_600_000L);
        assertWindow(NEW_YORK_HOURS, ms("2026-03-08T01:30-05:00"), "2026-03-08T01:00-05:00", "2026-03-08T03:00-04:00");
        assertWindow(NEW_YORK_HOURS, ms("2026-11-01T01:30-04:00"), "2026-11-01T01:00-04:00", "2026-11-01T01:00-05:00");
        assertWindow(NEW_YORK_HOURS, ms("2026-11-01T01:30-05:00"), "2026-11-01T01:00-05:00", "2026-11-01T02:00-05:00");
    }

    @Test
    void anHourInAHalfHourZoneStartsAtHalfPastUtc() {
        CalendarWindows hours = CalendarWindows.of(KOLKATA, Duration.ofHours(1));
        CalendarWindows.Window w = hours.windowAt(ms("2026-12-01T10:45Z"));
        assertThat(Instant.ofEpochMilli(w.startMs())).isEqualTo(Instant.parse("2026-12-01T10:30:00Z"));
        assertThat(Instant.ofEpochMilli(w.endMs())).isEqualTo(Instant.parse("2026-12-01T11:30:00Z"));
        assertWindow(CalendarWindows.of(KOLKATA, Duration.ofDays(1)), ms("2026-12-01T20:00Z"), "2026-12-02T00:00+05:30",
                "2026-12-03T00:00+05:30");
    }

    @Test
    void aWeekStartsOnMondayAtMidnight() {
        CalendarWindows weeks = CalendarWindows.of(BERLIN, Duration.ofDays(7));
        assertThat(weeks.unit()).isEqualTo(ChronoUnit.WEEKS);
        // Wednesday 2 December 2026: the week from Monday 30 November
        assertWindow(weeks, ms("2026-12-02T15:00+01:00"), "2026-11-30T00:00+01:00", "2026-12-07T00:00+01:00");
        assertWindow(weeks, ms("2026-12-06T23:59:59.999+01:00"), "2026-11-30T00:00+01:00", "2026-12-07T00:00+01:00");
        assertWindow(weeks, ms("2026-12-07T00:00+01:00"), "2026-12-07T00:00+01:00", "2026-12-14T00:00+01:00");
    }

    /**
     * North Korea moved from UTC+8:30 to UTC+9 on 2018-05-04 at 23:30 (tzdata 2018e): that day was 23
     * hours and a half. Which rules apply is the JDK's tzdata's: a JDK older than that data knows no
     * change and would make it a day of 24 hours.
     */
    @Test
    void aZoneWhoseRulesChangedFollowsTheJdksTimeZoneData() {
        CalendarWindows days = CalendarWindows.of(ZoneId.of("Asia/Pyongyang"), Duration.ofDays(1));
        assertWindow(days, ms("2018-05-04T12:00+08:30"), "2018-05-04T00:00+08:30", "2018-05-05T00:00+09:00");
        assertThat(days.windowAt(ms("2018-05-04T12:00+08:30")).lengthMs()).isEqualTo(23 * 3_600_000L + 1_800_000);
        // Samoa skipped 30 December 2011 (UTC-10 to UTC+14): the 29th is followed by the 31st
        CalendarWindows samoa = CalendarWindows.of(ZoneId.of("Pacific/Apia"), Duration.ofDays(1));
        assertWindow(samoa, ms("2011-12-29T23:00-10:00"), "2011-12-29T00:00-10:00", "2011-12-31T00:00+14:00");
        assertWindow(samoa, ms("2011-12-31T00:00+14:00"), "2011-12-31T00:00+14:00", "2012-01-01T00:00+14:00");
    }

    @Test
    void onlyWholeHoursThatDivideADayDaysWeeksAndMonthsThatDivideAYear() {
        assertThatThrownBy(() -> CalendarWindows.of(BERLIN, Duration.ofMinutes(30))).hasMessageContaining("whole hours");
        assertThatThrownBy(() -> CalendarWindows.of(BERLIN, Duration.ofHours(5))).hasMessageContaining("divide a day");
        assertThatThrownBy(() -> CalendarWindows.of(BERLIN, Duration.ofHours(36))).hasMessageContaining("whole hours");
        assertThatThrownBy(() -> CalendarWindows.months(BERLIN, 5)).hasMessageContaining("months that divide a year");
        assertThat(CalendarWindows.of(BERLIN, Duration.ofHours(48))).isEqualTo(new CalendarWindows(BERLIN, ChronoUnit.DAYS, 2));
        assertThat(CalendarWindows.of(BERLIN, Duration.ofHours(24)).describe()).isEqualTo("1d");
    }

    /** Random instants from 1990 to 2040 in zones of every kind of change; the same windows as the brute force. */
    @Test
    void theSameWindowsAsTheDefinitionAtRandomInstants() {
        String[] zones = {"Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Asia/Kathmandu",
                "America/Sao_Paulo", "America/Havana", "Pacific/Apia", "Pacific/Chatham", "Asia/Pyongyang", "UTC",
                "America/Santiago", "Asia/Tehran"};
        Random rnd = new Random(TestSeed.get());
        long from = ms("1990-01-01T00:00Z");
        long to = ms("2040-01-01T00:00Z");
        for (int i = 0; i < 1500; i++) {
            ZoneId zone = ZoneId.of(zones[rnd.nextInt(zones.length)]);
            CalendarWindows c = switch (rnd.nextInt(6)) {
                case 0 -> CalendarWindows.of(zone, Duration.ofHours(1));
                case 1 -> CalendarWindows.of(zone, Duration.ofHours(3));
                case 2 -> CalendarWindows.of(zone, Duration.ofDays(1));
                case 3 -> CalendarWindows.of(zone, Duration.ofDays(7));
                case 4 -> CalendarWindows.months(zone, 1);
                default -> CalendarWindows.months(zone, 3);
            };
            long t = from + (long) (rnd.nextDouble() * (to - from));
            // near an offset change half the time
            var change = zone.getRules().nextTransition(Instant.ofEpochMilli(t));
            if (rnd.nextBoolean() && change != null) t = change.toEpochSecond() * 1000 + rnd.nextInt(7_200_000) - 3_600_000;
            CalendarWindows.Window w = c.windowAt(t);
            long[] model = CalendarModel.window(c, t);
            assertThat(new long[] {w.startMs(), w.endMs()}).as(TestSeed.replay() + ": %s at %s", c, Instant.ofEpochMilli(t))
                    .containsExactly(model);
            assertThat(c.nextStart(w.startMs())).isEqualTo(w.endMs());
        }
    }

    /**
     * The shortest window of a span, what a rule's sync interval is checked against: a day the spring
     * change cuts to 23 hours, February, a 3-hour window Troll's two-hour jump leaves one hour long; a zone
     * with no change, the nominal length (found by a review of 0.3: a sync of half the nominal window
     * left such windows with one sync or none).
     */
    @Test
    void theShortestWindowOfASpan() {
        long from = ms("2027-01-01T00:00Z");
        long to = ms("2028-01-01T00:00Z");
        CalendarWindows.Window day = BERLIN_DAYS.shortest(from, to);
        assertThat(day.lengthMs()).isEqualTo(Duration.ofHours(23).toMillis());
        assertThat(day.startMs()).isEqualTo(ms("2027-03-28T00:00+01:00"));
        CalendarWindows.Window month = BERLIN_MONTHS.shortest(from, to);
        assertThat(month.startMs()).isEqualTo(ms("2027-02-01T00:00+01:00"));
        assertThat(month.lengthMs()).isEqualTo(Duration.ofDays(28).toMillis());
        CalendarWindows troll = CalendarWindows.of(ZoneId.of("Antarctica/Troll"), Duration.ofHours(3));
        assertThat(troll.shortest(from, to).lengthMs()).isEqualTo(Duration.ofHours(1).toMillis());
        assertThat(CalendarWindows.of(ZoneId.of("UTC"), Duration.ofDays(1)).shortest(from, to).lengthMs())
                .isEqualTo(Duration.ofDays(1).toMillis());
        assertThat(BERLIN_HOURS.shortest(from, to).lengthMs()).as("an hour skipped, none cut")
                .isEqualTo(Duration.ofHours(1).toMillis());
    }
}
