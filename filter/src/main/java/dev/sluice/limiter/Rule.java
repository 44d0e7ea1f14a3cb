package dev.sluice.limiter;

import java.time.Duration;
import java.time.Instant;
import java.time.Period;
import java.time.ZoneId;
import java.time.temporal.ChronoUnit;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * One limit: an algorithm and its parameters, independent of HTTP. Immutable; every combination
 * that cannot work is refused when the rule is made ({@link InvalidRuleException} naming the
 * parameter), so an engine never sees a rule it cannot decide exactly.
 *
 * <pre>{@code
 * Rule api = Rule.builder("api").limit(100).window(Duration.ofMinutes(1)).build();   // token bucket
 * Rule login = Rule.builder("login").algorithm(Algorithm.FIXED_WINDOW).limit(5)
 *         .window(Duration.ofMinutes(1)).failurePolicy(FailurePolicy.CLOSED).build();
 * }</pre>
 *
 * @param name          the rule's name: 1 to 64 of {@code [A-Za-z0-9_-]}; part of its Redis keys
 *                      ({@code <prefix>{<name>:<client>}}), so two rules never share a key
 * @param algorithm     how requests are counted
 * @param limit         requests allowed per {@code window}; for bucket algorithms the sustained rate
 * @param window        the window, or the time in which a bucket refills {@code limit} tokens;
 *                      whole milliseconds, at least 1 ms. For {@code concurrency}, which has no window: the
 *                      lease ({@link #lease()}), at least a second
 * @param burst         bucket capacity (defaults to {@code limit}); for leaky-bucket the queue
 *                      length; must equal {@code limit} for the window algorithms
 * @param cost          tokens one request takes by default; at most the capacity, in Redis and in
 *                      the backstop; 1 for {@code concurrency} (a request takes one slot)
 * @param failurePolicy what happens when Redis cannot answer
 * @param fallbackLimit the per-instance limit of the local backstop while Redis is away
 * @param maxDelay      leaky-bucket only: how long an admitted request may be held until its slot
 * @param dryRun        a shadow rule ({@code rule.<name>.mode=dry-run}): it decides and counts like any rule,
 *                      but its denial never refuses a request; the request's other rules decide it
 * @param plan          the name of the plan whose figures these are ({@code rule.<name>.plans}), or
 *                      {@code null} for the rule's own figures; a client's state belongs to the rule
 *                      and the client, whatever the plan
 * @param sync          {@code rule.<name>.sync}: {@link Duration#ZERO} for an exact rule (every decision in
 *                      Redis); otherwise the approximate mode: each instance decides from its own counts and
 *                      exchanges them with Redis once per {@code sync} (fixed-window and
 *                      sliding-window-counter only; at most half the window)
 * @param calendar      {@code rule.<name>.calendar}: the calendar windows of a fixed-window rule (a day from midnight
 *                      in a time zone, a month from the 1st), or {@code null} for windows aligned to the epoch. A
 *                      calendar rule's {@code window} is the longest its windows can be ({@link CalendarWindows#nominal()}):
 *                      the constructor sets it from the calendar, whatever is passed
 */
public record Rule(String name, Algorithm algorithm, long limit, Duration window, long burst, long cost,
                   FailurePolicy failurePolicy, long fallbackLimit, Duration maxDelay, boolean dryRun, String plan,
                   Duration sync, CalendarWindows calendar) {

    /** How far ahead a calendar rule's sync interval is checked against its windows: two years. */
    private static final long SHORTEST_WINDOW_SPAN_MS = 2 * 366 * 86_400_000L;

    /**
     * Each calendar's shortest window in the two years from its first use in this JVM, found once: a rule
     * made again from an accepted one (its backstop's, a shadow, another cost) is checked against the
     * same window, so it is never refused later, and costs a lookup. One entry per calendar configured.
     */
    private static final ConcurrentHashMap<CalendarWindows, CalendarWindows.Window> SHORTEST = new ConcurrentHashMap<>();

    private static CalendarWindows.Window shortestWindow(CalendarWindows calendar) {
        return SHORTEST.computeIfAbsent(calendar, c -> {
            long now = System.currentTimeMillis();
            return c.shortest(now, now + SHORTEST_WINDOW_SPAN_MS);
        });
    }

    /** What a rule name may be: it is part of every Redis key of the rule. */
    public static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

    /** The largest {@code limit}, {@code burst}, {@code cost} and {@code fallback-limit}. */
    public static final long MAX_COUNT = Integer.MAX_VALUE;

    /**
     * The largest {@code max(limit, burst) x window} in milliseconds: keeps every value the
     * algorithms compute below 2<sup>53</sup>, where Lua's numbers are exact (e.g. 10 million per day).
     * Not for {@code fixed-window}, whose count is never multiplied by its window: any limit up to
     * {@link #MAX_COUNT} per window of any length (a calendar month or year included).
     */
    public static final long MAX_QUOTA_TIMES_WINDOW_MS = 1L << 50;

    /**
     * The largest {@code limit} of a {@code sliding-window-log} rule: it keeps one sorted-set entry
     * per admitted request (about 110 bytes in Redis), and a request of cost c writes c entries in
     * one script run, during which Redis serves nobody else. Larger limits belong to
     * {@code sliding-window-counter}, which keeps two counters whatever the limit.
     */
    public static final long MAX_LOG_LIMIT = 10_000;

    /** A concurrency rule's default lease ({@code rule.<name>.lease}). */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);

    /**
     * The shortest lease: a slot is renewed every third of its lease while its request runs, so a lease
     * much shorter would cost a renewal every few hundred milliseconds per long request.
     */
    public static final Duration MIN_LEASE = Duration.ofSeconds(1);

    public Rule {
        Objects.requireNonNull(name, "name");
        if (!NAME.matcher(name).matches()) {
            throw new InvalidRuleException(name, "name", "1 to 64 letters, digits, '_' or '-' (it is part of every"
                    + " Redis key of the rule, so ':', '{' and '}' could make two rules share a key)");
        }
        if (plan != null && !NAME.matcher(plan).matches()) {
            throw new InvalidRuleException(name, "plans", "plan names are 1 to 64 letters, digits, '_' or '-'; got '"
                    + plan + "'");
        }
        if (algorithm == null) throw new InvalidRuleException(name, "algorithm", "required: one of " + Algorithm.ids());
        if (failurePolicy == null) throw new InvalidRuleException(name, "failure-policy", "required: open or closed");
        if (calendar != null) {
            if (algorithm != Algorithm.FIXED_WINDOW) {
                throw new InvalidRuleException(name, "calendar", "only for fixed-window (windows that start and end on"
                        + " the calendar); the algorithm is " + algorithm.id() + ": remove calendar or use fixed-window");
            }
            window = calendar.nominal();
        }
        count(name, "limit", limit);
        boolean concurrency = algorithm.isConcurrency();
        long windowMs = concurrency ? duration(name, "lease", window, MIN_LEASE.toMillis()) : duration(name, "window", window, 1);
        if (concurrency && burst != limit) {
            throw new InvalidRuleException(name, "burst", "a concurrency rule has no burst: at most limit (" + limit
                    + ") requests are in flight at once; leave burst unset");
        }
        if (concurrency && cost != 1) {
            throw new InvalidRuleException(name, "cost", "a concurrency rule counts requests in flight, one slot each:"
                    + " leave cost unset (1), got " + cost);
        }
        count(name, "burst", burst);
        count(name, "cost", cost);
        count(name, "fallback-limit", fallbackLimit);
        long maxDelayMs = duration(name, "max-delay", maxDelay, 0);

        boolean windowAlgorithm = algorithm.isWindow() || concurrency;
        if (algorithm.isWindow() && burst != limit) {
            throw new InvalidRuleException(name, "burst", "only for token-bucket, leaky-bucket and gcra; "
                    + algorithm.id() + " allows exactly limit (" + limit + ") per window: leave burst unset");
        }
        if (algorithm == Algorithm.SLIDING_WINDOW_LOG && limit > MAX_LOG_LIMIT) {
            throw new InvalidRuleException(name, "limit", "at most " + MAX_LOG_LIMIT + " for sliding-window-log, which"
                    + " keeps one Redis entry (about 110 bytes) per admitted request; use sliding-window-counter"
                    + " for larger limits");
        }
        if (algorithm != Algorithm.LEAKY_BUCKET && maxDelayMs != 0) {
            throw new InvalidRuleException(name, "max-delay", "only for leaky-bucket; the algorithm is " + algorithm.id());
        }
        long quota = Math.max(limit, burst);
        boolean quotaTimesWindow = scalesByWindow(algorithm);
        if (quotaTimesWindow && quota > MAX_QUOTA_TIMES_WINDOW_MS / windowMs) {
            throw new InvalidRuleException(name, "limit", "max(limit, burst) x window in ms must be at most 2^50 ("
                    + MAX_QUOTA_TIMES_WINDOW_MS + ", e.g. 10,000,000 per day) for " + algorithm.id() + ", to stay exact"
                    + " in Redis's arithmetic; got " + quota + " x " + windowMs + " ms: use a shorter window with a"
                    + " proportionally smaller limit, or fixed-window (any limit per window)");
        }
        long capacity = windowAlgorithm ? limit : burst;
        if (cost > capacity) {
            throw new InvalidRuleException(name, "cost", "a whole number from 1 to " + capacity + " (the rule's "
                    + (windowAlgorithm || burst == limit ? "limit" : "burst") + "): a request costing more could never"
                    + " be admitted");
        }
        long fallbackCapacity = windowAlgorithm ? fallbackLimit : fallbackBurst(burst, fallbackLimit, limit);
        if (cost > fallbackCapacity) {
            throw new InvalidRuleException(name, "fallback-limit", "must let the local backstop admit one request of"
                    + " cost " + cost + ": with fallback-limit " + fallbackLimit + " its capacity is " + fallbackCapacity
                    + ", so every request would be refused while Redis is away; raise fallback-limit to at least "
                    + minFallbackLimit(cost, burst, limit, windowAlgorithm) + " or lower cost");
        }
        if (quotaTimesWindow && Math.max(fallbackLimit, fallbackBurst(burst, fallbackLimit, limit)) > MAX_QUOTA_TIMES_WINDOW_MS / windowMs) {
            throw new InvalidRuleException(name, "fallback-limit", "fallback-limit x window in ms must be at most 2^50 ("
                    + MAX_QUOTA_TIMES_WINDOW_MS + "); got " + fallbackLimit + " x " + windowMs + " ms");
        }
        if (algorithm == Algorithm.SLIDING_WINDOW_LOG && fallbackLimit > MAX_LOG_LIMIT) {
            throw new InvalidRuleException(name, "fallback-limit", "at most " + MAX_LOG_LIMIT + " for sliding-window-log");
        }
        long syncMs = duration(name, "sync", sync, 0);
        if (syncMs > 0 && algorithm != Algorithm.FIXED_WINDOW && algorithm != Algorithm.SLIDING_WINDOW_COUNTER) {
            throw new InvalidRuleException(name, "sync", "only for fixed-window and sliding-window-counter (the"
                    + " approximate mode counts per window); the algorithm is " + algorithm.id()
                    + ": remove sync or use one of those");
        }
        if (syncMs > windowMs / 2) {
            // a sync at least twice per window, so that every window's count is exchanged while it is current
            throw new InvalidRuleException(name, "sync", "0 (exact) or at most half the window (" + windowMs / 2
                    + " ms for a window of " + windowMs + " ms), got " + syncMs + " ms");
        }
        if (syncMs > 0 && calendar != null) {
            // the same for the shortest window of the next two years: a day of 23 hours, February, a window a jump cuts
            CalendarWindows.Window shortest = shortestWindow(calendar);
            if (syncMs > shortest.lengthMs() / 2) {
                throw new InvalidRuleException(name, "sync", "0 (exact) or at most half the shortest window (" + shortest.lengthMs() / 2
                        + " ms: " + calendar + " has a window of " + shortest.lengthMs() + " ms from "
                        + Instant.ofEpochMilli(shortest.startMs()).atZone(calendar.zone()) + "), got " + syncMs + " ms");
            }
        }
    }

    /** A rule whose windows, if any, are aligned to the epoch (no calendar). */
    public Rule(String name, Algorithm algorithm, long limit, Duration window, long burst, long cost,
                FailurePolicy failurePolicy, long fallbackLimit, Duration maxDelay, boolean dryRun, String plan,
                Duration sync) {
        this(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay, dryRun, plan, sync,
                null);
    }

    /** A rule of the exact mode ({@code sync} 0), as before the approximate mode. */
    public Rule(String name, Algorithm algorithm, long limit, Duration window, long burst, long cost,
                FailurePolicy failurePolicy, long fallbackLimit, Duration maxDelay, boolean dryRun, String plan) {
        this(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay, dryRun, plan,
                Duration.ZERO);
    }

    /** An enforcing rule with its own figures (no plan). */
    public Rule(String name, Algorithm algorithm, long limit, Duration window, long burst, long cost,
                FailurePolicy failurePolicy, long fallbackLimit, Duration maxDelay) {
        this(name, algorithm, limit, window, burst, cost, failurePolicy, fallbackLimit, maxDelay, false, null,
                Duration.ZERO);
    }

    /** A rule with the defaults of the contract: burst = limit, cost 1, fail open, fallback = limit, no delay. */
    public static Rule of(String name, Algorithm algorithm, long limit, Duration window) {
        return new Rule(name, algorithm, limit, window, limit, 1, FailurePolicy.OPEN, limit, Duration.ZERO);
    }

    /** A builder with the defaults of the contract: token-bucket, burst = limit, cost 1, open, fallback = limit. */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** A builder holding this rule's parameters, to derive a changed copy. */
    public Builder toBuilder() {
        Builder b = new Builder(name).algorithm(algorithm).limit(limit).cost(cost)
                .failurePolicy(failurePolicy).maxDelay(maxDelay).dryRun(dryRun).plan(plan).sync(sync);
        if (algorithm.isConcurrency()) b.lease(window);
        else b.window(window);
        if (calendar != null) b.calendar(calendar);
        if (burst != limit) b.burst(burst);
        if (fallbackLimit != limit) b.fallbackLimit(fallbackLimit);
        return b;
    }

    /** The window in ms; for a calendar rule the longest its windows can be (each window's own: {@link #calendar()}). */
    public long windowMillis() {
        return window.toMillis();
    }

    /** Whether this rule is decided in the approximate mode: {@code sync} is not 0. */
    public boolean approximate() {
        return !sync.isZero();
    }

    /** {@code sync} in milliseconds; 0 for an exact rule. */
    public long syncMillis() {
        return sync.toMillis();
    }

    /** The largest cost one request can ever be admitted with: {@code burst} for buckets, {@code limit} for windows. */
    public long capacity() {
        return algorithm.isWindow() || algorithm.isConcurrency() ? limit : burst;
    }

    /**
     * A concurrency rule's lease ({@code rule.<name>.lease}): how long a slot stays taken once the instance
     * holding it stops renewing it (it renews it every third of the lease while the request runs).
     *
     * @throws IllegalStateException for a rule of another algorithm, which has a window instead
     */
    public Duration lease() {
        if (!algorithm.isConcurrency()) throw new IllegalStateException("rule " + name + " is " + algorithm.id() + ": no lease");
        return window;
    }

    /** This rule with another limit and burst, as the local backstop enforces it while Redis is away. */
    public Rule asFallback() {
        if (fallbackLimit == limit) {
            return this;
        }
        long fallbackBurst = fallbackBurst(burst, fallbackLimit, limit);
        return new Rule(name, algorithm, fallbackLimit, window, fallbackBurst, cost, failurePolicy, fallbackLimit, maxDelay,
                dryRun, plan, sync, calendar);
    }

    public Rule withCost(long newCost) {
        return new Rule(name, algorithm, limit, window, burst, newCost, failurePolicy, fallbackLimit, maxDelay, dryRun,
                plan, sync, calendar);
    }

    /** This rule as a shadow rule (or not). */
    public Rule withDryRun(boolean shadow) {
        return shadow == dryRun ? this : new Rule(name, algorithm, limit, window, burst, cost, failurePolicy,
                fallbackLimit, maxDelay, shadow, plan, sync, calendar);
    }

    /** The backstop's burst: the rule's, scaled by fallback-limit / limit, at least 1. */
    private static long fallbackBurst(long burst, long fallbackLimit, long limit) {
        return fallbackLimit == limit ? burst : Math.max(1, Math.round((double) burst * fallbackLimit / limit));
    }

    private static long minFallbackLimit(long cost, long burst, long limit, boolean windowAlgorithm) {
        if (windowAlgorithm || burst == limit) return cost;
        long f = Math.max(1, (long) Math.floor((double) cost * limit / burst));
        while (fallbackBurst(burst, f, limit) < cost) f++;
        return f;
    }

    /**
     * Whether {@code algorithm}'s arithmetic multiplies a quota by the window ({@link #MAX_QUOTA_TIMES_WINDOW_MS}
     * bounds the product): every algorithm's but {@code fixed-window}'s, which only adds to a count and
     * compares it with the limit.
     */
    public static boolean scalesByWindow(Algorithm algorithm) {
        return algorithm != Algorithm.FIXED_WINDOW;
    }

    private static void count(String rule, String field, long value) {
        if (value < 1 || value > MAX_COUNT) {
            throw new InvalidRuleException(rule, field, "a whole number, at least 1 (at most " + MAX_COUNT + "), got " + value);
        }
    }

    /** The duration in whole milliseconds, checked before converting so that no value overflows. */
    private static long duration(String rule, String field, Duration d, long minMillis) {
        if (d == null) throw new InvalidRuleException(rule, field, "required");
        if (d.isNegative() || d.compareTo(Duration.ofMillis(MAX_QUOTA_TIMES_WINDOW_MS)) > 0 || d.getNano() % 1_000_000 != 0
                || d.toMillis() < minMillis) {
            throw new InvalidRuleException(rule, field, "whole milliseconds from " + minMillis + " ms to "
                    + MAX_QUOTA_TIMES_WINDOW_MS + " ms, got " + d);
        }
        return d.toMillis();
    }

    /**
     * Builds a {@link Rule}; every parameter but {@code limit} and {@code window} has the contract's
     * default. Not thread-safe.
     */
    public static final class Builder {
        private final String name;
        private Algorithm algorithm = Algorithm.TOKEN_BUCKET;
        private long limit;
        private Duration window;
        private Long burst;
        private long cost = 1;
        private FailurePolicy failurePolicy = FailurePolicy.OPEN;
        private Long fallbackLimit;
        private Duration maxDelay = Duration.ZERO;
        private boolean dryRun;
        private String plan;
        private Duration sync = Duration.ZERO;
        private ZoneId zone;
        private Period months;
        private Duration lease;

        private Builder(String name) {
            this.name = name;
        }

        /** Default {@code token-bucket}. */
        public Builder algorithm(Algorithm algorithm) {
            this.algorithm = algorithm;
            return this;
        }

        /** Required. */
        public Builder limit(long limit) {
            this.limit = limit;
            return this;
        }

        /**
         * Required. With a {@link #calendar(ZoneId) calendar}: whole hours that divide a day, days, or
         * weeks (a multiple of 7 days: from Monday 00:00).
         */
        public Builder window(Duration window) {
            this.window = window;
            this.months = null;
            return this;
        }

        /**
         * A window of calendar months, weeks or days, with a {@link #calendar(ZoneId) calendar}: e.g.
         * {@code Period.ofMonths(1)} (from the 1st, 00:00), {@code Period.ofWeeks(1)} (from Monday 00:00),
         * {@code Period.ofDays(1)}. Months and days are not mixed.
         */
        public Builder window(Period window) {
            Objects.requireNonNull(window, "window");
            this.months = window.toTotalMonths() != 0 ? window : null;
            this.window = window.toTotalMonths() != 0 ? null : Duration.ofDays(window.getDays());
            if (months != null && window.getDays() != 0) {
                throw new InvalidRuleException(name == null ? "?" : name, "window", "calendar months or days, not both;"
                        + " got " + window);
            }
            return this;
        }

        /**
         * Default none: fixed windows aligned to the epoch. A time zone: the fixed windows follow its calendar
         * (a day from midnight there, 23 or 25 hours across a daylight-saving change; a month from the 1st).
         * {@code fixed-window} only.
         */
        public Builder calendar(ZoneId zone) {
            this.zone = zone;
            return this;
        }

        /** The calendar windows themselves (a zone, a unit and an amount); {@code null}: none. */
        public Builder calendar(CalendarWindows windows) {
            if (windows == null) {
                this.zone = null;
                return this;
            }
            this.zone = windows.zone();
            if (windows.unit() == ChronoUnit.MONTHS) {
                this.months = Period.ofMonths(windows.amount());
                this.window = null;
            } else {
                window(windows.nominal());
            }
            return this;
        }

        /**
         * {@code concurrency} only; default {@link #DEFAULT_LEASE} (30 s): how long a slot stays taken once the
         * instance holding it stops renewing it (a crash, a kill, a partition). A request running longer
         * keeps its slot: it is renewed while the request runs. At least {@link #MIN_LEASE}.
         */
        public Builder lease(Duration lease) {
            this.lease = lease;
            return this;
        }

        /** Default: the limit. Bucket algorithms only. */
        public Builder burst(long burst) {
            this.burst = burst;
            return this;
        }

        /** Default 1. */
        public Builder cost(long cost) {
            this.cost = cost;
            return this;
        }

        /** Default {@link FailurePolicy#OPEN}. */
        public Builder failurePolicy(FailurePolicy failurePolicy) {
            this.failurePolicy = failurePolicy;
            return this;
        }

        /** Default: the limit. */
        public Builder fallbackLimit(long fallbackLimit) {
            this.fallbackLimit = fallbackLimit;
            return this;
        }

        /** Default 0. Leaky-bucket only. */
        public Builder maxDelay(Duration maxDelay) {
            this.maxDelay = maxDelay;
            return this;
        }

        /** Default false: the rule enforces. {@code true}: a shadow rule, whose denials never refuse. */
        public Builder dryRun(boolean shadow) {
            this.dryRun = shadow;
            return this;
        }

        /** The plan these figures belong to; default none (the rule's own figures). */
        public Builder plan(String planName) {
            this.plan = planName;
            return this;
        }

        /**
         * Default 0: exact, every decision in Redis. Otherwise the approximate mode, exchanging counts with
         * Redis once per {@code sync}: fixed-window and sliding-window-counter only, at most half the window.
         */
        public Builder sync(Duration interval) {
            this.sync = interval;
            return this;
        }

        /** @throws InvalidRuleException naming the parameter that does not fit */
        public Rule build() {
            String rule = name == null ? "?" : name;
            if (algorithm == Algorithm.CONCURRENCY) {
                if (window != null || months != null) {
                    throw new InvalidRuleException(rule, "window", "a concurrency rule has no window: its slots are"
                            + " held while requests run; set lease(...) for how long a slot outlives an instance that died");
                }
                return new Rule(name, algorithm, limit, lease == null ? DEFAULT_LEASE : lease, burst == null ? limit : burst,
                        cost, failurePolicy, fallbackLimit == null ? limit : fallbackLimit, maxDelay, dryRun, plan, sync,
                        zone == null ? null : CalendarWindows.of(zone, Duration.ofDays(1)));
            }
            if (lease != null) {
                throw new InvalidRuleException(rule, "lease", "only for concurrency; the algorithm is " + algorithm.id());
            }
            CalendarWindows windows = null;
            if (zone != null) {
                if (window == null && months == null) throw new InvalidRuleException(rule, "window", "required");
                try {
                    windows = months != null ? CalendarWindows.months(zone, (int) months.toTotalMonths())
                            : CalendarWindows.of(zone, window);
                } catch (IllegalArgumentException bad) {
                    throw new InvalidRuleException(rule, "window", bad.getMessage());
                }
            } else if (months != null) {
                throw new InvalidRuleException(rule, "window", "months (" + months + ") only with a calendar: set"
                        + " calendar(ZoneId), or give a duration");
            }
            if (window == null && windows == null) throw new InvalidRuleException(rule, "window", "required");
            Duration length = windows != null ? windows.nominal() : window;
            return new Rule(name, algorithm, limit, length, burst == null ? limit : burst, cost, failurePolicy, fallbackLimit == null ? limit : fallbackLimit, maxDelay, dryRun, plan, sync,
                    windows);
        }
    }
}
