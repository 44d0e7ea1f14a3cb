package dev.sluice.internal.algorithm.model;

import dev.sluice.testing.Rates;
import dev.sluice.internal.algorithm.RateAlgorithm;
import dev.sluice.key.ClientKey;
import dev.sluice.limiter.Acquisition;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.FailurePolicy;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.ManualClock;

import java.time.Duration;
import java.time.Instant;
import java.time.Period;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A generated request sequence: a few rules of random algorithms and parameters, a few clients,
 * and requests at times that mostly move forward (by nothing, a little, about one drain interval,
 * about a window, or a lot) and sometimes lag behind the latest time by less than the expiry
 * margin and the shortest window, as an instance with a slow clock would ({@code clock=local}).
 * {@link Magnitude#SMALL} keeps to small limits and windows, where every figure is exercised
 * often; {@link Magnitude#LARGE} goes to the bounds Sluice accepts: limits up to 10^9, windows up
 * to 30 days, costs up to the capacity, with {@code max(limit, burst) x window} up to 2^50 (a fixed
 * window's limit up to 10^9 whatever its window).
 *
 * <p>With {@link #generateChangingFigures}, each rule has several sets of figures (plans, or what a
 * reload changes: limit, window, burst, max delay; now and then another algorithm) under one name:
 * each request uses the rule's current figures, which change now and then (a reload), or another
 * set (a client on another plan). Time never lags there: a state's expiry (under the figures it was
 * written with) is visible under other figures, and the test emulates Redis's expiry on the fake
 * clock, which a lagging clock would make ambiguous.
 */
final class Scenario {

    /** How large the generated rules are. */
    enum Magnitude { SMALL, LARGE }

    static final long[] WINDOWS = {10, 37, 100, 999, 1_000, 1_500, 10_000, 60_000};
    static final long[] LIMITS = {1, 2, 3, 5, 7, 10, 20};
    static final long MAX_LAG_MS = 900; // below RateAlgorithm.EXPIRY_MARGIN_MS
    static final long MAX_WINDOW_MS = 30L * 24 * 3_600_000;
    static final long MAX_LIMIT = 1_000_000_000;
    /** A sliding-window log holds one entry per token, so its limits stay where a test can afford them. */
    static final long MAX_LOG_LIMIT = 2_000;

    final long seed;
    /** Every set of figures of every rule (several per name when figures change). */
    final List<Rule> rules = new ArrayList<>();
    final List<Step> steps = new ArrayList<>();

    /**
     * A request, or (when {@code giveBackOf >= 0}) a give-back: step {@code giveBackOf}'s
     * acquisitions at {@code indices} give back what their decision took (if it took: when the
     * request was admitted and the rule admitted it), as {@code rule.<r>.count} does after a
     * response that does not count; other requests may have come between. {@code actual}, when not
     * null, settles actual costs instead ({@code rule.<r>.actual-cost}): per acquisition, the cost the
     * request really had (the difference from its cost charged or given back), or -1 where its whole
     * cost is given back (its status did not count).
     */
    record Step(long now, List<Acquisition> acquisitions, int giveBackOf, int[] indices, long[] actual) {
        Step(long now, List<Acquisition> acquisitions) {
            this(now, acquisitions, -1, null, null);
        }

        Step(long now, List<Acquisition> acquisitions, int giveBackOf, int[] indices) {
            this(now, acquisitions, giveBackOf, indices, null);
        }



        boolean isGiveBack() {
            return giveBackOf >= 0;
        }
    }

    private Scenario(long seed) {
        this.seed = seed;
    }

    /** A scenario of small rules, all using {@code only} (or any algorithm when null). */
    static Scenario generate(long seed, Algorithm only, int maxRules, int maxSteps) {
        return generate(seed, only, Magnitude.SMALL, maxRules, maxSteps);
    }

    /** A scenario whose rules all use {@code only} (or any algorithm when null). */
    static Scenario generate(long seed, Algorithm only, Magnitude magnitude, int maxRules, int maxSteps) {
        return generate(seed, only, magnitude, maxRules, maxSteps, false, true);
    }

    /** A scenario whose rules' figures change (plans, reloads), without lagging clocks. */
    static Scenario generateChangingFigures(long seed, Magnitude magnitude, int maxRules, int maxSteps) {
        return generate(seed, null, magnitude, maxRules, maxSteps, true, false);
    }

    /** A scenario on one clock that never lags (the fleet's on Redis, or one instance's). */
    static Scenario generateWithoutLag(long seed, Magnitude magnitude, int maxRules, int maxSteps) {
        return generate(seed, null, magnitude, maxRules, maxSteps, false, false);
    }

    private static Scenario generate(long seed, Algorithm only, Magnitude magnitude, int maxRules, int maxSteps,
                                     boolean changingFigures, boolean lagging) {
        Random rnd = new Random(seed);
        Scenario s = new Scenario(seed);
        int ruleCount = 1 + rnd.nextInt(maxRules);
        long minWindow = Long.MAX_VALUE;
        long maxWindow = 0;
        List<List<Rule>> figures = new ArrayList<>(); // per rule name, its sets of figures
        for (int i = 0; i < ruleCount; i++) {
            Algorithm algorithm = only != null ? only : Rates.ALL.get(rnd.nextInt(Rates.ALL.size()));
            boolean shadow = rnd.nextInt(4) == 0; // a shadow rule: decides and takes, refuses nothing
            List<Rule> sets = new ArrayList<>();
            int count = changingFigures ? 2 + rnd.nextInt(2) : 1;
            for (int f = 0; f < count; f++) {
                Algorithm a = f > 0 && rnd.nextInt(8) == 0 ? Rates.ALL.get(rnd.nextInt(Rates.ALL.size())) : algorithm;
                Rule r = magnitude == Magnitude.SMALL ? rule("r" + i, a, rnd) : largeRule("r" + i, a, rnd);
                sets.add(r.withDryRun(shadow));
                s.rules.add(sets.get(f));
                minWindow = Math.min(minWindow, r.windowMillis());
                maxWindow = Math.max(maxWindow, r.windowMillis());
            }
            figures.add(sets);
        }
        int[] current = new int[ruleCount]; // each rule's figures for most requests: a reload changes them
        int clients = 1 + rnd.nextInt(3);
        long latest = ManualClock.MINUTE_BOUNDARY + rnd.nextInt(120_000);
        int stepCount = 5 + rnd.nextInt(maxSteps - 4);
        java.util.Set<Integer> settled = new java.util.HashSet<>(); // steps whose actual costs were settled
        java.util.Map<Integer, Long> givenBack = new java.util.HashMap<>(); // steps given back whole, and when first
        for (int i = 0; i < stepCount; i++) {
            long now;
            int kind = rnd.nextInt(100);
            if (kind < 10 && i > 0 && lagging) {
                now = latest - rnd.nextLong(Math.min(MAX_LAG_MS, minWindow) + 1);
            } else {
                long dt;
                if (kind < 30) dt = 0;
                else if (kind < 50) dt = 1 + rnd.nextInt(5);
                else if (kind < 70) dt = rnd.nextLong(Math.max(1, 2 * minWindow / figures.get(0).get(0).limit()) + 1);
                else if (kind < 92) dt = rnd.nextLong(minWindow + 1);
                else dt = rnd.nextLong(3 * maxWindow + 1);
                now = latest + dt;
                latest = now;
            }
            if (i > 0 && rnd.nextInt(100) < 15) {
                int of = Math.max(0, i - 1 - rnd.nextInt(Math.min(i, 6)));
                while (of > 0 && s.steps.get(of).isGiveBack()) of--;
                Step previous = s.steps.get(s.steps.size() - 1);
                if (previous.actual() != null && rnd.nextInt(4) == 0) {
                    // the same settlement sent again (a call resent after a dropped connection): changes nothing
                    s.steps.add(new Step(previous.now(), previous.acquisitions(), previous.giveBackOf(), previous.indices(),
                            previous.actual()));
                    continue;
                }
                // a request is settled once (its actual costs) or given back (its status did not count), not both
                // the same give-back again is a resend underneath, which comes within RateAlgorithm.ONCE_MS (what
                // Redis remembers): later, the step is a request as any other
                boolean late = givenBack.containsKey(of) && now - givenBack.get(of) >= RateAlgorithm.ONCE_MS;
                if (!s.steps.get(of).isGiveBack() && !settled.contains(of) && !late) {
                    Step request = s.steps.get(of);
                    List<Acquisition> back = new ArrayList<>();
                    List<Integer> indices = new ArrayList<>();
                    for (int k = 0; k < request.acquisitions().size(); k++) {
                        if (rnd.nextInt(10) < 7 || k == request.acquisitions().size() - 1 && back.isEmpty()) {
                            back.add(request.acquisitions().get(k));
                            indices.add(k);
                        }
                    }
                    long[] actual = null;
                    if (!givenBack.containsKey(of) && rnd.nextBoolean()) { // the costs stated after the responses
                        settled.add(of);
                        actual = new long[back.size()];
                        for (int k = 0; k < actual.length; k++) {
                            Acquisition a = back.get(k);
                            actual[k] = a.rule().algorithm().settlesCost() && rnd.nextInt(5) > 0 ? actualCost(a.cost(), rnd) : -1;
                        }
                    }
                    if (actual == null) givenBack.putIfAbsent(of, now);
                    s.steps.add(new Step(now, back, of, indices.stream().mapToInt(Integer::intValue).toArray(), actual));
                    continue;
                }
            }
            List<Acquisition> acquisitions = new ArrayList<>();
            String client = "c" + rnd.nextInt(clients);
            for (int r = 0; r < ruleCount; r++) {
                if (acquisitions.isEmpty() && r == ruleCount - 1 || rnd.nextInt(10) < 7) {
                    List<Rule> sets = figures.get(r);
                    if (sets.size() > 1 && rnd.nextInt(12) == 0) current[r] = rnd.nextInt(sets.size()); // a reload
                    Rule rule = sets.get(sets.size() > 1 && rnd.nextInt(4) == 0 ? rnd.nextInt(sets.size()) : current[r]); // a plan
                    String who = rnd.nextInt(5) == 0 ? "c" + rnd.nextInt(clients) : client;
                    acquisitions.add(new Acquisition(rule, ClientKey.parse(who), cost(rule, rnd)));
                }
            }
            s.steps.add(new Step(now, acquisitions));
        }
        return s;
    }

    /** Zones of every kind of calendar: two daylight-saving changes a year (north, south), half and quarter hours, none. */
    static final String[] ZONES = {"Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe",
            "Asia/Kathmandu", "America/Santiago", "UTC"};

    /**
     * A scenario of calendar rules ({@code fixed-window} with {@code calendar}: hours, days, weeks, months in
     * {@link #ZONES}), from 2026 to 2028, its requests crowding around the windows' boundaries (the last and
     * first milliseconds of a window, across daylight-saving changes and month ends). With
     * {@code changingFigures}, a rule's figures change now and then (a reload) or differ per request (plans):
     * another zone, another calendar window, or windows aligned to the epoch; then time never lags.
     */
    static Scenario generateCalendar(long seed, int maxRules, int maxSteps, boolean changingFigures) {
        Random rnd = new Random(seed);
        Scenario s = new Scenario(seed);
        int ruleCount = 1 + rnd.nextInt(maxRules);
        List<List<Rule>> figures = new ArrayList<>();
        for (int i = 0; i < ruleCount; i++) {
            boolean shadow = rnd.nextInt(4) == 0;
            List<Rule> sets = new ArrayList<>();
            int count = changingFigures ? 2 + rnd.nextInt(2) : 1;
            for (int f = 0; f < count; f++) {
                Rule r = f > 0 && rnd.nextInt(4) == 0 ? rule("r" + i, Algorithm.FIXED_WINDOW, rnd) : calendarRule("r" + i, rnd);
                sets.add(r.withDryRun(shadow));
                s.rules.add(sets.get(f));
            }
            figures.add(sets);
        }
        int[] current = new int[ruleCount];
        int clients = 1 + rnd.nextInt(3);
        long from = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();
        long latest = nearABoundary(figures.get(0).get(0), from + (long) (rnd.nextDouble() * 2 * 365 * 86_400_000L), rnd);
        int stepCount = 5 + rnd.nextInt(maxSteps - 4);
        for (int i = 0; i < stepCount; i++) {
            long now;
            int kind = rnd.nextInt(100);
            if (kind < 10 && i > 0 && !changingFigures) {
                now = latest - rnd.nextLong(MAX_LAG_MS + 1);
            } else {
                if (kind < 30) now = latest;
                else if (kind < 50) now = latest + 1 + rnd.nextInt(5);
                else if (kind < 65) now = latest + rnd.nextInt(2_000);
                else if (kind < 85) now = nearABoundary(figures.get(rnd.nextInt(ruleCount)).get(0), latest, rnd);
                else if (kind < 95) now = latest + rnd.nextInt(3_600_000);
                else now = latest + rnd.nextLong(3 * 86_400_000L);
                now = Math.max(now, latest);
                latest = now;
            }
            if (i > 0 && rnd.nextInt(100) < 12 && !s.steps.get(i - 1).isGiveBack()) {
                Step request = s.steps.get(i - 1); // its response did not count (rule.<r>.count): given back
                int[] all = new int[request.acquisitions().size()];
                for (int k = 0; k < all.length; k++) all[k] = k;
                s.steps.add(new Step(now, request.acquisitions(), i - 1, all));
                continue;
            }
            List<Acquisition> acquisitions = new ArrayList<>();
            String client = "c" + rnd.nextInt(clients);
            for (int r = 0; r < ruleCount; r++) {
                if (acquisitions.isEmpty() && r == ruleCount - 1 || rnd.nextInt(10) < 7) {
                    List<Rule> sets = figures.get(r);
                    if (sets.size() > 1 && rnd.nextInt(8) == 0) current[r] = rnd.nextInt(sets.size()); // a reload
                    Rule rule = sets.get(sets.size() > 1 && rnd.nextInt(4) == 0 ? rnd.nextInt(sets.size()) : current[r]);
                    String who = rnd.nextInt(5) == 0 ? "c" + rnd.nextInt(clients) : client;
                    acquisitions.add(new Acquisition(rule, ClientKey.parse(who), cost(rule, rnd)));
                }
            }
            s.steps.add(new Step(now, acquisitions));
        }
        return s;
    }

    static Rule calendarRule(String name, Random rnd) {
        ZoneId zone = ZoneId.of(ZONES[rnd.nextInt(ZONES.length)]);
        Rule.Builder b = Rule.builder(name).algorithm(Algorithm.FIXED_WINDOW).limit(LIMITS[rnd.nextInt(LIMITS.length)])
                .calendar(zone);
        switch (rnd.nextInt(5)) {
            case 0 -> b.window(Duration.ofHours(1));
            case 1 -> b.window(Duration.ofHours(3));
            case 2 -> b.window(Duration.ofDays(1));
            case 3 -> b.window(Period.ofWeeks(1));
            default -> b.window(Period.ofMonths(1));
        }
        return b.build();
    }

    /** A moment within a second and a half of the next start of one of {@code rule}'s windows after {@code t}. */
    private static long nearABoundary(Rule rule, long t, Random rnd) {
        long boundary = rule.calendar() != null ? rule.calendar().nextStart(t)
                : Math.floorDiv(t, rule.windowMillis()) * rule.windowMillis() + rule.windowMillis();
        return boundary + rnd.nextInt(3_000) - 1_500;
    }

    static Rule rule(String name, Algorithm algorithm, Random rnd) {
        long limit = LIMITS[rnd.nextInt(LIMITS.length)];
        long window = WINDOWS[rnd.nextInt(WINDOWS.length)];
        long burst = limit;
        Duration maxDelay = Duration.ZERO;
        if (algorithm == Algorithm.TOKEN_BUCKET || algorithm == Algorithm.GCRA || algorithm == Algorithm.LEAKY_BUCKET) {
            if (rnd.nextBoolean()) burst = 1 + rnd.nextInt((int) (2 * limit + 1));
        }
        if (algorithm == Algorithm.LEAKY_BUCKET && rnd.nextInt(3) > 0) {
            maxDelay = Duration.ofMillis(rnd.nextInt((int) (2 * window + 1)));
        }
        return new Rule(name, algorithm, limit, Duration.ofMillis(window), burst, 1, FailurePolicy.OPEN, limit, maxDelay);
    }

    /** A rule anywhere within the bounds Sluice accepts, its numbers spread over their orders of magnitude. */
    static Rule largeRule(String name, Algorithm algorithm, Random rnd) {
        long window = logUniform(rnd, 1, MAX_WINDOW_MS);
        long maxQuota = Rule.scalesByWindow(algorithm) ? Rule.MAX_QUOTA_TIMES_WINDOW_MS / window : Rule.MAX_COUNT;
        long limit = logUniform(rnd, 1, Math.min(algorithm == Algorithm.SLIDING_WINDOW_LOG ? MAX_LOG_LIMIT : MAX_LIMIT, maxQuota));
        long burst = limit;
        Duration maxDelay = Duration.ZERO;
        if ((algorithm == Algorithm.TOKEN_BUCKET || algorithm == Algorithm.GCRA || algorithm == Algorithm.LEAKY_BUCKET)
                && rnd.nextBoolean()) {
            burst = logUniform(rnd, 1, Math.min(Math.min(Math.max(3 * limit, 2), maxQuota), Rule.MAX_COUNT));
        }
        if (algorithm == Algorithm.LEAKY_BUCKET && rnd.nextInt(3) > 0) {
            maxDelay = Duration.ofMillis(logUniform(rnd, 1, 2 * window));
        }
        return new Rule(name, algorithm, limit, Duration.ofMillis(window), burst, 1, FailurePolicy.OPEN, limit, maxDelay);
    }

    /** A number in [min, max] whose logarithm is uniform: as many small values as huge ones. */
    static long logUniform(Random rnd, long min, long max) {
        double v = Math.exp(Math.log(min) + rnd.nextDouble() * (Math.log(max + 1.0) - Math.log(min)));
        return Math.max(min, Math.min(max, (long) v));
    }

    /** The largest cost {@code r} ever admits: its burst for the buckets, else its limit. */
    static long capacity(Rule r) {
        return switch (r.algorithm()) {
            case TOKEN_BUCKET, GCRA, LEAKY_BUCKET -> r.burst();
            default -> r.limit();
        };
    }

    static long cost(Rule r, Random rnd) {
        long capacity = capacity(r);
        int kind = rnd.nextInt(100);
        if (kind < 70) return 1;
        if (kind < 83) return 1 + rnd.nextLong(capacity);
        if (kind < 96) return logUniform(rnd, 1, capacity); // large capacities: small costs as often as large ones
        return capacity + 1;
    }

    /**
     * A cost stated after the response of a request that took {@code cost}: none, less, the same, more,
     * now and then far more (beyond the debt the engines keep).
     */
    static long actualCost(long cost, Random rnd) {
        return switch (rnd.nextInt(10)) {
            case 0 -> 0;
            case 1 -> cost;
            case 2, 3 -> rnd.nextLong(cost + 1);
            case 4, 5, 6 -> cost + rnd.nextLong(2 * cost + 1);
            case 7, 8 -> cost + logUniform(rnd, 1, 1_000 * cost);
            default -> logUniform(rnd, 1, Long.MAX_VALUE / 4);
        };
    }

    /** The scenario as text, up to and including step {@code last}: enough to replay it by hand. */
    String describe(int last) {
        StringBuilder sb = new StringBuilder("seed ").append(seed).append('\n');
        for (Rule r : rules) {
            sb.append("  rule ").append(r.name());
            if (sets(r.name()).size() > 1) sb.append('#').append(sets(r.name()).indexOf(r));
            sb.append(": ").append(r.algorithm().id()).append(" limit=").append(r.limit())
                    .append(" window=").append(r.windowMillis()).append("ms burst=").append(r.burst())
                    .append(" maxDelay=").append(r.maxDelay().toMillis()).append("ms").append(r.dryRun() ? " shadow" : "")
                    .append(r.calendar() != null ? " calendar=" + r.calendar() : "").append('\n');
        }
        long t0 = steps.get(0).now();
        for (int i = 0; i <= last && i < steps.size(); i++) {
            Step st = steps.get(i);
            sb.append("  #").append(i).append(" t=").append(st.now()).append(" (+").append(st.now() - t0).append(")");
            if (st.isGiveBack()) sb.append(st.actual() == null ? " give back #" : " settle #").append(st.giveBackOf()).append(':');
            for (int k = 0; k < st.acquisitions().size(); k++) {
                Acquisition a = st.acquisitions().get(k);
                sb.append(' ').append(a.rule().name());
                int set = sets(a.rule().name()).indexOf(a.rule());
                if (sets(a.rule().name()).size() > 1) sb.append('#').append(set);
                sb.append(':').append(a.clientKey()).append('x').append(a.cost());
                if (st.actual() != null) sb.append(st.actual()[k] < 0 ? " (all back)" : " (actual " + st.actual()[k] + ")");
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    /** The sets of figures of the rule named {@code name}, in order. */
    private List<Rule> sets(String name) {
        return rules.stream().filter(r -> r.name().equals(name)).toList();
    }
}
