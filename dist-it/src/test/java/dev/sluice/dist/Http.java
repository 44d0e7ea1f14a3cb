package dev.sluice.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A plain HTTP/1.1 client, as an ordinary user of the application would have (as in src-it). */
final class Http {

    static final HttpClient CLIENT = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private Http() {
    }

    static HttpResponse<String> get(URI uri) {
        try {
            return CLIENT.send(HttpRequest.newBuilder(uri).GET().timeout(Duration.ofSeconds(20)).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Whether anything answers HTTP at {@code uri} (whatever the status). */
    static boolean answers(URI uri) {
        try {
            get(uri);
            return true;
        } catch (UncheckedIOException e) {
            return false;
        }
    }
}
