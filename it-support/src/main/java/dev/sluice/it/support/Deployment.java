package dev.sluice.it.support;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The example WAR deployed and serving on {@link #size()} instances of one container, all sharing
 * one Redis: what a behaviour test is written against, whatever the container ({@link Container}
 * starts one). Instances are numbered from 0. Closing it undeploys the WAR from every instance.
 */
public interface Deployment extends AutoCloseable {

    /** What was deployed: the Sluice configuration, the settings, the Redis and the key prefix. */
    ExampleApp app();

    /** How many instances serve the WAR. */
    int size();

    /** {@code path} (with its query, if any) inside the application on {@code instance}: {@code uri(0, "/api/x?a=1")}. */
    URI uri(int instance, String path);

    /**
     * What the container of {@code instance} logged since this deployment began. In one JVM
     * (src-it's embedded containers) every instance and the test itself write to the one standard
     * error: the text is the same for every instance. In dist-it, the server's own logs.
     */
    String log(int instance);

    /**
     * The attribute ({@code Allowed}, {@code Reloads}, {@code BreakerState}, ...) of each instance's
     * Sluice MXBean ({@code dev.sluice:type=RateLimiter}), read over JMX; one value an instance
     * once the filter has started (Undertow starts it at the first request).
     */
    List<Object> mxbean(String attribute);

    /** The sum of a numeric attribute of {@link #mxbean} over the instances. */
    default long mxbeanTotal(String attribute) {
        return mxbean(attribute).stream().mapToLong(v -> ((Number) v).longValue()).sum();
    }

    /** {@link #uri} of {@code path} on every instance, in order. */
    default List<URI> uris(String path) {
        return IntStream.range(0, size()).mapToObj(i -> uri(i, path)).toList();
    }

    /** A GET of {@code path} on {@code instance}, with headers as name, value pairs. */
    default HttpResponse<String> get(int instance, String path, String... headers) {
        return Http.get(uri(instance, path), headers);
    }

    /** A request of any method to {@code path} on {@code instance}, with {@code body} unless null. */
    default HttpResponse<String> send(int instance, String method, String path, String body, String... headers) {
        return Http.send(method, uri(instance, path), body, headers);
    }

    /** A request to build further ({@link HttpRequest.Builder}); send it with {@link Http#send(HttpRequest.Builder, String...)}. */
    default HttpRequest.Builder request(int instance, String path) {
        return HttpRequest.newBuilder(uri(instance, path));
    }

    /** How many keys exist in Redis under the deployment's key prefix now. */
    default long redisKeys() {
        return redisKeys(app().redisUrl(), app().keyPrefix());
    }

    /** How many keys exist at {@code redisUrl} under {@code prefix} ({@code SCAN}, never {@code KEYS}). */
    static long redisKeys(String redisUrl, String prefix) {
        try (Jedis jedis = new Jedis(URI.create(redisUrl))) {
            ScanParams match = new ScanParams().match(prefix.replaceAll("([*?\\[\\]\\\\])", "\\\\$1") + "*").count(1000);
            long keys = 0;
            String cursor = ScanParams.SCAN_POINTER_START;
            do {
                ScanResult<String> page = jedis.scan(cursor, match);
                keys += page.getResult().size();
                cursor = page.getCursor();
            } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            return keys;
        }
    }

    @Override
    void close() throws Exception;
}
