package dev.sluice.bench;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Reads an async-profiler profile of a Tomcat serving the benchmark in collapsed form (one line per
 * stack: frames root first, separated by {@code ;}, then the sample count, or with {@code total}
 * the bytes allocated) and says where the time of Tomcat's request threads goes: the filter's own
 * code (under {@code RateLimitFilter.doFilter} or the floor's {@code FloorFilter.doFilter}, the
 * servlet it calls excluded) by callee, Tomcat writing the response headers, and for Sluice on
 * Redis the call path (waiting in a shared round trip, parking and waking, the socket).
 *
 * <p>{@link #cpu} and {@link #allocation} turn shares into per-request figures when given the
 * JVM's CPU (or bytes) per request measured over the same load: a stack's share of all the JVM's
 * samples times that.
 *
 * <pre>java -cp benchmarks.jar dev.sluice.bench.ProfileSummary VARIANT collapsed.txt</pre>
 */
public final class ProfileSummary {

    private static final String[] FILTERS = {"RateLimitFilter.doFilter", "FloorFilter.doFilter"};

    private record Stack(String[] frames, long samples) {
        boolean has(String frame) {
            for (String f : frames) if (f.contains(frame)) return true;
            return false;
        }

        int last(String frame) {
            for (int i = frames.length - 1; i >= 0; i--) if (frames[i].contains(frame)) return i;
            return -1;
        }

        /** The index of the outermost filter frame this stack's filter code starts at, or -1 if it is not the filter's own. */
        int filterOwn() {
            for (String filter : FILTERS) {
                int at = last(filter);
                if (at < 0) continue;
                for (int i = at + 1; i < frames.length; i++) if (frames[i].contains("HttpServlet.service")) return -1;
                return at;
            }
            return -1;
        }
    }

    private ProfileSummary() {
    }

    public static void main(String[] args) throws IOException {
        System.out.print(cpu(args[0], Path.of(args[1]), Double.NaN, Double.NaN));
    }

    /**
     * A CPU profile's table.
     *
     * @param cpuMicrosPerRequest the profiled JVM's CPU per request over the profiled run (NaN: unknown)
     * @param rps                 the requests per second of that run (NaN: unknown)
     */
    static String cpu(String variant, Path collapsed, double cpuMicrosPerRequest, double rps) throws IOException {
        Profile p = Profile.load(collapsed);
        List<Stack> requests = p.requests();
        long all = p.all();
        long req = p.requestTotal();
        StringWriter text = new StringWriter();
        PrintWriter w = new PrintWriter(text);
        boolean perRequest = !Double.isNaN(cpuMicrosPerRequest);
        w.printf(Locale.ROOT, "CPU profile of `%s` (async-profiler, itimer, %,d samples of the Tomcat JVM, %.0f%% of them in "
                        + "Tomcat's request threads; the rest: its poller and acceptor, the JIT, GC)%s. Shares of the request threads' time%s:%n%n",
                variant, all, 100.0 * req / all,
                perRequest ? String.format(Locale.ROOT, "; the JVM spent %.1f µs of CPU per request at %,.0f requests/s", cpuMicrosPerRequest, rps) : "",
                perRequest ? ", and µs per request (the stack's share of all the JVM's samples x its CPU per request)" : "");
        Row row = new Row(w, req, all, cpuMicrosPerRequest, "%.2f");
        row.header("where");
        row.of("the servlet (chain to `HttpServlet.service`, its response included)", sum(requests, s -> s.has("HttpServlet.service")));
        row.of("Tomcat writing the response headers (`Http11Processor.prepareResponse`)", sum(requests, s -> s.has("prepareResponse")));
        row.of("  of which header names and values to bytes (`MessageBytes.toBytes`)", sum(requests, s -> s.has("MessageBytes.toBytes")));
        row.of("socket writes and reads (`write`/`read` system calls), all", sum(requests, s -> s.has("__GI_write") || s.has("__GI_read")
                || s.has("__libc_write") || s.has("__libc_read") || s.has("__write") || s.has("__read")));
        filterOwn(row, requests);
        top(row, requests, "the filter's own code by the frame on CPU (the leaf: where the time is spent)", 12,
                s -> name(s.frames()[s.frames().length - 1]));
        top(row, requests, "the filter's own code by the nearest method of Sluice or Jedis above the leaf (the JDK and native code it calls folded in)",
                12, ProfileSummary::nearestOwn);
        if (requests.stream().anyMatch(s -> s.has("SharedRoundTrips.evalsha"))) {
            row.of("the Redis call path (`SharedRoundTrips.evalsha`)", sum(requests, s -> s.has("SharedRoundTrips.evalsha")));
            row.of("  carrying round trips for others and itself (`carry`)", sum(requests, s -> s.has("SharedRoundTrips.carry")));
            row.of("  parked, waiting for a reply (`LockSupport.park`, the futex)", sum(requests, s -> s.has("SharedRoundTrips.await")
                    && s.has("LockSupport.park")));
            row.of("  waking the callers answered (`LockSupport.unpark`)", sum(requests, s -> s.has("SharedRoundTrips")
                    && s.has("LockSupport.unpark")));
        }
        if (requests.stream().anyMatch(s -> s.has("EvalshaFilter.doFilter"))) {
            row.of("the one EVALSHA per request (`Jedis.evalsha`, the servlet excluded)",
                    sum(requests, s -> s.has("EvalshaFilter.doFilter") && !s.has("HttpServlet.service")));
        }
        w.println();
        w.flush();
        return text.toString();
    }

    /**
     * An allocation profile's table ({@code event=alloc}, collapsed with {@code total}: bytes, the
     * last frame the allocated class).
     *
     * @param bytesPerRequest what the JVM's threads allocated per request over the profiled run
     */
    static String allocation(String variant, Path collapsed, double bytesPerRequest) throws IOException {
        Profile p = Profile.load(collapsed);
        List<Stack> requests = p.requests();
        long all = p.all();
        long req = p.requestTotal();
        StringWriter text = new StringWriter();
        PrintWriter w = new PrintWriter(text);
        w.printf(Locale.ROOT, "Allocation profile of `%s` (async-profiler, `event=alloc`, %,d sampled bytes, %.0f%% of them by "
                        + "Tomcat's request threads); the JVM allocated %,.0f bytes per request over the run (HotSpot's per-thread "
                        + "counters). Shares of the request threads' bytes, and bytes per request (share of all sampled bytes x that):%n%n",
                variant, all, 100.0 * req / Math.max(1, all), bytesPerRequest);
        Row row = new Row(w, req, all, bytesPerRequest, "%,.0f");
        row.header("where");
        row.of("the servlet (chain to `HttpServlet.service`, its response included)", sum(requests, s -> s.has("HttpServlet.service")));
        row.of("Tomcat writing the response headers (`Http11Processor.prepareResponse`)", sum(requests, s -> s.has("prepareResponse")));
        row.of("  of which header names and values to bytes (`MessageBytes.toBytes`)", sum(requests, s -> s.has("MessageBytes.toBytes")));
        filterOwn(row, requests);
        top(row, requests, "the filter's own allocations by class", 10, s -> name(s.frames()[s.frames().length - 1]));
        top(row, requests, "the filter's own allocations by the allocating method", 12,
                s -> s.frames().length > 1 ? name(s.frames()[s.frames().length - 2]) : "?");
        top(row, requests, "the filter's own allocations by the nearest method of Sluice or Jedis (the JDK code it calls folded in)", 12,
                ProfileSummary::nearestOwn);
        w.println();
        w.flush();
        return text.toString();
    }

    /**
     * Bytes per request of an allocation profile: {the filter's own code, Tomcat encoding the response
     * headers' names and values ({@code MessageBytes.toBytes})}, each its share of all sampled bytes x
     * {@code bytesPerRequest}.
     */
    static double[] allocationSplit(Path collapsed, double bytesPerRequest) throws IOException {
        Profile p = Profile.load(collapsed);
        double all = Math.max(1, p.all());
        long own = sum(p.requests(), s -> s.filterOwn() >= 0);
        long headers = sum(p.requests(), s -> s.has("MessageBytes.toBytes"));
        return new double[]{bytesPerRequest * own / all, bytesPerRequest * headers / all};
    }

    /** The filter's own code (the servlet excluded), by its callees two levels down. */
    private static void filterOwn(Row row, List<Stack> requests) {
        Map<String, Long> callees = new LinkedHashMap<>();
        Map<String, Map<String, Long>> deeper = new LinkedHashMap<>();
        long own = 0;
        String filter = null;
        for (Stack s : requests) {
            int at = s.filterOwn();
            if (at < 0) continue;
            own += s.samples();
            filter = s.frames()[at].replace('/', '.');
            String callee = at + 1 < s.frames().length ? name(s.frames()[at + 1]) : "(doFilter itself, inlined code included)";
            callees.merge(callee, s.samples(), Long::sum);
            String next = at + 2 < s.frames().length ? name(s.frames()[at + 2]) : "(itself)";
            deeper.computeIfAbsent(callee, k -> new LinkedHashMap<>()).merge(next, s.samples(), Long::sum);
        }
        if (filter == null) return;
        row.of("**the filter's own code** (under `" + filter.replaceAll(".*\\.([A-Za-z]+\\.doFilter).*", "$1")
                + "`, the servlet excluded)", own);
        callees.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8).forEach(e -> {
            row.of("  " + e.getKey(), e.getValue());
            deeper.get(e.getKey()).entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(3)
                    .filter(d -> d.getValue() * 10 >= e.getValue())
                    .forEach(d -> row.of("    " + d.getKey(), d.getValue()));
        });
    }

    /** The {@code limit} largest groups of the filter's own stacks by {@code key}, under a heading row. */
    private static void top(Row row, List<Stack> requests, String heading, int limit, java.util.function.Function<Stack, String> key) {
        Map<String, Long> groups = new LinkedHashMap<>();
        for (Stack s : requests) {
            if (s.filterOwn() >= 0) groups.merge(key.apply(s), s.samples(), Long::sum);
        }
        if (groups.isEmpty()) return;
        row.of(heading, -1);
        groups.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(limit)
                .forEach(e -> row.of("  `" + e.getKey() + "`", e.getValue()));
    }

    /** The innermost frame of Sluice ({@code dev.sluice}) or Jedis ({@code redis.clients}) in a filter stack: whose code it is. */
    private static String nearestOwn(Stack s) {
        int filter = s.filterOwn();
        for (int i = s.frames().length - 1; i > filter; i--) {
            String f = s.frames()[i];
            if (f.startsWith("dev/sluice/") || f.startsWith("redis/clients/") || f.startsWith("dev.sluice.") || f.startsWith("redis.clients.")) {
                return name(f);
            }
        }
        return name(s.frames()[filter]) + " (itself, or the container's code it calls)";
    }

    private static String name(String frame) {
        return frame.replace('/', '.').replaceAll("_\\[[a-z0-9]\\]$", "");
    }

    /** A table row printer: a share of the request threads' total, and optionally a per-request figure. */
    private record Row(PrintWriter w, long requestTotal, long all, double perRequest, String format) {
        void header(String what) {
            boolean per = !Double.isNaN(perRequest);
            w.println("| " + what + " | share |" + (per ? " per request |" : ""));
            w.println("|---|---:|" + (per ? "---:|" : ""));
        }

        void of(String what, long samples) {
            if (samples < 0) {
                w.println("| " + what + " | |" + (Double.isNaN(perRequest) ? "" : " |"));
                return;
            }
            w.printf(Locale.ROOT, "| %s | %.1f%% |", what, 100.0 * samples / Math.max(1, requestTotal));
            if (!Double.isNaN(perRequest)) w.printf(Locale.ROOT, " " + format + " |", perRequest * samples / Math.max(1, all));
            w.println();
        }
    }

    /** A profile: all its samples (or bytes), and the stacks of Tomcat's request threads with their total. */
    private record Profile(long all, List<Stack> requests, long requestTotal) {
        static Profile load(Path collapsed) throws IOException {
            List<Stack> stacks = new ArrayList<>();
            for (String line : Files.readAllLines(collapsed)) {
                int space = line.lastIndexOf(' ');
                if (space < 0) continue;
                stacks.add(new Stack(line.substring(0, space).split(";"), Long.parseLong(line.substring(space + 1).trim())));
            }
            List<Stack> requests = stacks.stream().filter(s -> s.has("Http11Processor.service")).toList();
            return new Profile(sum(stacks), requests, sum(requests));
        }
    }

    private static long sum(List<Stack> stacks) {
        long n = 0;
        for (Stack s : stacks) n += s.samples();
        return n;
    }

    private static long sum(List<Stack> stacks, Predicate<Stack> which) {
        return sum(stacks.stream().filter(which).toList());
    }
}
