package dev.sluice.it.support;

import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example cannot be walked around with made-up API keys: 1,000 of them, each sent to every path
 * of the example (the API, a forward to it, an include of it, the login form and its older name, the
 * health check, an error page), get no answer of the application's, and create no counter in Redis;
 * without a key the same client gets the api rule's limit, once, over all its paths. src-it runs it
 * on every embedded container; dist-it does not (10,000 requests through a real server's deployment
 * take longer than the suite's budget per distribution, for what the embedded ones show).
 */
public interface MadeUpKeysContract extends ContainerTest {

    int KEYS = 1_000;
    int LIMIT = 10;

    /** Every path of the example, with its method: what a client can reach. */
    List<String[]> PATHS = List.of(new String[]{"GET", "/api/x"}, new String[]{"GET", "/forward/x"},
            new String[]{"GET", "/include/x"}, new String[]{"POST", "/login"}, new String[]{"POST", "/signin"},
            new String[]{"GET", "/login"}, new String[]{"GET", "/health"}, new String[]{"GET", "/api/missing/x"},
            new String[]{"GET", "/no-such-page"});

    @Test
    default void madeUpApiKeysOnEveryPathGetNothingAndCreateNoCounter() throws Exception {
        try (Deployment app = container().deploy(ExampleApp.named("made-up-keys")
                .with("rule.api.algorithm", "sliding-window-log", "rule.api.limit", Integer.toString(LIMIT),
                        "rule.api.window", "1h", "rule.login.window", "1h"), 1)) {
            Map<String, Integer> statuses = new TreeMap<>();
            ExecutorService clients = Executors.newFixedThreadPool(8);
            try {
                List<Future<String>> answers = new ArrayList<>();
                for (int k = 0; k < KEYS; k++) {
                    String key = "made-up-" + k;
                    for (String[] p : PATHS) {
                        answers.add(clients.submit(() -> {
                            HttpResponse<String> r = app.send(0, p[0], p[1], p[0].equals("POST") ? "user=a&password=b" : null,
                                    "X-Api-Key", key, "Content-Type", "application/x-www-form-urlencoded");
                            return p[0] + " " + p[1] + " " + r.statusCode();
                        }));
                    }
                }
                for (Future<String> a : answers) statuses.merge(a.get(), 1, Integer::sum);
            } finally {
                clients.shutdownNow();
            }
            Map<String, Integer> expected = new TreeMap<>();
            for (String[] p : PATHS) expected.put(p[0] + " " + p[1] + " 401", KEYS);
            assertThat(statuses).as("every made-up key refused by the application's authentication, on every path")
                    .isEqualTo(expected);
            assertThat(app.redisKeys()).as("no counter for a made-up key").isZero();

            int allowed = 0;
            for (int i = 0; i < 3 * LIMIT; i++) {
                int status = app.get(0, List.of("/api/x", "/forward/x", "/include/x").get(i % 3)).statusCode();
                assertThat(status).isIn(200, 429);
                if (status == 200) allowed++;
            }
            assertThat(allowed).as("without a key: the api rule's limit, per address, over all its paths").isEqualTo(LIMIT);
            assertThat(app.redisKeys()).as("one counter: the address's").isBetween(1L, 2L);
        }
    }
}
