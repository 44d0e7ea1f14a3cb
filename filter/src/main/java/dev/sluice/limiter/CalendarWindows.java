package dev.sluice.limiter;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.time.temporal.TemporalAdjusters;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;

/**
 * The fixed windows of a calendar rule ({@code rule.<r>.calendar}): hours, days, weeks or months of
 * one time zone's wall clock, rather than multiples of the window since the epoch.
 *
 * <p><b>Where a window starts.</b> Each time the zone's wall clock shows a boundary (the
 * {@code amount}-th hour from midnight, midnight of every {@code amount}-th day since 1970-01-01,
 * Monday 00:00 of every {@code amount}-th week since Monday 1969-12-29, the 1st 00:00 of every
 * {@code amount}-th month from January), and at a daylight-saving (or any offset) change whose
 * jump forward passes over one. So a day is midnight to midnight, 23 or 25 hours across a change;
 * an hour in a zone of a half-hour offset starts at :30 UTC; a repeated hour after a change back is
 * a window of its own, shown twice on the clock; a midnight the clock shows twice (a change back onto
 * it, as Havana's from 01:00 to 00:00) starts one window, at its first showing, so that day is 25
 * hours too; a month is 28 to 31 days.
 *
 * <p><b>Whose rules.</b> The zone's rules are the JDK's time-zone data (tzdata, updated with the
 * JDK or its TZUpdater): a zone whose rules change (a government moving its offset) changes its
 * windows when the JVM's data does. Instances running different tzdata versions may disagree
 * about the windows around such a change: keep the fleet's JDKs updated together.
 *
 * @param zone   the time zone whose calendar the windows follow
 * @param unit   {@link ChronoUnit#HOURS}, {@link ChronoUnit#DAYS}, {@link ChronoUnit#WEEKS} or {@link ChronoUnit#MONTHS}
 * @param amount how many units a window spans: hours that divide a day (1, 2, 3, 4, 6, 8, 12), months
 *               that divide a year (1, 2, 3, 4, 6, 12), any number of days or weeks up to 366 days
 */
public record CalendarWindows(ZoneId zone, ChronoUnit unit, int amount) {

    /** What a calendar window may be, for messages. */
    public static final String ACCEPTED = "with a calendar: whole hours that divide a day (1h, 2h, 3h, 4h, 6h, 8h, 12h),"
            + " days (1d; 2d to 366d count from 1970-01-01, but a multiple of 7 days is that many weeks), weeks (1w, from Monday 00:00; 2w to 52w count from"
            + " Monday 1969-12-29) or months that divide a year (1mo, 3mo, 12mo)";

    private static final long HOUR_MS = 3_600_000;
    private static final long DAY_MS = 24 * HOUR_MS;
    /** Monday 1969-12-29, the first day of the week that holds the epoch: where weeks are counted from. */
    private static final long FIRST_MONDAY_EPOCH_DAY = -3;

    public CalendarWindows {
        if (zone == null) throw new IllegalArgumentException("a time zone is required");
        if (unit == null) throw new IllegalArgumentException("a unit is required");
        boolean fits = switch (unit) {
            case HOURS -> amount >= 1 && amount < 24 && 24 % amount == 0;
            case DAYS -> amount >= 1 && amount <= 366;
            case WEEKS -> amount >= 1 && amount <= 52;
            case MONTHS -> amount >= 1 && 12 % amount == 0;
            default -> false;
        };
        if (!fits) throw new IllegalArgumentException(ACCEPTED + "; got " + amount + " " + unit.toString().toLowerCase());
        if (unit == ChronoUnit.DAYS && amount % 7 == 0) {
            unit = ChronoUnit.WEEKS; // a whole number of weeks is weeks, from Monday
            amount = amount / 7;
        }
    }

    /**
     * The calendar windows of a window given as a duration: whole days (a multiple of 7 days: weeks,
     * from Monday), else whole hours that divide a day.
     *
     * @throws IllegalArgumentException saying what is accepted
     */
    public static CalendarWindows of(ZoneId zone, Duration window) {
        long ms = window.toMillis();
        if (window.isNegative() || window.isZero() || window.getNano() % 1_000_000 != 0 || ms % HOUR_MS != 0) {
            throw new IllegalArgumentException(ACCEPTED + "; got " + window);
        }
        if (ms % DAY_MS == 0 && ms / DAY_MS <= 366) {
            return new CalendarWindows(zone, ChronoUnit.DAYS, (int) (ms / DAY_MS));
        }
        if (ms > DAY_MS) throw new IllegalArgumentException(ACCEPTED + "; got " + window);
        return new CalendarWindows(zone, ChronoUnit.HOURS, (int) (ms / HOUR_MS));
    }

    /** {@code amount} calendar months of {@code zone}, from the 1st 00:00. */
    public static CalendarWindows months(ZoneId zone, int amount) {
        return new CalendarWindows(zone, ChronoUnit.MONTHS, amount);
    }

    /**
     * The longest these windows can be, nominally: months as 31 days, days and weeks as their hours,
     * whatever a daylight-saving change adds. What {@link Rule#window()} holds for a calendar rule, for
     * the bounds of its arithmetic; the real length of each window is {@link Window#lengthMs()}.
     */
    public Duration nominal() {
        return switch (unit) {
            case HOURS -> Duration.ofHours(amount);
            case DAYS -> Duration.ofDays(amount);
            case WEEKS -> Duration.ofDays(7L * amount);
            default -> Duration.ofDays(31L * amount);
        };
    }

