package dev.sluice.it.support;

import dev.sluice.testing.Poll;

import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * What the example's {@code ExportServlet} measured of the exports it ran on one instance
 * ({@code GET /exports/stats}), per client as the {@code exports} rule counts them (the customer,
 * else the address): how many run now, the most that ran at once there, how many ended, and when
 * each ran. Its runs carry one machine's clock, so the runs of several instances on this machine
 * can be laid side by side: {@link #mostAtOnce} is how many of a client's exports ran at once
 * across a fleet, measured by the application itself.
 */
public record ExportStats(Map<String, Client> clients) {

    /** One client's exports on one instance; {@code runs} from start to end, in µs since the epoch. */
    public record Client(int inFlight, int maxInFlight, long ended, List<long[]> runs) {
        static final Client NONE = new Client(0, 0, 0, List.of());
    }

    /** What instance {@code instance} of {@code app} measured so far. */
    public static ExportStats of(Deployment app, int instance) {
        return at(app.uri(instance, "/exports/stats"));
    }

    /** What the instance serving {@code stats} (its {@code /exports/stats}) measured so far. */
    public static ExportStats at(URI stats) {
        return parse(Http.get(stats));
    }

    /** Forgets what instance {@code instance} measured of the exports that ended; each maximum starts afresh. */
    public static ExportStats reset(Deployment app, int instance) {
        return parse(app.send(instance, "POST", "/exports/stats/reset", null));
    }

    /**
     * Ends the exports of instance {@code instance} sent with {@code ?until=<word>} (they answer at
     * once); returns how many there were.
     */
    public static int release(Deployment app, int instance, String word) {
        HttpResponse<String> released = app.send(instance, "POST", "/exports/stats/release?until=" + word, null);
        if (released.statusCode() != 200) throw new AssertionError(released.uri() + " answered " + released.statusCode());
        return Integer.parseInt(released.body().trim().substring("released ".length()));
    }

    /** Waits until {@code n} exports of {@code client} run on instance {@code instance} (10 s at most). */
    public static void awaitInFlight(Deployment app, int instance, String client, int n) {
        Poll.until(Duration.ofSeconds(10), n + " exports of " + client + " running on instance " + instance,
                () -> of(app, instance).client(client).inFlight() == n);
    }

    /** What every instance of {@code app} measured so far, in order. */
    public static List<ExportStats> ofEvery(Deployment app) {
        return IntStream.range(0, app.size()).mapToObj(i -> of(app, i)).toList();
    }

    /** {@code client}'s exports on this instance (none yet: all zero). */
    public Client client(String client) {
        return clients.getOrDefault(client, Client.NONE);
    }

    /**
     * The most exports of {@code client} that ran at the same instant on any of {@code instances}
     * together. An export that ended at the very microsecond another began did not overlap it:
     * a slot is freed after its export ended and taken before the next began.
     */
    public static int mostAtOnce(List<ExportStats> instances, String client) {
        List<long[]> edges = new ArrayList<>(); // {time, +1 a start or -1 an end}
        for (ExportStats s : instances) {
            for (long[] run : s.client(client).runs()) {
                edges.add(new long[]{run[0], 1});
                edges.add(new long[]{run[1], -1});
            }
        }
        edges.sort(Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> e[1]));
        int now = 0;
        int most = 0;
        for (long[] e : edges) {
            now += (int) e[1];
            most = Math.max(most, now);
        }
        return most;
    }

    /** {@code client line}: {@code client <key> in-flight <n> max <n> ended <n>}, then {@code run <key> <start> <end>}. */
    private static ExportStats parse(HttpResponse<String> stats) {
        if (stats.statusCode() != 200) throw new AssertionError(stats.uri() + " answered " + stats.statusCode());
        String text = stats.body();
        Map<String, int[]> figures = new HashMap<>();
        Map<String, Long> ended = new HashMap<>();
        Map<String, List<long[]>> runs = new HashMap<>();
        for (String line : text.lines().toList()) {
            String[] w = line.split(" ");
            if (w[0].equals("client") && w.length == 8) {
                figures.put(w[1], new int[]{Integer.parseInt(w[3]), Integer.parseInt(w[5])});
                ended.put(w[1], Long.parseLong(w[7]));
            } else if (w[0].equals("run") && w.length == 4) {
                long[] run = {Long.parseLong(w[2]), Long.parseLong(w[3])};
                runs.computeIfAbsent(w[1], k -> new ArrayList<>()).add(run);
            } else {
                throw new AssertionError("not a line of /exports/stats: '" + line + "' in:\n" + text);
            }
        }
        Map<String, Client> clients = new HashMap<>();
        figures.forEach((key, f) -> clients.put(key, new Client(f[0], f[1], ended.get(key),
                List.copyOf(runs.getOrDefault(key, List.of())))));
        return new ExportStats(Map.copyOf(clients));
    }
}
