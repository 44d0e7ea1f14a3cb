package dev.sluice.dist;

import dev.sluice.testing.TestRedis;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

/** Starting and stopping several servers at once, and the environment each server process gets. */
final class Servers {

    /** The API rule's limit the fleets share. */
    static final int LIMIT = 60;

    /** Not the common pool: on 2 cores it runs one task at a time. */
    private static final ExecutorService PARALLEL = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "dist-it-parallel");
        t.setDaemon(true);
        return t;
    });

    private Servers() {
    }

    /**
     * What an operator exports before starting the server: the Redis, and the values the example
     * WAR's {@code ratelimit.properties} reads through {@code ${...}} placeholders; here a
     * sliding-window-log of {@link #LIMIT} an hour (exact, and no window boundary to straddle).
     */
    static Map<String, String> environment(String fleetName) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("REDIS_URL", TestRedis.url());
        env.put("SLUICE_KEY_PREFIX", TestRedis.uniquePrefix("dist-" + fleetName));
        env.put("SLUICE_API_ALGORITHM", "sliding-window-log");
        env.put("SLUICE_API_LIMIT", Integer.toString(LIMIT));
        env.put("SLUICE_API_WINDOW", "1h");
        return env;
    }

    /** Starts every server in parallel (each is its own JVM); if one fails, all are stopped. */
    static List<Server> startAll(List<? extends Server> servers) {
        List<CompletableFuture<Server>> starts = new ArrayList<>();
        for (Server s : servers) starts.add(CompletableFuture.supplyAsync(s::start, PARALLEL));
        try {
            CompletableFuture.allOf(starts.toArray(new CompletableFuture[0])).join();
        } catch (CompletionException e) {
            closeAll(servers);
            throw unwrapped(e);
        }
        return List.copyOf(servers);
    }

    /** Runs {@code action} on every server in parallel (deployments, undeployments). */
    static void eachInParallel(List<Server> servers, Consumer<Server> action) {
        List<CompletableFuture<Void>> runs = new ArrayList<>();
        for (Server s : servers) runs.add(CompletableFuture.runAsync(() -> action.accept(s), PARALLEL));
        try {
            CompletableFuture.allOf(runs.toArray(new CompletableFuture[0])).join();
        } catch (CompletionException e) {
            throw unwrapped(e);
        }
    }

    private static RuntimeException unwrapped(CompletionException e) {
        if (e.getCause() instanceof RuntimeException r) return r;
        if (e.getCause() instanceof Error err) throw err;
        return e;
    }

    static void closeAll(List<? extends Server> servers) {
        List<CompletableFuture<Void>> stops = new ArrayList<>();
        for (Server s : servers) stops.add(CompletableFuture.runAsync(s::close, PARALLEL));
        CompletableFuture.allOf(stops.toArray(new CompletableFuture[0])).join();
    }
}
