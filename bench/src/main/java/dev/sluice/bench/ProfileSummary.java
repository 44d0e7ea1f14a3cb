package dev.sluice.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads an async-profiler CPU profile of the HTTP harness in collapsed form (one line per stack:
 * frames root first, separated by {@code ;}, then the sample count) and says where the time of
 * Tomcat's request threads goes: the filter's own code (under {@code RateLimitFilter.doFilter}, the
 * servlet it calls excluded) by callee, Tomcat writing the response headers, and for Sluice on
 * Redis the call path (waiting in a shared round trip, parking and waking, the socket).
 *
 * <pre>java -cp benchmarks.jar dev.sluice.bench.ProfileSummary VARIANT collapsed.txt</pre>
 */
public final class ProfileSummary {

    private record Stack(String[] frames, long samples) {
        boolean has(String frame) {
            for (String f : frames) if (f.contains(frame)) return true;
            return false;
        }

        int last(String frame) {
            for (int i = frames.length - 1; i >= 0; i--) if (frames[i].contains(frame)) return i;
            return -1;
        }
    }

    private ProfileSummary() {
    }

    public static void main(String[] args) throws IOException {
        String variant = args[0];
        List<Stack> stacks = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[1]))) {
            int space = line.lastIndexOf(' ');
            if (space < 0) continue;
            stacks.add(new Stack(line.substring(0, space).split(";"), Long.parseLong(line.substring(space + 1).trim())));
        }
        long all = sum(stacks);
        List<Stack> requests = stacks.stream().filter(s -> s.has("Http11Processor.service")).toList();
        long req = sum(requests);
        System.out.printf(Locale.ROOT, "Profile of `%s` (async-profiler, CPU time of the Tomcat JVM, %,d samples, %.0f%% of them in "
                + "Tomcat's request threads; the rest: its poller and acceptor, the JIT, GC). Shares of the request threads' time:%n%n",
                variant, all, 100.0 * req / all);
        System.out.println("| where | share |");
        System.out.println("|---|---:|");
        row("the servlet (chain to `HttpServlet.service`, its response included)", share(requests, s -> s.has("HttpServlet.service"), req));
        row("Tomcat writing the response headers (`Http11Processor.prepareResponse`)", share(requests, s -> s.has("prepareResponse"), req));
        row("  of which header names and values to bytes (`MessageBytes.toBytes`)", share(requests, s -> s.has("MessageBytes.toBytes"), req));
        row("socket writes and reads (`write`/`read` system calls), all", share(requests, s -> s.has("__GI_write") || s.has("__GI_read")
                || s.has("__libc_write") || s.has("__libc_read"), req));
        List<Stack> filter = requests.stream().filter(s -> s.has("RateLimitFilter.doFilter")).toList();
        if (!filter.isEmpty()) {
            Map<String, Long> own = new LinkedHashMap<>();
            long ownTotal = 0;
            for (Stack s : filter) {
                int at = s.last("RateLimitFilter.doFilter");
                boolean servlet = false;
                for (int i = at + 1; i < s.frames().length; i++) servlet |= s.frames()[i].contains("HttpServlet.service");
                if (servlet) continue;
                ownTotal += s.samples();
                String callee = at + 1 < s.frames().length ? s.frames()[at + 1] : "(doFilter itself, inlined code included)";
                own.merge(callee.replace('/', '.'), s.samples(), Long::sum);
            }
            row("**the filter's own code** (under `RateLimitFilter.doFilter`, the servlet excluded)", 100.0 * ownTotal / req);
            own.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                    .forEach(e -> row("  " + e.getKey(), 100.0 * e.getValue() / req));
        }
        if (requests.stream().anyMatch(s -> s.has("SharedRoundTrips.evalsha"))) {
            row("the Redis call path (`SharedRoundTrips.evalsha`)", share(requests, s -> s.has("SharedRoundTrips.evalsha"), req));
            row("  carrying round trips for others and itself (`carry`)", share(requests, s -> s.has("SharedRoundTrips.carry"), req));
            row("  parked, waiting for a reply (`LockSupport.park`, the futex)", share(requests, s -> s.has("SharedRoundTrips.await")
                    && s.has("LockSupport.park"), req));
            row("  waking the callers answered (`LockSupport.unpark`)", share(requests, s -> s.has("SharedRoundTrips")
                    && s.has("LockSupport.unpark"), req));
        }
        if (requests.stream().anyMatch(s -> s.has("EvalshaFilter.doFilter"))) {
            row("the one EVALSHA per request (`Jedis.evalsha`, the servlet excluded)", share(requests,
                    s -> s.has("EvalshaFilter.doFilter") && !s.has("HttpServlet.service"), req));
        }
        System.out.println();
    }

    private static void row(String what, double percent) {
        System.out.printf(Locale.ROOT, "| %s | %.1f%% |%n", what, percent);
    }

    private static double share(List<Stack> stacks, java.util.function.Predicate<Stack> which, long of) {
        return 100.0 * sum(stacks.stream().filter(which).toList()) / of;
    }

    private static long sum(List<Stack> stacks) {
        long n = 0;
        for (Stack s : stacks) n += s.samples();
        return n;
    }
}
