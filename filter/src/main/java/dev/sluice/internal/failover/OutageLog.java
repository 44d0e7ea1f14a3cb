package dev.sluice.internal.failover;

import dev.sluice.limiter.Clock;
import org.slf4j.Logger;

import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Logs Redis outages by state change, never per request: one WARN when Redis is lost (with the
 * cause, never a secret) and one INFO when it answers again (with how long it was away and how many
 * decisions the failure policy made meanwhile).
 *
 * <p>A flapping Redis would still produce a pair of lines per flap, so WARNs are rate-limited to one
 * per {@code quietMillis}: an outage that starts within the quiet period of the last WARN is not
 * announced at once (nor its end), but counted; if it is still going on when the quiet period ends
 * it is announced then (checked on the fallback path, one volatile read per decision). The next WARN
 * says how many outages went unannounced.
 *
 * <p>During an outage the counting is a {@link LongAdder} increment per decision.
 */
final class OutageLog {

    static final long DEFAULT_QUIET_MILLIS = 30_000;

    /** {@code redis://user:secret@host} and {@code :secret@} in any message become {@code ****@}. */
    private static final Pattern CREDENTIALS_IN_URL = Pattern.compile("(?i)(rediss?://)[^@/\\s]*@");

    private final Logger log;
    private final Supplier<String> instance;
    private final String target;
    private final Clock clock;
    private final long quietMillis;

    private volatile boolean down;
    private volatile boolean announced;
    private final LongAdder fellBack = new LongAdder();
    private final LongAdder refused = new LongAdder();

    // guarded by this
    private long downSince;
    private long lastWarnAt;
    private boolean everWarned;
    private Throwable cause;
    private int unannouncedOutages;
    private long unannouncedDecisions;

    /**
     * @param instance the Sluice instance's name ({@code shop/sluice}), read when a line is written
     * @param target   the Redis the outage is of, without secrets
     */
    OutageLog(Logger log, Supplier<String> instance, String target, Clock clock, long quietMillis) {
        this.log = log;
        this.instance = instance;
        this.target = target;
        this.clock = clock;
        this.quietMillis = quietMillis;
    }

    boolean down() {
        return down;
    }

    /** A Redis call failed. The first failure of an outage starts it: then this returns true. */
    boolean failed(Throwable failure) {
        if (down) return false;
        Runnable line;
        synchronized (this) {
            if (down) return false;
            long now = clock.millis();
            downSince = now;
            cause = failure;
            fellBack.reset();
            refused.reset();
            announced = false;
            down = true;
            line = announceIfQuiet(now);
        }
        line.run();
        return true;
    }

    /** A decision was made by the local backstop. */
    void fellBack() {
        fellBack.increment();
        if (!announced) announceLate();
    }

    /** A closed rule refused a request. */
    void refused() {
        refused.increment();
        if (!announced) announceLate();
    }

    /** Redis answered with the breaker closed: the outage, if any, is over; true for the call that ends it. */
    boolean recovered() {
        if (!down) return false;
        long tookMillis;
        long localDecisions;
        long refusals;
        synchronized (this) {
            if (!down) return false;
            down = false;
            cause = null;
            localDecisions = fellBack.sum();
            refusals = refused.sum();
            tookMillis = clock.millis() - downSince;
            if (!announced) {
                unannouncedOutages++;
                unannouncedDecisions += localDecisions + refusals;
                return true;
            }
        }
        log.info("Sluice [{}]: Redis {} answers again after {} ms; during the outage {} decisions used the local "
                        + "backstop (failure-policy open) and {} were refused (failure-policy closed)",
                instance.get(), target, tookMillis, localDecisions, refusals);
        return true;
    }

    private void announceLate() {
        if (!down) return;
        Runnable line;
        synchronized (this) {
            if (!down || announced) return;
            line = announceIfQuiet(clock.millis());
        }
        line.run();
    }

    /**
     * Marks the outage announced if no WARN was logged within the quiet period, and returns the logging
     * to do once the lock is released (writing a log line can be slow; other callers must not wait for it).
     */
    // guarded by this
    private Runnable announceIfQuiet(long now) {
        if (everWarned && now - lastWarnAt < quietMillis) return () -> { };
        String since = now == downSince ? "" : " since " + (now - downSince) + " ms";
        String earlier = unannouncedOutages == 0 ? ""
                : " (" + unannouncedOutages + " shorter outages since the last warning, " + unannouncedDecisions
                + " decisions made by the failure policy)";
        Throwable why = cause;
        everWarned = true;
        lastWarnAt = now;
        unannouncedOutages = 0;
        unannouncedDecisions = 0;
        announced = true;
        return () -> {
            log.warn("Sluice [{}]: Redis {} is unavailable{}{}: rules with failure-policy open use the local backstop"
                            + " at their fallback-limit, rules with failure-policy closed refuse requests (503). Cause: {}",
                    instance.get(), target, since, earlier, describe(why));
            if (why != null && log.isDebugEnabled()) {
                log.debug("Sluice [{}]: Redis {} failure detail", instance.get(), target, why);
            }
        };
    }

    /** The cause chain's classes and messages on one line, with any URL credentials masked. */
    static String describe(Throwable t) {
        if (t == null) return "unknown";
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null && sb.length() < 1000; c = c.getCause() == c ? null : c.getCause()) {
            if (sb.length() > 0) sb.append(" <- ");
            sb.append(c.getClass().getSimpleName());
            if (c.getMessage() != null) sb.append(": ").append(c.getMessage());
        }
        return CREDENTIALS_IN_URL.matcher(sb).replaceAll("$1****@");
    }
}
