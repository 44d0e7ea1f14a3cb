package dev.sluice.it.support;

import org.greenbytes.http.sfv.IntegerItem;
import org.greenbytes.http.sfv.ListElement;
import org.greenbytes.http.sfv.OuterList;
import org.greenbytes.http.sfv.Parser;
import org.greenbytes.http.sfv.StringItem;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.Set;

/**
 * Reads the IETF {@code RateLimit} and {@code RateLimit-Policy} fields of a response as a client
 * would, with a real Structured Fields parser (RFC 8941; RFC 9651 keeps its syntax for these
 * types), strictly: Lists of String Items with exactly their Integer parameters, in canonical form.
 */
public final class RateLimitField {

    private RateLimitField() {
    }

    /** {@code r} and {@code t} of the rule's item in the {@code RateLimit} field (the policy field is checked too). */
    public static long[] item(HttpResponse<String> response, String rule) {
        response.headers().firstValue("RateLimit-Policy").ifPresent(policy -> find(policy, null, "q", "w"));
        return find(field(response, "RateLimit"), rule, "r", "t");
    }

    /** {@code q} and {@code w} of the rule's item in the {@code RateLimit-Policy} field. */
    public static long[] policy(HttpResponse<String> response, String rule) {
        return find(field(response, "RateLimit-Policy"), rule, "q", "w");
    }

    private static String field(HttpResponse<String> response, String name) {
        return response.headers().firstValue(name).orElseThrow(() ->
                new AssertionError("no " + name + " field in " + response.headers().map()));
    }

    /** The two parameters of {@code rule}'s member (null: just check every member), failing on anything malformed. */
    private static long[] find(String field, String rule, String first, String second) {
        OuterList list = Parser.parseList(field);
        if (!list.serialize().equals(field)) {
            throw new AssertionError("not in canonical form: '" + field + "'");
        }
        long[] found = null;
        for (ListElement<?> member : list.get()) {
            if (!(member instanceof StringItem name) || !member.getParams().keySet().equals(Set.of(first, second))) {
                throw new AssertionError("not a String item with " + first + " and " + second + ": " + member.serialize()
                        + " in '" + field + "'");
            }
            long[] values = new long[2];
            List<String> keys = List.of(first, second);
            for (int i = 0; i < 2; i++) {
                if (!(member.getParams().get(keys.get(i)) instanceof IntegerItem n) || n.getAsLong() < 0) {
                    throw new AssertionError(keys.get(i) + " is not a non-negative Integer in '" + field + "'");
                }
                values[i] = n.getAsLong();
            }
            if (name.get().equals(rule)) found = values;
        }
        if (rule != null && found == null) throw new AssertionError("no item for " + rule + " in '" + field + "'");
        return found;
    }
}
