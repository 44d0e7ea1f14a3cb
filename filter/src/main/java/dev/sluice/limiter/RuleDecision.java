package dev.sluice.limiter;

import java.time.Duration;

/**
 * The outcome of one rule for one request.
 *
 * @param rule         the rule
 * @param allowed      whether this rule admits the request
 * @param remaining    tokens left after this request (never negative)
 * @param retryAfterMs when denied: milliseconds until a request of the same cost would be admitted; 0 when allowed
 * @param resetMs      milliseconds until the rule's quota is fully restored (the window's end, a full bucket)
 * @param nextMs       milliseconds until the rule gives more: when allowed, until {@code remaining} grows if nothing
 *                     else is taken (0 when it cannot grow by waiting: the quota is full); when denied, the
 *                     {@code retryAfterMs}. The {@code t} of the draft RateLimit field, rounded up to seconds
 * @param delayMs      leaky-bucket only: how long an admitted request must wait for its drain slot; else 0
 * @param take         what this rule took from the client's state, for {@link RateLimiter#giveBack}; {@code null}
 *                     when it took nothing (denied, or the request was denied by another rule; {@link #taken()})
 * @param source       who decided
 * @param windowMs     the length of the window decided in: the rule's window, but for a calendar rule
 *                     ({@link Rule#calendar()}) the current calendar window's (a day of 23 hours across a
 *                     daylight-saving change, a February of 28 days); the {@code w} of the draft RateLimit-Policy field
 */
public record RuleDecision(Rule rule, boolean allowed, long remaining, long retryAfterMs, long resetMs,
                           long nextMs, long delayMs, Take take, Source source, long windowMs) {

    /**
     * What a rule took from a client's state, as the engine that decided recorded it: what
     * {@link RateLimiter#giveBack} needs to find the take again. The figures are that engine's and
     * algorithm's (docs/algorithms.md, "Giving back"); hand them back as they came.
     *
     * @param ms        a moment identifying the take, in ms since the epoch on the deciding engine's clock: the
     *                  end of the window it was counted in (fixed-window, sliding-window-counter), the time it
     *                  was logged at (sliding-window-log), or the moment the bucket would have been full again
     *                  had nothing else been taken (token-bucket, gcra, leaky-bucket)
     * @param fraction  the buckets only: the sub-millisecond part of {@code ms}, in 1/limit ms; else 0
     * @param givenBack the buckets only: what the client's bucket had given back so far when the request took
     *                  (an engine's counter); else 0
     * @param token     this take's own number (random), with which Redis applies its give-back once only,
     *                  however often the call is sent (a retry after a dropped connection, a cluster
     *                  redirect); 0 from an engine that needs none (the local engine)
     */
    public record Take(long ms, long fraction, long givenBack, long token) {

        /** A take without a token (the local engine's). */
        public Take(long ms, long fraction, long givenBack) {
            this(ms, fraction, givenBack, 0);
        }

        /** Takes are equal when their figures are: the token names one take, it is not a figure of it. */
        @Override
        public boolean equals(Object o) {
            return o instanceof Take t && t.ms == ms && t.fraction == fraction && t.givenBack == givenBack;
        }

        @Override
        public int hashCode() {
            return Long.hashCode(ms) * 31 * 31 + Long.hashCode(fraction) * 31 + Long.hashCode(givenBack);
        }
    }

    /** Who made a decision. */
    public enum Source {
        /** The shared Redis: a global decision. */
        REDIS,
        /**
         * A denial Redis gave this client a moment ago, answered again from this instance's denied-client
         * cache without a Redis call (the figures are Redis's, the waits shortened by the time since).
         */
        CACHE,
        /**
         * The approximate mode ({@code rule.<name>.sync}): this instance, from the fleet's counts as of its
         * last sync plus its own since, without a Redis call.
         */
        APPROXIMATE,
        /** The in-process engine of {@code backend=local}: a per-instance decision by design. */
        LOCAL,
        /** The local backstop of an {@code open} rule, at its {@code fallback-limit}, while Redis is away. */
        BACKSTOP,
        /**
         * Redis was away and the request has a {@code closed} rule: that rule refuses it without counting
         * ({@code allowed=false}, {@code retryAfterMs} until Redis is tried again); the request's other
         * rules were not evaluated and took nothing ({@code allowed=true}, figures 0).
         */
        UNAVAILABLE
    }

    public RuleDecision {
        if (remaining < 0) remaining = 0;
        if (retryAfterMs < 0) retryAfterMs = 0;
        if (resetMs < 0) resetMs = 0;
        if (nextMs < 0) nextMs = 0;
        if (delayMs < 0) delayMs = 0;
    }

    /** A decision in the rule's own window ({@link Rule#windowMillis()}). */
    public RuleDecision(Rule rule, boolean allowed, long remaining, long retryAfterMs, long resetMs, long nextMs,
                        long delayMs, Take take, Source source) {
        this(rule, allowed, remaining, retryAfterMs, resetMs, nextMs, delayMs, take, source, rule.windowMillis());
    }

    /** A decision that took nothing, or whose take is not recorded (a test double, a decision from memory). */
    public RuleDecision(Rule rule, boolean allowed, long remaining, long retryAfterMs, long resetMs, long nextMs,
                        long delayMs, Source source) {
        this(rule, allowed, remaining, retryAfterMs, resetMs, nextMs, delayMs, null, source);
    }

    /** Whether this rule took the request's cost (what {@link RateLimiter#giveBack} can give back). */
    public boolean taken() {
        return take != null;
    }

    /** When denied: how long until a request of the same cost would be admitted; else zero. */
    public Duration retryAfter() {
        return Duration.ofMillis(retryAfterMs);
    }

    /** How long until the rule's quota is fully restored (the window's end, a full bucket). */
    public Duration reset() {
        return Duration.ofMillis(resetMs);
    }

    /** Leaky-bucket only: how long an admitted request must wait for its drain slot; else zero. */
    public Duration delay() {
        return Duration.ofMillis(delayMs);
    }

    /**
     * A decision made without an algorithm's figures (a refusal for want of Redis, a test double):
     * {@code nextMs} is taken as the retry-after when denied and as {@code resetMs} when allowed
     * (more quota is available at the latest when it is full again).
     */
    public RuleDecision(Rule rule, boolean allowed, long remaining, long retryAfterMs, long resetMs, long delayMs,
                        Source source) {
        this(rule, allowed, remaining, retryAfterMs, resetMs, allowed ? resetMs : retryAfterMs, delayMs, source);
    }

    public RuleDecision withSource(Source newSource) {
        return new RuleDecision(rule, allowed, remaining, retryAfterMs, resetMs, nextMs, delayMs, take, newSource, windowMs);
    }

    /** How close this rule is to its limit: the smaller, the closer. Used to pick the headers' rule. */
    double headroom() {
        long quota = Math.max(1, rule.burst());
        return allowed ? (double) remaining / quota : -1.0 - retryAfterMs;
    }
}
