package dev.sluice.internal.http;

import dev.sluice.limiter.Decision;
import dev.sluice.limiter.RuleDecision;

import java.util.List;

/**
 * The {@code application/problem+json} body (RFC 9457) of a denied request, of the RateLimit
 * draft's {@code quota-exceeded} type, naming the violated rules in {@code violated-policies}.
 * Rule names are restricted by configuration to {@code [A-Za-z0-9_-]}, so they need no escaping.
 */
public final class QuotaExceededProblem {

    public static final String CONTENT_TYPE = "application/problem+json";
    public static final String TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";
    public static final String TITLE = "Request cannot be satisfied as assigned quota has been exceeded";

    private QuotaExceededProblem() {
    }

    /** The body for a denied decision answered with {@code status} after {@code retryAfterSeconds}. */
    public static String body(Decision decision, int status, long retryAfterSeconds) {
        return body(decision.violated(), status, retryAfterSeconds);
    }

    /** The body naming {@code violated} as the rules that refused, answered with {@code status} after {@code retryAfterSeconds}. */
    public static String body(List<RuleDecision> violated, int status, long retryAfterSeconds) {
        StringBuilder names = new StringBuilder();
        StringBuilder list = new StringBuilder();
        for (RuleDecision r : violated) {
            if (names.length() > 0) {
                names.append(", ");
                list.append(',');
            }
            names.append(r.rule().name());
            list.append('"').append(r.rule().name()).append('"');
        }
        return "{\"type\":\"" + TYPE + "\","
                + "\"title\":\"" + TITLE + "\","
                + "\"status\":" + status + ","
                + "\"detail\":\"Rate limit exceeded for " + names + "; retry after " + retryAfterSeconds + " s\","
                + "\"violated-policies\":[" + list + "],"
                + "\"retry-after\":" + retryAfterSeconds + "}";
    }

    /** The body of a 503 when a {@code closed} rule could not reach Redis. */
    public static String unavailableBody(Decision decision, long retryAfterSeconds) {
        StringBuilder list = new StringBuilder();
        for (RuleDecision r : decision.rules()) {
            if (r.source() == RuleDecision.Source.UNAVAILABLE) {
                if (list.length() > 0) list.append(',');
                list.append('"').append(r.rule().name()).append('"');
            }
        }
        return "{\"type\":\"about:blank\","
                + "\"title\":\"Service Unavailable\","
                + "\"status\":503,"
                + "\"detail\":\"The rate limiter cannot reach its store and these rules fail closed\","
                + "\"unavailable-policies\":[" + list + "],"
                + "\"retry-after\":" + retryAfterSeconds + "}";
    }

    /** The body of a 503 for a request held for its leaky-bucket slot that never reached the application. */
    public static String heldNotServedBody(String detail, long retryAfterSeconds) {
        return "{\"type\":\"about:blank\","
                + "\"title\":\"Service Unavailable\","
                + "\"status\":503,"
                + "\"detail\":\"" + detail + "\","
                + "\"retry-after\":" + retryAfterSeconds + "}";
    }
}
