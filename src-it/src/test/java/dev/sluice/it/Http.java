package dev.sluice.it;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A plain HTTP/1.1 client, as an ordinary user of the application would have. */
final class Http {

    static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private Http() {
    }

    static HttpResponse<String> get(URI uri, String... headers) {
        return send(HttpRequest.newBuilder(uri).GET(), headers);
    }

    static HttpResponse<String> post(URI uri, String... headers) {
        return send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString("user=a&password=b"))
                .header("Content-Type", "application/x-www-form-urlencoded"), headers);
    }

    /** A form POST of {@code form} ({@code user=alice&password=...}). */
    static HttpResponse<String> postForm(URI uri, String form, String... headers) {
        return send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(form))
                .header("Content-Type", "application/x-www-form-urlencoded"), headers);
    }

    private static HttpResponse<String> send(HttpRequest.Builder builder, String... headers) {
        builder.timeout(Duration.ofSeconds(20));
        for (int i = 0; i + 1 < headers.length; i += 2) {
            builder.header(headers[i], headers[i + 1]);
        }
        try {
            return CLIENT.send(builder.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
