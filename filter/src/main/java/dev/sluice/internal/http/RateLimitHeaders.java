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
     * What the fields show of one rule that no request changes, as text computed once per rule (the
     * rule's own or one plan's figures): a request then only formats its own figures.
     */
    public static class RuleFields {
        private final Rule rule;
        /** The rule as the backstop enforces it while Redis is away, made once. */
        private final Rule fallback;
        private final String policyItem;
        private final String fallbackPolicyItem;
        /** The start of its {@code RateLimit} list member: {@code "api";r=}. */
        private final String remainingPrefix;
        private final String limit;
        private final String fallbackLimit;

        public RuleFields(Rule rule) {
            this.rule = rule;
            this.fallback = rule.asFallback();
            this.policyItem = RateLimitHeaders.policyItem(rule);
            this.fallbackPolicyItem = RateLimitHeaders.policyItem(fallback);
            this.remainingPrefix = '"' + rule.name() + "\";r=";
            this.limit = Long.toString(rule.limit());
            this.fallbackLimit = Long.toString(fallback.limit());
        }

        /** {@code X-RateLimit-Limit}: the limit the decision was made under (the backstop's while Redis is away). */
        String limit(RuleDecision decided) {
            return decided.source() == RuleDecision.Source.BACKSTOP ? fallbackLimit : limit;
        }

        public Rule rule() {
            return rule;
        }

        /**
         * The policy the decision was made under: the backstop's while Redis is away; a calendar
         * rule's in the window it was decided in (its {@code w} is that window's).
         */
        public String policyItem(RuleDecision decided) {
            boolean backstop = decided.source() == RuleDecision.Source.BACKSTOP;
            if (rule.calendar() != null) {
                return RateLimitHeaders.policyItem(backstop ? fallback : rule, decided.windowMs());
            }
            return backstop ? fallbackPolicyItem : policyItem;
        }

        /** Its {@code RateLimit} list member, e.g. {@code "api";r=42;t=17}: one string, sized once. */
        String current(RuleDecision r) {
            // a concurrency rule's slot frees when a request completes: no time to promise
            return rule.algorithm().isConcurrency() ? remainingPrefix + r.remaining()
                    : remainingPrefix + r.remaining() + ";t=" + nextSeconds(r);
        }
    }

    /** Writes the fields selected by {@code headers} for the decision of one rule, decided with {@code fields}. */
    public void write(HttpServletResponse response, Decision decision, RuleFields fields) {
        if (style == HeaderStyle.NONE || decision.rules().isEmpty()) {
            return;
        }
        RuleDecision r = decision.rules().get(0);
        if (style.draft()) {
            response.setHeader(POLICY, fields.policyItem(r));
            response.setHeader(RATE_LIMIT, fields.current(r));
        }
        if (style.legacy()) {
            legacy(response, r, fields);
        }
    }

    /**
     * Writes the fields selected by {@code headers}.
     *
     * @param fields the {@link RuleFields} of each decided rule (the figures it was decided with), in decision order
     */
    public void write(HttpServletResponse response, Decision decision, List<? extends RuleFields> fields) {
        List<RuleDecision> rules = decision.rules();
        int n = rules.size();
        if (style == HeaderStyle.NONE || n == 0) {
            return;
        }
        if (style.draft()) {
            if (n == 1) {
                RuleDecision r = rules.get(0);
                response.setHeader(POLICY, fields.get(0).policyItem(r));
                response.setHeader(RATE_LIMIT, fields.get(0).current(r));
            } else {
                StringBuilder policy = new StringBuilder(32 * n);
                StringBuilder current = new StringBuilder(32 * n);
                for (int i = 0; i < n; i++) {
                    if (i > 0) {
                        policy.append(", ");
                        current.append(", ");
                    }
                    policy.append(fields.get(i).policyItem(rules.get(i)));
                    current.append(fields.get(i).current(rules.get(i)));
                }
                response.setHeader(POLICY, policy.toString());
                response.setHeader(RATE_LIMIT, current.toString());
            }
        }
        if (style.legacy()) {
            RuleDecision closest = decision.closest();
            int at = 0;
            while (rules.get(at) != closest) at++;
            legacy(response, closest, fields.get(at));
        }
    }

    /** The legacy fields, of the rule closest to its limit. */
    private static void legacy(HttpServletResponse response, RuleDecision closest, RuleFields fields) {
        response.setHeader(LEGACY_LIMIT, fields.limit(closest));
        response.setHeader(LEGACY_REMAINING, decimal(closest.remaining()));
        response.setHeader(LEGACY_RESET, decimal(resetSeconds(closest)));
    }

    /** The decimal text of the numbers most fields show (a small limit, a reset in seconds), made once. */
    private static final String[] SMALL = new String[256];

    static {
        for (int i = 0; i < SMALL.length; i++) SMALL[i] = Integer.toString(i);
    }

    /** {@code n} in decimal: {@link Long#toString(long)}, without a new string for a small number. */
    public static String decimal(long n) {
        return n >= 0 && n < SMALL.length ? SMALL[(int) n] : Long.toString(n);
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