    /** The window as a user writes it: {@code 1d}, {@code 1w}, {@code 1mo}, {@code 6h}. */
    public String describe() {
        return amount + switch (unit) {
            case HOURS -> "h";
            case DAYS -> "d";
            case WEEKS -> "w";
            default -> "mo";
        };
    }

    /** One window: from {@code startMs} (inclusive) to {@code endMs} (exclusive), ms since the epoch. */
    public record Window(long startMs, long endMs) {
        public long lengthMs() {
            return endMs - startMs;
        }

        public boolean contains(long ms) {
            return ms >= startMs && ms < endMs;
        }
    }

    /** The window that holds {@code epochMs}. */
    public Window windowAt(long epochMs) {
        // a window is never longer than nominal() plus the largest offset change (a day skipped or repeated):
        // the last start at or before epochMs lies within that
        long start = nextStart(epochMs - nominal().toMillis() - 2 * DAY_MS);
        long next = nextStart(start);
        while (next <= epochMs) {
            start = next;
            next = nextStart(start);
        }
        return new Window(start, next);
    }

    /**
     * The shortest window that holds a moment of {@code [fromMs, toMs)}: one cut by an offset change (a
     * day of 23 hours; a 3-hour window that a 2-hour jump leaves one hour long) or a short month, else one
     * of the nominal length. What a sync interval is checked against ({@link Rule}'s {@code sync}).
     */
    public Window shortest(long fromMs, long toMs) {
        Window shortest = windowAt(fromMs);
        ZoneRules rules = zone.getRules();
        for (ZoneOffsetTransition change = rules.nextTransition(Instant.ofEpochMilli(fromMs));
             change != null && change.toEpochSecond() * 1000 < toMs; change = rules.nextTransition(change.getInstant())) {
            long at = change.toEpochSecond() * 1000;
            shortest = shorter(shortest, shorter(windowAt(at - 1), windowAt(at)));
        }
        if (unit == ChronoUnit.MONTHS) {
            for (Window w = windowAt(fromMs); w.startMs() < toMs; w = windowAt(w.endMs())) {
                shortest = shorter(shortest, w);
            }
        }
        return shortest;
    }

    private static Window shorter(Window a, Window b) {
        return b.lengthMs() < a.lengthMs() ? b : a;
    }

    /**
     * The first window start strictly after {@code epochMs}: when the wall clock next shows a
     * boundary, or an offset change jumps past one (or back onto one) before that.
     */
    public long nextStart(long epochMs) {
        ZoneRules rules = zone.getRules();
        Instant at = Instant.ofEpochMilli(epochMs);
        while (true) {
            ZoneOffset offset = rules.getOffset(at);
            LocalDateTime wall = LocalDateTime.ofInstant(at, offset);
            LocalDateTime boundary = next(wall);
            long candidate = boundary.toInstant(offset).toEpochMilli();
            ZoneOffsetTransition change = rules.nextTransition(at);
            if (change == null || candidate < change.toEpochSecond() * 1000) {
                return candidate; // the clock shows the boundary before its offset changes
            }
            // the offset changes first: the clock jumps from before to after
            LocalDateTime before = change.getDateTimeBefore();
            LocalDateTime after = change.getDateTimeAfter();
            // back onto a boundary (Havana: 01:00 back to 00:00) starts a window only for hours, whose repeated hour is
            // one of its own; a day, week or month whose midnight shows twice started at the first: 25 hours long
            boolean passes = change.isGap() ? isBoundary(before) || !next(before).isAfter(after)
                    : unit == ChronoUnit.HOURS && isBoundary(after);
            if (passes) {
                return change.toEpochSecond() * 1000;
            }
            at = change.getInstant(); // the clock goes on from the changed offset
        }
    }

    /** The first boundary on the wall clock strictly after {@code wall}. */
    LocalDateTime next(LocalDateTime wall) {
        LocalDateTime floor = floor(wall);
        return switch (unit) {
            case HOURS -> floor.plusHours(amount);
            case DAYS -> floor.plusDays(amount);
            case WEEKS -> floor.plusWeeks(amount);
            default -> floor.plusMonths(amount);
        };
    }

    private boolean isBoundary(LocalDateTime wall) {
        return floor(wall).equals(wall);
    }

    /** The last boundary on the wall clock at or before {@code wall}. */
    private LocalDateTime floor(LocalDateTime wall) {
        LocalDate date = wall.toLocalDate();
        return switch (unit) {
            case HOURS -> date.atTime(wall.getHour() - wall.getHour() % amount, 0);
            case DAYS -> LocalDate.ofEpochDay(date.toEpochDay() - Math.floorMod(date.toEpochDay(), amount))
                    .atStartOfDay();
            case WEEKS -> {
                LocalDate monday = date.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY));
                long weeks = (monday.toEpochDay() - FIRST_MONDAY_EPOCH_DAY) / 7;
                yield monday.minusWeeks(Math.floorMod(weeks, amount)).atStartOfDay();
            }
            default -> {
                LocalDate first = date.withDayOfMonth(1);
                yield first.minusMonths(Math.floorMod(first.getMonthValue() - 1, amount)).atTime(LocalTime.MIDNIGHT);
            }
        };
    }

    @Override
    public String toString() {
        return describe() + " in " + zone.getId();
    }
}
