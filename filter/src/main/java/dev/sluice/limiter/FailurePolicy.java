package dev.sluice.limiter;

/** What a rule does when Redis cannot answer in time. */
public enum FailurePolicy {
    /** Decide with the local, per-instance backstop at the rule's {@code fallback-limit}. */
    OPEN,
    /** Refuse the request with 503 and {@code Retry-After}. */
    CLOSED
}
