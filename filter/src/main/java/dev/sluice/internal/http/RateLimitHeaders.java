package dev.sluice.internal.http;

import dev.sluice.config.SluiceConfig.HeaderStyle;
import dev.sluice.limiter.Decision;
import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;
import jakarta.servlet.http.HttpServletResponse;

import java.util.List;

/**
 * Writes the rate-limit fields of a decision onto a response.
 *
 * <ul>
 *   <li>{@code draft}: the IETF httpapi RateLimit fields (draft -10): {@code RateLimit-Policy:
 *       "api";q=100;w=60} and {@code RateLimit: "api";r=42;t=17}, one list member per rule that
 *       applied, in rule order.</li>
 *   <li>{@code legacy}: {@code X-RateLimit-Limit}, {@code X-RateLimit-Remaining} and
 *       {@code X-RateLimit-Reset} (seconds) of the rule closest to its limit.</li>
 * </ul>
 *
 * <p>A concurrency rule ({@code algorithm=concurrency}) has no window and frees a slot when a request
 * completes, at no time one can promise: its items have no {@code w} and no {@code t}
 * ({@code "exports";q=5}, {@code "exports";r=0}), {@code r} being the slots still free; its legacy
 * {@code X-RateLimit-Reset} is 1 (a hint), as is the {@code Retry-After} of its refusal.
 *
 * <p>{@code t} is, as the draft says, the number of seconds until more quota is available: for a
 * rule that allowed the request, until its {@code r} grows (rounded up, so waiting {@code t}
 * seconds always finds it grown; 0 when the quota is full and cannot grow); for a rule that
 * denied it, the rule's retry-after (at least 1), so {@code Retry-After} is never earlier than
 * any denying rule's {@code t}. The legacy {@code X-RateLimit-Reset} keeps its usual meaning,
 * the seconds until the quota is full again (the window's end, a full bucket), and is the
 * retry-after of a rule that denied.
 */
public final class RateLimitHeaders {

    public static final String POLICY = "RateLimit-Policy";
    public static final String RATE_LIMIT = "RateLimit";
    public static final String LEGACY_LIMIT = "X-RateLimit-Limit";
    public static final String LEGACY_REMAINING = "X-RateLimit-Remaining";
    public static final String LEGACY_RESET = "X-RateLimit-Reset";

    private final HeaderStyle style;

    public RateLimitHeaders(HeaderStyle style) {
        this.style = style;
    }

    /** Whether {@link #write} writes anything ({@code headers} is not {@code none}). */
    public boolean writes() {
        return style != HeaderStyle.NONE;
    }

    /** The policy list member of a rule, e.g. {@code "api";q=100;w=60}; computed once per rule at init. */
    public static String policyItem(Rule rule) {
        return policyItem(rule, rule.windowMillis());
    }

    /**
     * The policy list member of a rule decided in a window of {@code windowMs} (a calendar rule's current
     * window); a concurrency rule's has no {@code w} (it has no window: {@code "exports";q=5}).
     */
    public static String policyItem(Rule rule, long windowMs) {
        if (rule.algorithm().isConcurrency()) return '"' + rule.name() + "\";q=" + rule.limit();
        return '"' + rule.name() + "\";q=" + rule.limit() + ";w=" + ceilSeconds(windowMs);
    }

    /**
     * Writes the fields selected by {@code headers}.
     *
     * @param policyItems the precomputed {@link #policyItem(Rule)} of each decided rule, in decision order
     */
    public void write(HttpServletResponse response, Decision decision, List<String> policyItems) {
        if (style == HeaderStyle.NONE || decision.rules().isEmpty()) {
            return;
        }
        if (style.draft()) {
            List<RuleDecision> rules = decision.rules();
            StringBuilder policy = new StringBuilder(32 * rules.size());
            StringBuilder current = new StringBuilder(32 * rules.size());
            for (int i = 0; i < rules.size(); i++) {
                RuleDecision r = rules.get(i);
                if (i > 0) {
                    policy.append(", ");
                    current.append(", ");
                }
                policy.append(policyItems.get(i));
                current.append('"').append(r.rule().name()).append("\";r=").append(r.remaining());
                // a concurrency rule's slot frees when a request completes: no time to promise
                if (!r.rule().algorithm().isConcurrency()) current.append(";t=").append(nextSeconds(r));
            }
            response.setHeader(POLICY, policy.toString());
            response.setHeader(RATE_LIMIT, current.toString());
        }
        if (style.legacy()) {
            RuleDecision closest = decision.closest();
            response.setHeader(LEGACY_LIMIT, Long.toString(closest.rule().limit()));
            response.setHeader(LEGACY_REMAINING, Long.toString(closest.remaining()));
            response.setHeader(LEGACY_RESET, Long.toString(resetSeconds(closest)));
        }
    }

    /** The {@code t} of a rule: its retry-after (at least 1 s) when it denied, else the time until more quota. */
    public static long nextSeconds(RuleDecision r) {
        return r.allowed() ? ceilSeconds(r.nextMs()) : retryAfterSeconds(r.retryAfterMs());
    }

    /** {@code X-RateLimit-Reset}: the rule's retry-after (at least 1 s) when it denied, else the time to a full quota. */
    public static long resetSeconds(RuleDecision r) {
        return r.allowed() ? ceilSeconds(r.resetMs()) : retryAfterSeconds(r.retryAfterMs());
    }

    /** {@code Retry-After} for a wait of {@code millis}: whole seconds, rounded up, at least 1. */
    public static long retryAfterSeconds(long millis) {
        return Math.max(1, ceilSeconds(millis));
    }

    static long ceilSeconds(long millis) {
        return millis <= 0 ? 0 : (millis + 999) / 1000;
    }
}
