package dev.sluice.metrics;

import java.util.Map;


/**
 * One Sluice instance (one filter or one {@code Sluice} object), registered as
 * {@code dev.sluice:type=RateLimiter,name=<instance>}. All counters count since start and never go
 * down; latency figures cover a recent window (see {@link #getLatencyP99Millis()}).
 *
 * <p>Counted per request: a request is {@code Allowed}, {@code Denied} (429), {@code DryRunDenied}
 * (would have been denied; let through) or {@code ClosedRuleRefusals} (503: Redis away and a rule
 * fails closed). Who answered is counted apart: {@code RedisDecisions} (Redis),
 * {@code DeniedCacheHits} (the denied-client cache, no Redis call) and {@code FallbackDecisions} (the
 * local backstop while Redis was away); they are also counted as allowed or denied.
 */
public interface RateLimiterMXBean {

    /** The instance name in the ObjectName. */
    String getInstanceName();

    /** Requests every rule admitted. */
    long getAllowed();

    /** Requests denied by a rule (status-code, 429 by default) in enforce mode. */
    long getDenied();

    /** Requests a rule would have denied, let through because of {@code mode=dry-run}. */
    long getDryRunDenied();

    /** Requests decided by the local backstop because Redis could not answer (rules with failure-policy open). */
    long getFallbackDecisions();

    /** Requests refused (503) because Redis could not answer and one of their rules has failure-policy closed. */
    long getClosedRuleRefusals();

    /** Redis calls that failed other than by timing out: refused connection, reset, error reply, no pooled connection. */
    long getRedisErrors();

    /** Redis calls that took longer than {@code redis.timeout}. */
    long getRedisTimeouts();

    /**
     * The circuit breakers, one per Redis node, as one state: {@code OPEN} if a node's is open (not
     * called), else {@code HALF_OPEN} if one is probing, else {@code CLOSED} (Redis in use); {@code NONE}
     * for backend=local. Each node's is in {@link #getBreakerStates()}.
     */
    String getBreakerState();

    /**
     * Each Redis node's circuit breaker, by node ({@code host:port}: the server, the master the
     * Sentinels name now, or each master of a Cluster): {@code CLOSED}, {@code OPEN} or
     * {@code HALF_OPEN}. Nodes that left the topology are not shown; empty for backend=local.
     */
    Map<String, String> getBreakerStates();

    /** How often the circuit breaker has opened since start. */
    long getBreakerOpenings();

    /** Requests decided by Redis (a global decision). */
    long getRedisDecisions();

    /**
     * Requests answered from the denied-client cache: a client Redis denied a moment ago, denied again
     * without a Redis call. Also counted in {@code Denied} (or {@code DryRunDenied}).
     */
    long getDeniedCacheHits();

    /**
     * Requests decided on this instance by approximate rules ({@code rule.<name>.sync}), from the
     * fleet's counts at the last sync plus this instance's own since: no Redis call.
     */
    long getApproximateDecisions();

    /** Denials the denied-client cache holds now (at most {@code denied-cache.max-keys}). */
    int getDeniedCacheSize();

    /**
     * Requests whose direct peer was not an IP address (a Unix-socket connector, say): their
     * {@code ip} rules did not apply. Logged once; a rising figure means an {@code ip} rule limits nothing.
     */
    long getNonIpPeers();

    /**
     * Requests a {@code leaky-bucket} rule admitted with a delay but refused at once because this
     * instance held {@code max-held-requests} requests already (what they took was given back).
     */
    long getHeldRefused();

    /** Concurrency slots ({@code algorithm=concurrency}) held now by this instance's requests in flight. */
    int getSlotsHeld();

    /**
     * Concurrency slots whose lease ended before this instance renewed it (it stalled, or Redis was away,
     * for two thirds of the lease): their requests ran on without a slot.
     */
    long getLeasesLost();

    /**
     * Concurrency slots released late: Redis did not answer their release when it was due (an outage, a
     * stall, the node's breaker open), or a decision that may have taken them failed, and answered when it
     * was sent again (each second, until the slot's lease would have ended).
     */
    long getSlotsReleasedLate();

    /**
     * Operation: forgets every denial the denied-client cache remembers, so that every client's next
     * request is decided by Redis. Returns how many were forgotten.
     */
    int clearDeniedCache();

    /**
     * Operation: resets one client of one rule, on this instance and in Redis: its remembered denial,
     * its Redis key and its backstop state are deleted, so its next request starts with a full quota.
     *
     * @param rule      the rule's name
     * @param clientKey the client key as Sluice shows it, e.g. {@code ip=203.0.113.7} or {@code k=customer-42}
     * @return what was done, or why nothing was
     */
    String resetClient(String rule, String clientKey);

    /**
     * Operation: reads the configuration file ({@code config}) again now, as {@code reload} does
     * periodically: a valid change takes effect at once, an invalid one changes nothing. Returns the outcome.
     */
    String reload();

    /** Reloads that changed the configuration. */
    long getReloads();

    /** Reloads refused: an invalid file, a missing one, or a key that cannot change while running. */
    long getReloadFailures();

    /** What the last reload did, or which key it refused and why; {@code none} before the first. */
    String getLastReloadOutcome();

    /** When the last reload was tried, in ms since the epoch; 0 before the first. */
    long getLastReloadTime();

    /** Decisions timed since start. */
    long getDecisions();

    /** Mean decision latency in the recent window, in milliseconds. */
    double getLatencyMeanMillis();

    /** Longest decision in the recent window, in milliseconds. */
    double getLatencyMaxMillis();

    /**
     * 99th percentile of decision latency in the recent window, in milliseconds (at most 12.5% high).
     * The window is the one to two minutes before the read when an agent polls at least once a minute.
     */
    double getLatencyP99Millis();

    /** Decisions in the recent window. */
    long getLatencyWindowCount();
}
