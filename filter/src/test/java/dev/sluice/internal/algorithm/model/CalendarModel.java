package dev.sluice.internal.algorithm.model;

import dev.sluice.limiter.CalendarWindows;

import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The calendar windows by their definition, by brute force: a window starts at each instant at which
 * the zone's wall clock shows a boundary (a midnight for the first time only: put back onto it, the
 * clock shows the same day's start again), or has jumped forward past one; found by looking at the
 * clock every 15 minutes (every offset and offset change of the zones tested falls on a quarter
 * hour). Independent of {@link CalendarWindows}' own arithmetic, which walks the zone's transitions.
 * Windows found are kept, as the figures' searches ask the same ones again and again.
 */
final class CalendarModel {

    private static final long STEP_MS = 15 * 60_000;
    private static final Map<CalendarWindows, TreeMap<Long, Long>> FOUND = new HashMap<>();

    private CalendarModel() {
    }

    /** {start, end} of the window holding {@code t}. */
    static synchronized long[] window(CalendarWindows c, long t) {
        TreeMap<Long, Long> found = FOUND.computeIfAbsent(c, k -> new TreeMap<>());
        Map.Entry<Long, Long> known = found.floorEntry(t);
        if (known != null && t < known.getValue()) return new long[] {known.getKey(), known.getValue()};
        long start = Math.floorDiv(t, STEP_MS) * STEP_MS;
        while (!startsAt(c, start)) start -= STEP_MS;
        long end = Math.floorDiv(t, STEP_MS) * STEP_MS + STEP_MS;
        while (!startsAt(c, end)) end += STEP_MS;
        found.put(start, end);
        return new long[] {start, end};
    }

    static long end(CalendarWindows c, long t) {
        return window(c, t)[1];
    }

    /** Whether a window starts at {@code m}: the clock shows a boundary there, or jumped past one in the 15 minutes before. */
    static boolean startsAt(CalendarWindows c, long m) {
        LocalDateTime now = wall(c, m);
        if (isBoundary(c, now)) {
            // a midnight shown a second time (the clock put back onto it) is the day's, week's or month's second
            // showing, not a start; a repeated hour is a window of its own
            return c.unit() == java.time.temporal.ChronoUnit.HOURS || !wall(c, m - STEP_MS).isAfter(now);
        }
        for (LocalDateTime l = wall(c, m - STEP_MS).plusMinutes(15); l.isBefore(now); l = l.plusMinutes(15)) {
            if (isBoundary(c, l)) return true; // a jump forward over it
        }
        return false;
    }

    private static LocalDateTime wall(CalendarWindows c, long ms) {
        return LocalDateTime.ofInstant(Instant.ofEpochMilli(ms), c.zone());
    }

    /** Whether the wall clock shows a boundary: the definition of each unit. */
    static boolean isBoundary(CalendarWindows c, LocalDateTime l) {
        boolean midnight = l.toLocalTime().equals(LocalTime.MIDNIGHT);
        long day = l.toLocalDate().toEpochDay();
        return switch (c.unit()) {
            case HOURS -> l.getMinute() == 0 && l.getSecond() == 0 && l.getNano() == 0 && l.getHour() % c.amount() == 0;
            case DAYS -> midnight && Math.floorMod(day, c.amount()) == 0;
            case WEEKS -> midnight && l.getDayOfWeek() == DayOfWeek.MONDAY && Math.floorMod((day + 3) / 7, c.amount()) == 0;
            case MONTHS -> midnight && l.getDayOfMonth() == 1 && (l.getMonthValue() - 1) % c.amount() == 0;
            default -> throw new IllegalArgumentException(c.toString());
        };
    }
}
