package dev.sluice.bench.webapp;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.HashMap;
import java.util.Map;

/**
 * What the harness reads from the Tomcat JVM between two {@code wrk} runs, as {@code name value}
 * lines (deployed in a context of its own, so no filter sees these requests):
 * <ul>
 *   <li>{@code allocated_bytes}: bytes allocated by the JVM's threads since the previous call
 *       (HotSpot's per-thread allocation counters, {@code com.sun.management.ThreadMXBean}: exact,
 *       TLABs included; each live thread's count minus what it had at the previous call, a thread
 *       born since counted from zero; a thread that ended in between is lost, which Tomcat's pool
 *       does not do under load); {@code request_thread_allocated_bytes}: the same for Tomcat's
 *       request threads alone (named {@code *-exec-*});</li>
 *   <li>{@code gc_count}, {@code gc_ms}: totals since the JVM started;</li>
 *   <li>{@code sluice_*}: Sluice's counters ({@code dev.sluice:type=RateLimiter} MXBeans, summed
 *       over instances), totals since start: admitted, denied, local fallbacks, Redis timeouts and
 *       errors, decisions Redis made.</li>
 * </ul>
 */
public final class StatsServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private static final String[][] SLUICE = {
            {"sluice_allowed", "Allowed"}, {"sluice_denied", "Denied"}, {"sluice_fallback", "FallbackDecisions"},
            {"sluice_redis_timeouts", "RedisTimeouts"}, {"sluice_redis_errors", "RedisErrors"},
            {"sluice_redis_decisions", "RedisDecisions"}};

    private final Map<Long, Long> allocatedBefore = new HashMap<>(); // guarded by this

    @Override
    protected synchronized void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long[] ids = threads.getAllThreadIds();
        long[] allocated = threads.getThreadAllocatedBytes(ids);
        ThreadInfo[] infos = threads.getThreadInfo(ids);
        long all = 0;
        long requestThreads = 0;
        Map<Long, Long> now = new HashMap<>();
        for (int i = 0; i < ids.length; i++) {
            if (allocated[i] < 0 || infos[i] == null) continue; // ended meanwhile
            now.put(ids[i], allocated[i]);
            long delta = allocated[i] - allocatedBefore.getOrDefault(ids[i], 0L);
            all += delta;
            if (infos[i].getThreadName().contains("-exec-")) requestThreads += delta;
        }
        allocatedBefore.clear();
        allocatedBefore.putAll(now);

        long gcCount = 0;
        long gcMs = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcCount += Math.max(0, gc.getCollectionCount());
            gcMs += Math.max(0, gc.getCollectionTime());
        }

        resp.setContentType("text/plain");
        resp.setCharacterEncoding("UTF-8");
        PrintWriter w = resp.getWriter();
        w.println("allocated_bytes " + all);
        w.println("request_thread_allocated_bytes " + requestThreads);
        w.println("threads " + ids.length);
        w.println("gc_count " + gcCount);
        w.println("gc_ms " + gcMs);
        long[] sluice = new long[SLUICE.length];
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            for (ObjectName name : server.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null)) {
                for (int i = 0; i < SLUICE.length; i++) {
                    sluice[i] += ((Number) server.getAttribute(name, SLUICE[i][1])).longValue();
                }
            }
        } catch (JMException e) {
            throw new IOException("reading Sluice's MXBeans", e);
        }
        for (int i = 0; i < SLUICE.length; i++) w.println(SLUICE[i][0] + " " + sluice[i]);
    }
}
