package dev.sluice.internal.http;

import org.greenbytes.http.sfv.IntegerItem;
import org.greenbytes.http.sfv.Item;
import org.greenbytes.http.sfv.ListElement;
import org.greenbytes.http.sfv.OuterList;
import org.greenbytes.http.sfv.Parser;
import org.greenbytes.http.sfv.StringItem;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a {@code RateLimit} or {@code RateLimit-Policy} field as a client would, with a real
 * Structured Fields parser (RFC 8941, whose syntax RFC 9651 keeps for these types), strictly: a
 * List of Items, each a String (the policy's name) with exactly the expected parameters, each a
 * non-negative Integer, and the field already in canonical form (it re-serializes to itself).
 */
final class RateLimitItems {

    private RateLimitItems() {
    }

    /** Policy name to its parameters, in field order. */
    static Map<String, Map<String, Long>> parse(String field, String... parameters) {
        OuterList list = Parser.parseList(field);
        if (!list.serialize().equals(field)) {
            throw new AssertionError("not in canonical form: '" + field + "' (canonical: '" + list.serialize() + "')");
        }
        Map<String, Map<String, Long>> items = new LinkedHashMap<>();
        for (ListElement<?> member : list.get()) {
            if (!(member instanceof StringItem name)) {
                throw new AssertionError("a member that is not a String item in '" + field + "': " + member.serialize());
            }
            if (!member.getParams().keySet().equals(new java.util.LinkedHashSet<>(List.of(parameters)))) {
                throw new AssertionError("parameters " + member.getParams().keySet() + " instead of " + List.of(parameters)
                        + " in '" + field + "'");
            }
            Map<String, Long> values = new LinkedHashMap<>();
            for (String p : parameters) {
                Item<?> value = member.getParams().get(p);
                if (!(value instanceof IntegerItem integer) || integer.getAsLong() < 0) {
                    throw new AssertionError(p + " is not a non-negative Integer in '" + field + "'");
                }
                values.put(p, integer.getAsLong());
            }
            if (items.put(name.get(), values) != null) {
                throw new AssertionError("policy " + name.get() + " twice in '" + field + "'");
            }
        }
        return items;
    }
}
