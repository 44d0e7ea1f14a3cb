package dev.sluice.internal.algorithm;

import dev.sluice.limiter.Rule;
import dev.sluice.limiter.RuleDecision;

/**
 * What one rule says about one request, before the engine knows whether the other rules of
 * the request admit it too. It carries both outcomes of an admitting rule: the figures after
 * taking the cost, and the figures when the request is denied by another rule and nothing is
 * taken. The Lua script returns the same figures per rule.
 */
public final class Verdict {

    private final boolean allowed;
    private final long remainingNow;
    private final long resetNowMs;
    private final long nextNowMs;
    private final long remainingAfter;
    private final long resetAfterMs;
    private final long nextAfterMs;
    private final long delayMs;
    private final long retryAfterMs;
    private final long takenMs;
    private final long takenFraction;
    private final long takenGivenBack;
    /** The length of the window decided in, for a calendar rule; 0: the rule's window. */
    private final long windowMs;

    private Verdict(boolean allowed, long remainingNow, long resetNowMs, long nextNowMs, long remainingAfter,
                    long resetAfterMs, long nextAfterMs, long delayMs, long retryAfterMs, long takenMs, long takenFraction,
                    long takenGivenBack, long windowMs) {
        this.allowed = allowed;
        this.windowMs = windowMs;
        this.remainingNow = remainingNow;
        this.resetNowMs = resetNowMs;
        this.nextNowMs = nextNowMs;
        this.remainingAfter = remainingAfter;
        this.resetAfterMs = resetAfterMs;
        this.nextAfterMs = nextAfterMs;
        this.delayMs = delayMs;
        this.retryAfterMs = retryAfterMs;
        this.takenMs = takenMs;
        this.takenFraction = takenFraction;
        this.takenGivenBack = takenGivenBack;
    }

    /**
     * An admitting rule: remaining, reset and next (the time until remaining grows, 0 when it
     * cannot) when nothing is taken, then the same after taking the cost, the delay, and what
     * identifies the take in the state ({@link RuleDecision.Take}, for a give-back).
     */
    static Verdict admit(long remainingNow, long resetNowMs, long nextNowMs, long remainingAfter, long resetAfterMs,
                         long nextAfterMs, long delayMs, long takenMs, long takenFraction, long takenGivenBack) {
        return new Verdict(true, remainingNow, resetNowMs, nextNowMs, remainingAfter, resetAfterMs, nextAfterMs, delayMs, 0,
                takenMs, takenFraction, takenGivenBack, 0);
    }

    static Verdict deny(long remainingNow, long resetNowMs, long retryAfterMs) {
        return new Verdict(false, remainingNow, resetNowMs, retryAfterMs, 0, 0, 0, 0, retryAfterMs, 0, 0, 0, 0);
    }

    /** This verdict, decided in a calendar window of {@code lengthMs} (the rule's window varies). */
    Verdict inWindow(long lengthMs) {
        return new Verdict(allowed, remainingNow, resetNowMs, nextNowMs, remainingAfter, resetAfterMs, nextAfterMs, delayMs,
                retryAfterMs, takenMs, takenFraction, takenGivenBack, lengthMs);
    }

    /** Whether this rule admits the request. */
    public boolean allowed() {
        return allowed;
    }

    /**
     * This rule's part of the request's decision.
     *
     * @param taken whether the request was admitted by all its rules, so this rule took its cost
     */
    public RuleDecision decision(Rule rule, boolean taken, RuleDecision.Source source) {
        return decision(rule, taken, source, 0);
    }

    /** {@link #decision(Rule, boolean, RuleDecision.Source)}, the take (if any) named {@code token}. */
    public RuleDecision decision(Rule rule, boolean taken, RuleDecision.Source source, long token) {
        long window = windowMs != 0 ? windowMs : rule.windowMillis();
        if (taken) {
            return new RuleDecision(rule, true, remainingAfter, 0, resetAfterMs, nextAfterMs, delayMs,
                    new RuleDecision.Take(takenMs, takenFraction, takenGivenBack, token), source, window);
        }
        return new RuleDecision(rule, allowed, remainingNow, allowed ? 0 : retryAfterMs, resetNowMs, nextNowMs, 0, null,
                source, window);
    }

    @Override
    public String toString() {
        return allowed
                ? "admit{now=" + remainingNow + "/" + resetNowMs + "ms/next " + nextNowMs + "ms, after=" + remainingAfter
                        + "/" + resetAfterMs + "ms/next " + nextAfterMs + "ms, delay=" + delayMs + "ms}"
                : "deny{now=" + remainingNow + "/" + resetNowMs + "ms, retry=" + retryAfterMs + "ms}";
    }
}
