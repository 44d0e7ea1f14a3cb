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
 * A rate's item has both ({@code "api";r=42;t=17}, {@code "api";q=100;w=60}); a concurrency rule's
 * has the first alone ({@code "exports";r=0}, {@code "exports";q=5}): a slot frees when a request
 * completes, at no time one could promise.
 */
public final class RateLimitField {

    /** What {@link #find} gives as the second parameter of an item without it. */
    private static final long ABSENT = -1;

    private RateLimitField() {
    }

    /** {@code r} and {@code t} of the rule's item in the {@code RateLimit} field (the policy field is checked too). */
    public static long[] item(HttpResponse<String> response, String rule) {
        response.headers().firstValue("RateLimit-Policy").ifPresent(policy -> find(policy, null, "q", "w"));
        return rate(find(field(response, "RateLimit"), rule, "r", "t"), rule, "t");
    }

    /** {@code q} and {@code w} of the rule's item in the {@code RateLimit-Policy} field. */
    public static long[] policy(HttpResponse<String> response, String rule) {
        return rate(find(field(response, "RateLimit-Policy"), rule, "q", "w"), rule, "w");
    }

    /**
     * {@code r} of a concurrency rule's item in the {@code RateLimit} field: the slots still free after
     * this request. Its items have no {@code t} and no {@code w}.
     */
    public static long freeSlots(HttpResponse<String> response, String rule) {
        long[] policy = find(field(response, "RateLimit-Policy"), rule, "q", "w");
        long[] item = find(field(response, "RateLimit"), rule, "r", "t");
        if (policy[1] != ABSENT || item[1] != ABSENT) {
            throw new AssertionError(rule + " is not a concurrency rule's item: " + response.headers().map());
        }
        return item[0];
    }

    private static long[] rate(long[] values, String rule, String second) {
        if (values[1] == ABSENT) throw new AssertionError("no " + second + " in " + rule + "'s item: a concurrency rule's?");
        return values;
    }

    private static String field(HttpResponse<String> response, String name) {
        return response.headers().firstValue(name).orElseThrow(() ->
                new AssertionError("no " + name + " field in " + response.headers().map()));
    }

    /**
     * The two parameters of {@code rule}'s member (null: just check every member), the second
     * {@link #ABSENT} in a concurrency rule's member, failing on anything malformed.
     */
    private static long[] find(String field, String rule, String first, String second) {
        OuterList list = Parser.parseList(field);
        if (!list.serialize().equals(field)) {
            throw new AssertionError("not in canonical form: '" + field + "'");
        }
        long[] found = null;
        for (ListElement<?> member : list.get()) {
            Set<String> params = member.getParams().keySet();
            boolean rate = params.equals(Set.of(first, second));
            if (!(member instanceof StringItem name) || !rate && !params.equals(Set.of(first))) {
                throw new AssertionError("not a String item with " + first + " and " + second + ", or " + first + " alone: "
                        + member.serialize() + " in '" + field + "'");
            }
            long[] values = {ABSENT, ABSENT};
            List<String> keys = List.of(first, second);
            for (int i = 0; i < params.size(); i++) {
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
