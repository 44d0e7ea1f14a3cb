package dev.sluice.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The configuration's key/value pairs, trimmed and with placeholders substituted, read through
 * typed accessors that throw {@link ConfigException} naming the key, the value and what is
 * accepted. A blank value counts as not set, so {@code redis.password=${REDIS_PASSWORD:}} means
 * "no password unless the variable is set".
 */
final class ConfigValues {

    private final SortedMap<String, String> values;

    ConfigValues(SortedMap<String, String> values) {
        this.values = Collections.unmodifiableSortedMap(new TreeMap<>(values));
    }

    /** All pairs, sorted by key (blank values included). */
    SortedMap<String, String> all() {
        return values;
    }

    boolean isSet(String key) {
        return get(key) != null;
    }

    /** The value, or {@code null} when the key is absent or blank. */
    String get(String key) {
        String v = values.get(key);
        return v == null || v.isEmpty() ? null : v;
    }

    String string(String key, String defaultValue) {
        String v = get(key);
        return v == null ? defaultValue : v;
    }

    String required(String key, String accepted) {
        String v = get(key);
        if (v == null) throw new ConfigException(key, values.get(key), "required: " + accepted);
        return v;
    }

    long integer(String key, long defaultValue, long min, long max) {
        String v = get(key);
        return v == null ? defaultValue : parseInteger(key, v, min, max);
    }

    long requiredInteger(String key, long min, long max) {
        return parseInteger(key, required(key, integerRange(min, max)), min, max);
    }

    Duration duration(String key, Duration defaultValue, Duration min) {
        String v = get(key);
        return v == null ? defaultValue : checkMin(key, v, Durations.parse(key, v), min);
    }

    Duration requiredDuration(String key, Duration min) {
        String v = required(key, Durations.ACCEPTED + ", at least " + text(min));
        return checkMin(key, v, Durations.parse(key, v), min);
    }

    boolean bool(String key, boolean defaultValue) {
        return choice(key, defaultValue, options("true", true, "false", false));
    }

    /**
     * @param options the accepted spellings (matched case-insensitively) and their meanings, in
     *                the order the error message lists them
     */
    <T> T choice(String key, T defaultValue, Map<String, T> options) {
        String v = get(key);
        if (v == null) return defaultValue;
        for (Map.Entry<String, T> option : options.entrySet()) {
            if (option.getKey().equalsIgnoreCase(v)) return option.getValue();
        }
        throw new ConfigException(key, v, "one of " + String.join(", ", options.keySet()));
    }

    /** Comma-separated entries, trimmed, blank entries skipped; empty when the key is not set. */
    List<String> list(String key) {
        String v = get(key);
        return v == null ? List.of() : split(v);
    }

    static List<String> split(String value) {
        List<String> entries = new ArrayList<>();
        for (String entry : value.split(",")) {
            String e = entry.trim();
            if (!e.isEmpty()) entries.add(e);
        }
        return entries;
    }

    /** Options for {@link #choice}, in the given order: label, value, label, value, ... */
    @SuppressWarnings("unchecked")
    static <T> Map<String, T> options(Object... labelsAndValues) {
        Map<String, T> options = new LinkedHashMap<>();
        for (int i = 0; i < labelsAndValues.length; i += 2) {
            options.put((String) labelsAndValues[i], (T) labelsAndValues[i + 1]);
        }
        return options;
    }

    static String integerRange(long min, long max) {
        return max >= Integer.MAX_VALUE ? "a whole number, at least " + min + " (at most " + max + ")"
                : "a whole number from " + min + " to " + max;
    }

    private static long parseInteger(String key, String v, long min, long max) {
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException notANumber) {
            throw new ConfigException(key, v, integerRange(min, max));
        }
        if (n < min || n > max) throw new ConfigException(key, v, integerRange(min, max));
        return n;
    }

    private static Duration checkMin(String key, String v, Duration d, Duration min) {
        if (d.compareTo(min) < 0) throw new ConfigException(key, v, Durations.ACCEPTED + ", at least " + text(min));
        return d;
    }

    /** {@code 1ms}, {@code 100ms}, {@code 1s}: how the messages spell a bound. */
    static String text(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 && ms > 0 ? (ms / 1000) + "s" : ms + "ms";
    }

    @Override
    public String toString() {
        return "ConfigValues" + values.keySet();
    }
}
