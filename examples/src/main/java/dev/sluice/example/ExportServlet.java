package dev.sluice.example;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A stand-in for a long export, what the example's {@code exports} rule guards (at most two of a
 * client's exports in flight at once, across all instances together): {@code GET /exports/<name>}
 * runs for {@code ?ms=} milliseconds (default 1,000, at most 60,000), on the container's thread, or
 * with {@code ?async=true} asynchronously, a timer completing it while the thread serves others.
 * With {@code ?until=<word>} it ends sooner if {@code POST /exports/stats/release?until=<word>}
 * comes first, which releases every export of this instance waiting for that word.
 *
 * <p>It measures for itself what the rule promises, per client as the rule counts them (the
 * customer {@link ApiKeyFilter} authenticated, else the address): how many of the client's exports
 * run on this instance now, the most that ever ran at once, how many ended, and when each of the
 * latest ran (its start and end on this machine's clock, in microseconds since the epoch, so that
 * the runs of several instances on one machine can be laid side by side). An export counts as
 * running from the moment the servlet starts it to the moment before it answers: within the time
 * its request holds its slot. {@code GET /exports/stats} shows the figures as text, one line per
 * client, then one per run:
 *
 * <pre>
 * client 127.0.0.1 in-flight 1 max 2 ended 41
 * run 127.0.0.1 1764643200123456 1764643200173456
 * </pre>
 *
 * {@code POST /exports/stats/reset} forgets the runs that ended and starts each maximum afresh from
 * what runs now. All three are excluded from the rules ({@code ratelimit.properties}). It remembers at
 * most {@value #MAX_CLIENTS} clients and the latest {@value #MAX_RUNS} runs of each.
 */
public class ExportServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    static final long DEFAULT_MS = 1_000;
    static final long MAX_MS = 60_000;
    static final int MAX_CLIENTS = 100;
    static final int MAX_RUNS = 4_096;

    /** What one client's exports did on this instance. Guarded by itself. */
    private static final class Client {
        int inFlight;
        int maxInFlight;
        long ended;
        final ArrayDeque<long[]> runs = new ArrayDeque<>();
    }

    /** The clients, the least recently seen first. Guarded by itself. */
    private final transient Map<String, Client> clients = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Client> eldest) {
            return size() > MAX_CLIENTS;
        }
    };
    /** The asynchronous exports not yet answered. */
    private final transient Set<AsyncExport> pending = ConcurrentHashMap.newKeySet();
    /** What ends each export waiting for a word ({@code ?until=}), by word. */
    private final transient Map<String, Set<Runnable>> waiting = new ConcurrentHashMap<>();
    private transient ScheduledExecutorService timer;

    @Override
    public void init() {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "example-exports-timer");
            t.setDaemon(true);
            return t;
        });
    }

    /** An undeploy stops the timer and answers the asynchronous exports still running. */
    @Override
    public void destroy() {
        timer.shutdownNow();
        try {
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List.copyOf(pending).forEach(Runnable::run);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getPathInfo() == null ? "/" : req.getPathInfo();
        if (path.equals("/stats")) {
            stats(resp);
            return;
        }
        if (path.startsWith("/stats/")) { // excluded from the rules: never an export
            resp.sendError(HttpServletResponse.SC_METHOD_NOT_ALLOWED);
            return;
        }
        long ms;
        try {
            ms = req.getParameter("ms") == null ? DEFAULT_MS : Long.parseLong(req.getParameter("ms"));
        } catch (NumberFormatException e) {
            ms = -1;
        }
        if (ms < 0 || ms > MAX_MS) {
            resp.sendError(HttpServletResponse.SC_BAD_REQUEST, "ms: a whole number of milliseconds, 0 to " + MAX_MS);
            return;
        }
        String until = req.getParameter("until");
        Client client = started(clientOf(req));
        long startedAt = micros();
        if ("true".equals(req.getParameter("async"))) {
            AsyncContext async = req.startAsync();
            async.setTimeout(ms + 30_000);
            AsyncExport export = new AsyncExport(async, client, startedAt, path, ms, until);
            pending.add(export);
            waitFor(until, export);
            timer.schedule(export, ms, TimeUnit.MILLISECONDS);
            return;
        }
        CountDownLatch released = new CountDownLatch(1);
        Runnable release = released::countDown;
        waitFor(until, release);
        try {
            released.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            forget(until, release);
        }
        ended(client, startedAt);
        answer(resp, path, ms);
    }

    /** An export answered asynchronously, once: by the timer, a release or an undeploy, whichever comes first. */
    private final class AsyncExport implements Runnable {
        private final AsyncContext async;
        private final Client client;
        private final long startedAt;
        private final String path;
        private final long ms;
        private final String until;
        private final AtomicBoolean answered = new AtomicBoolean();

        AsyncExport(AsyncContext async, Client client, long startedAt, String path, long ms, String until) {
            this.async = async;
            this.client = client;
            this.startedAt = startedAt;
            this.path = path;
            this.ms = ms;
            this.until = until;
        }

        @Override
        public void run() {
            if (!answered.compareAndSet(false, true)) return;
            pending.remove(this);
            forget(until, this);
            ended(client, startedAt);
            try {
                answer((HttpServletResponse) async.getResponse(), path, ms);
            } catch (IOException | RuntimeException clientGone) {
                // the client went away: the export is over all the same
            }
            try {
                async.complete();
            } catch (IllegalStateException timedOut) {
                // the container's async timeout answered it already
            }
        }
    }

    /** Makes {@code release} what ends an export waiting for {@code until} (none: nothing to do). */
    private void waitFor(String until, Runnable release) {
        if (until == null) return;
        waiting.compute(until, (word, releases) -> {
            Set<Runnable> all = releases == null ? ConcurrentHashMap.newKeySet() : releases;
            all.add(release);
            return all;
        });
    }

    /** The export {@code release} ended is no longer waiting; a word nothing waits for is forgotten. */
    private void forget(String until, Runnable release) {
        if (until == null) return;
        waiting.computeIfPresent(until, (word, releases) -> {
            releases.remove(release);
            return releases.isEmpty() ? null : releases;
        });
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        if ("/stats/release".equals(req.getPathInfo()) && req.getParameter("until") != null) {
            Set<Runnable> ends = waiting.remove(req.getParameter("until"));
            if (ends != null) ends.forEach(Runnable::run);
            resp.setContentType("text/plain");
            resp.getWriter().println("released " + (ends == null ? 0 : ends.size()));
            return;
        }
        if (!"/stats/reset".equals(req.getPathInfo())) {
            resp.sendError(HttpServletResponse.SC_METHOD_NOT_ALLOWED);
            return;
        }
        synchronized (clients) {
            for (Client c : clients.values()) {
                synchronized (c) {
                    c.maxInFlight = c.inFlight;
                    c.ended = 0;
                    c.runs.clear();
                }
            }
        }
        stats(resp);
    }

    /** Who the exports rule counts: the authenticated customer, else the address. */
    private static String clientOf(HttpServletRequest req) {
        Object customer = req.getAttribute(ApiKeyFilter.CUSTOMER);
        return (customer instanceof String s ? s : req.getRemoteAddr()).replaceAll("\\s", "_");
    }

    private Client started(String key) {
        Client c;
        synchronized (clients) {
            c = clients.computeIfAbsent(key, k -> new Client());
        }
        synchronized (c) {
            c.inFlight++;
            c.maxInFlight = Math.max(c.maxInFlight, c.inFlight);
        }
        return c;
    }

    /** The export is over: counted as such before its answer leaves (and so before its slot is freed). */
    private static void ended(Client c, long startedAt) {
        synchronized (c) {
            c.inFlight--;
            c.ended++;
            if (c.runs.size() == MAX_RUNS) c.runs.removeFirst();
            c.runs.addLast(new long[]{startedAt, micros()});
        }
    }

    private static void answer(HttpServletResponse resp, String path, long ms) throws IOException {
        resp.setContentType("application/json");
        resp.getWriter().write("{\"export\":\"" + path.replaceAll("[^A-Za-z0-9/_.-]", "") + "\",\"ms\":" + ms + "}");
    }

    private void stats(HttpServletResponse resp) throws IOException {
        Map<String, Client> snapshot;
        synchronized (clients) {
            snapshot = new LinkedHashMap<>(clients);
        }
        resp.setContentType("text/plain");
        resp.setHeader("Cache-Control", "no-store");
        PrintWriter out = resp.getWriter();
        List<String> runs = new ArrayList<>();
        for (Map.Entry<String, Client> e : snapshot.entrySet()) {
            Client c = e.getValue();
            synchronized (c) {
                out.printf("client %s in-flight %d max %d ended %d%n", e.getKey(), c.inFlight, c.maxInFlight, c.ended);
                for (long[] run : c.runs) runs.add("run " + e.getKey() + " " + run[0] + " " + run[1]);
            }
        }
        for (String run : runs) out.println(run);
    }

    /** Now, in microseconds since the epoch: comparable between the instances of one machine. */
    private static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
    }
}
