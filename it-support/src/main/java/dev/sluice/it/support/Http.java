package dev.sluice.it.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * A plain HTTP/1.1 client, as an ordinary user of the application would have. Headers are given as
 * name, value pairs. The JDK's client refuses to set a few headers itself ({@code Host},
 * {@code Connection}, {@code Content-Length}, ...): a test of such input needs a socket.
 */
public final class Http {

    static {
        // A server may close a kept-alive connection while the client takes it from its pool (the
        // JDK's own source says its pool can hand out one whose close it has not seen yet); the
        // request sent on it fails before a byte of an answer. Browsers and most clients send that
        // request again on a new connection; the JDK's client does so only for GET-like methods
        // unless this is set (read when it sends its first request, which is after this). Without
        // it a POST of the made-up keys contract failed once in CI on Jetty ee11 ("HTTP/1.1 header
        // parser received no bytes"), and never in 400,000 requests of it run here.
        System.setProperty("jdk.httpclient.enableAllMethodRetry", "true");
    }

    public static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private Http() {
    }

    public static HttpResponse<String> get(URI uri, String... headers) {
        return send(HttpRequest.newBuilder(uri).GET(), headers);
    }

    /** A form POST of a failed login ({@code user=a&password=b}). */
    public static HttpResponse<String> post(URI uri, String... headers) {
        return postForm(uri, "user=a&password=b", headers);
    }

    /** A form POST of {@code form} ({@code user=alice&password=...}). */
    public static HttpResponse<String> postForm(URI uri, String form, String... headers) {
        return send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(form))
                .header("Content-Type", "application/x-www-form-urlencoded"), headers);
    }

    /** Any method ({@code HEAD}, {@code PUT}, {@code OPTIONS}, ...), with {@code body} unless null. */
    public static HttpResponse<String> send(String method, URI uri, String body, String... headers) {
        HttpRequest.BodyPublisher publisher = body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
        return send(HttpRequest.newBuilder(uri).method(method, publisher), headers);
    }

    /** Sends what {@code builder} describes, plus {@code headers}, with a 20 s timeout. */
    public static HttpResponse<String> send(HttpRequest.Builder builder, String... headers) {
        try {
            return CLIENT.send(build(builder, headers), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A GET of {@code uri} sent now and answered later, on a connection of its own while others are
     * open: a request the test lets run while it sends others.
     */
    public static CompletableFuture<HttpResponse<String>> getAsync(URI uri, String... headers) {
        return CLIENT.sendAsync(build(HttpRequest.newBuilder(uri).GET(), headers), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest build(HttpRequest.Builder builder, String... headers) {
        if (headers.length % 2 != 0) throw new IllegalArgumentException("headers come as name, value pairs");
        builder.timeout(Duration.ofSeconds(20));
        for (int i = 0; i + 1 < headers.length; i += 2) {
            builder.header(headers[i], headers[i + 1]);
        }
        return builder.build();
    }

    /** Whether anything answers HTTP at {@code uri} (whatever the status). */
    public static boolean answers(URI uri) {
        try {
            get(uri);
            return true;
        } catch (UncheckedIOException e) {
            return false;
        }
    }
}
