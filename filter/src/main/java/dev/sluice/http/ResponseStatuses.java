package dev.sluice.http;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * A set of HTTP response statuses ({@code rule.<name>.count}): single statuses ({@code 401}) and
 * classes ({@code 4xx}), e.g. {@code 401, 403} or {@code 4xx, 5xx}. Immutable; {@link #contains}
 * is one bit lookup.
 */
public final class ResponseStatuses {

    static final String ACCEPTED = "comma-separated statuses from 100 to 599 or classes 1xx to 5xx, e.g. 401, 403 or 4xx, 5xx";

    private final BitSet statuses;
    private final List<String> entries;

    private ResponseStatuses(BitSet statuses, List<String> entries) {
        this.statuses = statuses;
        this.entries = entries;
    }

    /**
     * @throws IllegalArgumentException naming the entry that is not a status or a class
     */
    public static ResponseStatuses parse(List<String> entries) {
        BitSet set = new BitSet(600);
        List<String> kept = new ArrayList<>();
        for (String raw : entries) {
            String e = raw.strip();
            if (e.isEmpty()) continue;
            if (e.length() == 3 && (e.endsWith("xx") || e.endsWith("XX")) && e.charAt(0) >= '1' && e.charAt(0) <= '5') {
                int base = (e.charAt(0) - '0') * 100;
                set.set(base, base + 100);
            } else {
                int status;
                try {
                    status = Integer.parseInt(e);
                } catch (NumberFormatException notANumber) {
                    throw new IllegalArgumentException("'" + e + "' is not a status or a class; " + ACCEPTED);
                }
                if (status < 100 || status > 599) {
                    throw new IllegalArgumentException("'" + e + "' is not a status from 100 to 599; " + ACCEPTED);
                }
                set.set(status);
            }
            kept.add(e.toLowerCase(java.util.Locale.ROOT));
        }
        if (kept.isEmpty()) throw new IllegalArgumentException("no status given; " + ACCEPTED);
        return new ResponseStatuses(set, List.copyOf(kept));
    }

    /** Whether {@code status} is in the set. */
    public boolean contains(int status) {
        return status >= 0 && statuses.get(status);
    }

    /** The entries as configured. */
    public List<String> entries() {
        return entries;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ResponseStatuses other && statuses.equals(other.statuses);
    }

    @Override
    public int hashCode() {
        return statuses.hashCode();
    }

    @Override
    public String toString() {
        return String.join(", ", entries);
    }
}
