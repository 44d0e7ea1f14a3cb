package dev.sluice.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses configured durations. Accepted: a whole number with a unit, {@code 250ms}, {@code 30s},
 * {@code 5m}, {@code 1h}, {@code 1d} (units case-insensitive, but for {@code M}: a minute or a month?), at most 100
 * years, or ISO-8601 such as {@code PT1M},
 * {@code PT0.5S}, {@code P1D}. A bare number is refused because its unit would be a guess (is
 * {@code window=60} seconds or milliseconds?); the one exception is {@code 0}, which means the
 * same in every unit. Negative durations are refused. Calendar weeks and months ({@code 1w},
 * {@code 1mo}) are no durations: {@link #weeks} and {@link #months} read them, for a calendar rule's window only.
 */
public final class Durations {

    /** What every duration error message says is accepted. */
    static final String ACCEPTED = "a duration with a unit: 250ms, 30s, 5m, 1h, 1d, or ISO-8601 such as PT1M or PT0.5S";

    /** The longest duration any key takes. */
    static final Duration LONGEST = Duration.ofDays(36_500);

    private static final Pattern WITH_UNIT = Pattern.compile("(-?\\d+)\\s*(ms|s|m|h|d)", Pattern.CASE_INSENSITIVE);
    private static final Pattern WEEKS = Pattern.compile("(\\d{1,9})\\s*w", Pattern.CASE_INSENSITIVE);
    private static final Pattern MONTHS = Pattern.compile("(\\d{1,9})\\s*mo", Pattern.CASE_INSENSITIVE);
    private static final Pattern BARE_NUMBER = Pattern.compile("-?\\d+(\\.\\d+)?");

    private Durations() {
    }

    /**
     * @param key   the key the value belongs to, for the error message
     * @param value the configured value, trimmed
     * @return the duration, zero or positive
     * @throws ConfigException if the value is not a duration with a unit, or is negative
     */
    public static Duration parse(String key, String value) {
        if (value == null || value.isBlank()) {
            throw new ConfigException(key, value, ACCEPTED);
        }
        String v = value.trim();
        if (months(v) != null || weeks(v) != null) {
            throw new ConfigException(key, value, ACCEPTED + "; w and mo (calendar weeks and months) only in a rule's"
                    + " window with rule.<name>.calendar set (a time zone), e.g. window=1mo, calendar=Europe/Berlin;"
                    + " otherwise 7d for a week");
        }
        Duration d = withUnit(key, value, v);
        if (d == null) d = iso(v);
        if (d == null) {
            if (v.equals("0")) return Duration.ZERO;
            if (BARE_NUMBER.matcher(v).matches()) {
                throw new ConfigException(key, value, ACCEPTED + "; a bare number has no unit: add one, e.g. "
                        + v + "s or " + v + "ms");
            }
            throw new ConfigException(key, value, ACCEPTED);
        }
        if (d.isNegative()) {
            throw new ConfigException(key, value, ACCEPTED + "; it must not be negative");
        }
        if (d.compareTo(LONGEST) > 0) {
            // no setting of Sluice's means anything near this long, and nanosecond clocks overflow past 292 years
            throw new ConfigException(key, value, ACCEPTED + "; at most " + format(LONGEST) + " (100 years)");
        }
        if (d.getNano() % 1_000_000 != 0) {
            throw new ConfigException(key, value, ACCEPTED + "; Sluice counts whole milliseconds: round it to one");
        }
        return d;
    }

    /** The number of calendar weeks of {@code value} ({@code 1w}), or null if it is not in weeks. */
    public static Integer weeks(String value) {
        if (value == null) return null;
        Matcher m = WEEKS.matcher(value.trim());
        return m.matches() ? Integer.valueOf(m.group(1)) : null;
    }

    /** The number of calendar months of {@code value} ({@code 1mo}, {@code 3mo}), or null if it is not in months. */
    public static Integer months(String value) {
        if (value == null) return null;
        Matcher m = MONTHS.matcher(value.trim());
        return m.matches() ? Integer.valueOf(m.group(1)) : null;
    }

    /**
     * A duration as a user writes one: the largest of the units above that states it exactly
     * ({@code 2s}, {@code 90s}, {@code 1500ms}, {@code 1d}), for log lines and messages.
     */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms == 0) return "0";
        if (ms % 86_400_000 == 0) return ms / 86_400_000 + "d";
        if (ms % 3_600_000 == 0) return ms / 3_600_000 + "h";
        if (ms % 60_000 == 0) return ms / 60_000 + "m";
        if (ms % 1000 == 0) return ms / 1000 + "s";
        return ms + "ms";
    }

    private static Duration withUnit(String key, String original, String v) {
        Matcher m = WITH_UNIT.matcher(v);
        if (!m.matches()) return null;
        if (m.group(2).equals("M")) {
            // units are case-insensitive, but M is a month as often as a minute
            throw new ConfigException(key, original, ACCEPTED + "; M is ambiguous: write " + m.group(1) + "m for minutes, or "
                    + m.group(1) + "mo for calendar months (a rule's window, with rule.<name>.calendar)");
        }
        long amount;
        try {
            amount = Long.parseLong(m.group(1));
        } catch (NumberFormatException tooLong) {
            throw new ConfigException(key, original, ACCEPTED + "; the number is too large");
        }
        try {
            return switch (m.group(2).toLowerCase(Locale.ROOT)) {
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        } catch (ArithmeticException tooLong) {
            throw new ConfigException(key, original, ACCEPTED + "; the number is too large");
        }
    }

    private static Duration iso(String v) {
        char first = Character.toUpperCase(v.charAt(0));
        if (first != 'P' && !((first == '-' || first == '+') && v.length() > 1 && Character.toUpperCase(v.charAt(1)) == 'P')) {
            return null;
        }
        try {
            return Duration.parse(v);
        } catch (DateTimeParseException notIso) {
            return null;
        }
    }
}
