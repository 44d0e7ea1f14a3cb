package dev.sluice.it.support;

import dev.sluice.testing.TestRedis;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a test deploys: the example WAR with a Sluice configuration and the settings it reads, under
 * a key prefix of its own in the test Redis. Immutable: {@link #with} and {@link #env} return copies.
 *
 * <ul>
 *   <li>{@link #sluice()}: init-params of the WAR's {@code sluice} filter, which win over its
 *       {@code ratelimit.properties}; always {@code redis.url} (the test Redis), {@code key-prefix}
 *       (fresh) and {@code redis.timeout} (2 s: a shared 2-core machine under the whole suite must not fall back; 500 ms did, once, at load 8), unless
 *       the test sets them.</li>
 *   <li>{@link #environment()}: what an operator exports before starting the server, read by the
 *       {@code ${NAME:default}} placeholders of the WAR's {@code ratelimit.properties} (e.g.
 *       {@code SLUICE_API_LIMIT}): system properties of the test JVM while an embedded deployment
 *       runs (src-it), the environment of the server processes (dist-it, which restarts them when it
 *       changes: a few seconds).</li>
 *   <li>{@link #dispatchers()}: the dispatcher types of the {@code sluice} filter's mapping, when a
 *       test changes them ({@link #mappedFor}).</li>
 * </ul>
 */
public final class ExampleApp {

    private final String name;
    private final Map<String, String> sluice;
    private final Map<String, String> environment;
    private final List<String> dispatchers;

    private ExampleApp(String name, Map<String, String> sluice, Map<String, String> environment, List<String> dispatchers) {
        this.name = name;
        this.sluice = Collections.unmodifiableMap(sluice);
        this.environment = Collections.unmodifiableMap(environment);
        this.dispatchers = dispatchers;
    }

    /** The WAR as it is, pointed at the test Redis under a fresh key prefix; {@code name} shows in the prefix. */
    public static ExampleApp named(String name) {
        Map<String, String> sluice = new LinkedHashMap<>();
        sluice.put("redis.url", TestRedis.url());
        sluice.put("key-prefix", TestRedis.uniquePrefix(name));
        sluice.put("redis.timeout", "2s");
        return new ExampleApp(name, sluice, new LinkedHashMap<>(), null);
    }

    /** A copy with these Sluice keys set (key, value, key, value, ...), e.g. {@code with("rule.api.limit", "5")}. */
    public ExampleApp with(String... keyValues) {
        Map<String, String> copy = new LinkedHashMap<>(sluice);
        putPairs(copy, keyValues);
        return new ExampleApp(name, copy, environment, dispatchers);
    }

    /** A copy with these settings exported (name, value, ...), e.g. {@code env("SLUICE_API_LIMIT", "60")}. */
    public ExampleApp env(String... nameValues) {
        Map<String, String> copy = new LinkedHashMap<>(environment);
        putPairs(copy, nameValues);
        return new ExampleApp(name, sluice, copy, dispatchers);
    }

    /**
     * A copy whose {@code sluice} filter-mapping lists only these dispatcher types; none at all is
     * the {@code web.xml} default, {@code REQUEST} only, which most applications keep. (The WAR as
     * built lists every type.)
     */
    public ExampleApp mappedFor(String... dispatcherTypes) {
        return new ExampleApp(name, sluice, environment, List.of(dispatcherTypes));
    }

    private static void putPairs(Map<String, String> into, String... pairs) {
        if (pairs.length % 2 != 0) throw new IllegalArgumentException("key, value pairs expected: " + String.join(", ", pairs));
        for (int i = 0; i < pairs.length; i += 2) into.put(pairs[i], pairs[i + 1]);
    }

    public String name() {
        return name;
    }

    /** The filter's init-params, defaults included. */
    public Map<String, String> sluice() {
        return sluice;
    }

    /** The settings exported for the WAR's placeholders. */
    public Map<String, String> environment() {
        return environment;
    }

    /** The dispatcher types the filter's mapping lists, or {@code null}: as the WAR has it (every type). */
    public List<String> dispatchers() {
        return dispatchers;
    }

    public String redisUrl() {
        return sluice.get("redis.url");
    }

    /** The prefix of every key the deployment writes. */
    public String keyPrefix() {
        return sluice.get("key-prefix");
    }

    @Override
    public String toString() {
        return name + " " + sluice + (environment.isEmpty() ? "" : " env " + environment)
                + (dispatchers == null ? "" : " mapped for " + (dispatchers.isEmpty() ? "REQUEST (default)" : dispatchers));
    }
}
