package dev.sluice.dist;

import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the IETF {@code RateLimit} field of a response, as a client would (as in src-it). */
final class RateLimitField {

    private static final Pattern ITEM = Pattern.compile("\"(\\w+)\";r=(\\d+);t=(\\d+)");

    private RateLimitField() {
    }

    /** {@code r} and {@code t} of the rule's item in the {@code RateLimit} field. */
    static long[] item(HttpResponse<String> response, String rule) {
        String field = response.headers().firstValue("RateLimit").orElseThrow(() ->
                new AssertionError("no RateLimit field in " + response.headers().map()));
        Matcher m = ITEM.matcher(field);
        while (m.find()) {
            if (m.group(1).equals(rule)) {
                return new long[]{Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
            }
        }
        throw new AssertionError("no item for " + rule + " in RateLimit: " + field);
    }
}
