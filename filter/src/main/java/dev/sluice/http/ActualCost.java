package dev.sluice.http;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.util.Objects;

/**
 * Where the application states what a request really cost ({@code rule.<name>.actual-cost}), by the
 * time its response completes: a response header ({@code response-header:X-Tokens-Used}) or a
 * request attribute ({@code attr:tokens}). The value is a whole number, 0 or more: a header's text, or
 * an attribute's {@link Number} (integral) or text.
 *
 * @param fromHeader whether the cost is a response header's value (else a request attribute's)
 * @param name       the header's or the attribute's name
 * @param max        the most a request is settled at ({@code rule.<name>.max-actual-cost}): a cost stated
 *                   above it counts as this much; {@link Long#MAX_VALUE} for no bound but the algorithm's
 */
public record ActualCost(boolean fromHeader, String name, long max) {

    /** What {@code rule.<name>.actual-cost} accepts, for messages. */
    public static final String ACCEPTED = "response-header:NAME (a response header the application sets) or attr:NAME"
            + " (a request attribute), holding a whole number, 0 or more";

    /** What {@link #read} answers when the application stated no usable cost. */
    public static final long NONE = -1;

    public ActualCost {
        Objects.requireNonNull(name, "name");
        if (max < 1) throw new IllegalArgumentException("a bound on a cost is 1 or more, not " + max);
    }

    /** From {@code fromHeader} or an attribute called {@code name}, with no bound but the algorithm's. */
    public ActualCost(boolean fromHeader, String name) {
        this(fromHeader, name, Long.MAX_VALUE);
    }

    /** This source, a stated cost above {@code max} counting as {@code max}. */
    public ActualCost withMax(long max) {
        return new ActualCost(fromHeader, name, max);
    }

    /**
     * @throws IllegalArgumentException when {@code source} is neither form, or names nothing
     */
    public static ActualCost parse(String source) {
        String s = source.strip();
        int colon = s.indexOf(':');
        String kind = colon < 0 ? s : s.substring(0, colon);
        String name = colon < 0 ? "" : s.substring(colon + 1).strip();
        boolean header = kind.equalsIgnoreCase("response-header");
        if (!header && !kind.equalsIgnoreCase("attr")) {
            throw new IllegalArgumentException("'" + s + "' is not a source of a cost; " + ACCEPTED
                    + (kind.equalsIgnoreCase("header") ? " (header: would be a request header, which the client sets)" : ""));
        }
        if (name.isEmpty()) throw new IllegalArgumentException("'" + s + "' names no " + (header ? "header" : "attribute")
                + "; " + ACCEPTED);
        if (header && !name.chars().allMatch(c -> c > 32 && c < 127 && "()<>@,;:\\\"/[]?={}".indexOf(c) < 0)) {
            throw new IllegalArgumentException("'" + name + "' is not a header name; " + ACCEPTED);
        }
        return new ActualCost(header, name);
    }

    /**
     * The cost the application stated for this request ({@link Long#MAX_VALUE} for a whole number beyond
     * it), or {@link #NONE} when it stated none, or something that is not a whole number of 0 or more (a
     * negative number, a fraction, text).
     */
    public long read(HttpServletRequest request, HttpServletResponse response) {
        Object value = fromHeader ? response.getHeader(name) : request.getAttribute(name);
        if (value == null) return NONE;
        if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            long n = ((Number) value).longValue();
            return n < 0 ? NONE : n;
        }
        String text = value.toString().strip();
        if (text.isEmpty()) return NONE;
        long n = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') return NONE;
            // a whole number beyond Long.MAX_VALUE is still one, and more than any bound: Long.MAX_VALUE
            n = n > (Long.MAX_VALUE - (c - '0')) / 10 ? Long.MAX_VALUE : n * 10 + (c - '0');
        }
        return n;
    }

    @Override
    public String toString() {
        return (fromHeader ? "response-header:" : "attr:") + name;
    }
}
