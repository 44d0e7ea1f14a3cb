package dev.sluice.it.support;

import dev.sluice.testing.WindowRoom;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hostile input against the production stack: the example WAR's {@code RateLimitFilter}, configured
 * through its {@code web.xml}, on every container, sent byte for byte over a socket ({@link RawHttp}).
 * Encoded and double-encoded paths, {@code ;jsessionid}, {@code //}, {@code ..}, trailing slashes,
 * methods in mixed case, 8 KB header values, control characters, IPv4-mapped IPv6 and zone ids.
 * Each input has its expected outcome: counted by the rule its path is under, refused, or rejected
 * with a 4xx before any rule counted. Where the containers disagree on whether an input is valid
 * HTTP at all (a {@code //} path, a control character in a header), the outcome is "counted or
 * rejected": what may never happen is a path a rule covers served without being counted. Each case
 * is its own client ({@code X-Forwarded-For} from a trusted proxy, the test), so cases do not share
 * counters; the Redis keys they create and the denied-client cache stay bounded.
 */
public interface HostileInputContract extends ContainerTest {

    String API = "counted by api";
    String LOGIN = "counted by login";
    String REFUSED = "refused";
    String REJECTED = "rejected";

    /** One hostile request and the outcomes it may have. */
    record Case(String name, String method, String target, String body, List<String> headers, Set<String> expected) {
        static Case of(String name, String method, String target, Set<String> expected, String... headers) {
            return new Case(name, method, target, method.equalsIgnoreCase("POST") ? "user=a&password=b" : null,
                    List.of(headers), expected);
        }
    }

    /** What an answer was: refused, counted by a rule (its field present), rejected (4xx), or served uncounted. */
    static String outcome(RawHttp.Answer a) {
        if (a.status() == 429) return REFUSED;
        String policy = a.header("RateLimit-Policy");
        if (policy != null && policy.contains("\"api\"")) return API;
        if (policy != null && policy.contains("\"login\"")) return LOGIN;
        if (a.status() >= 400 && a.status() < 500) return REJECTED;
        return a.status() == 0 ? "no answer" : "served uncounted (" + a.status() + ")";
    }

    @Test
    default void hostileInputIsCountedRefusedOrRejectedNeverServedUncounted() throws Exception {
        String big = "a".repeat(8192);
        String longChain = "10.9.8.7, ".repeat(800); // about 8 KB of forwarded hops before the client
        List<Case> cases = List.of(
                Case.of("encoded path", "GET", "/%61pi/x", Set.of(API)),
                Case.of("encoded path, login", "POST", "/%6cogin", Set.of(LOGIN)),
                Case.of("double-encoded path", "GET", "/%2561pi/x", Set.of(REJECTED)),
                Case.of("encoded slash", "GET", "/api%2Fx", Set.of(API, REJECTED)),
                Case.of(";jsessionid", "GET", "/api/x;jsessionid=0123456789ABCDEF", Set.of(API)),
                Case.of(";jsessionid, login", "POST", "/login;jsessionid=0123456789ABCDEF", Set.of(LOGIN)),
                Case.of("//", "GET", "//api/x", Set.of(API, REJECTED)),
                Case.of("//, login", "POST", "//login", Set.of(LOGIN, REJECTED)),
                Case.of("..", "GET", "/static/../api/x", Set.of(API, REJECTED)),
                Case.of("encoded ..", "GET", "/static/%2e%2e/api/x", Set.of(API, REJECTED)),
                Case.of(".. above the root", "GET", "/../api/x", Set.of(REJECTED)),
                Case.of("trailing slash", "GET", "/api/x/", Set.of(API)),
                // Tomcat answers 404 itself for a path no servlet is mapped to: no filter runs
                Case.of("trailing slash, login", "POST", "/login/", Set.of(LOGIN, REJECTED)),
                Case.of("mixed-case method", "gEt", "/api/x", Set.of(API, REJECTED)),
                Case.of("mixed-case method, login", "pOsT", "/login", Set.of(LOGIN, REJECTED)),
                Case.of("8 KB header value", "GET", "/api/x", Set.of(API, REJECTED), "X-Padding", big),
                Case.of("8 KB API key", "GET", "/api/x", Set.of(REJECTED), "X-Api-Key", big),
                Case.of("control character in an API key", "GET", "/api/x", Set.of(REJECTED), "X-Api-Key", "k\u0001ey"),
                Case.of("control character in the client address", "GET", "/api/x", Set.of(API, REJECTED),
                        "X-Forwarded-For", "198.51.100.200\u0007"),
                Case.of("8 KB forwarded chain", "GET", "/api/x", Set.of(API, REJECTED),
                        "X-Forwarded-For", longChain + "198.51.100.201"),
                Case.of("control character in the path", "GET", "/api/x%00", Set.of(API, REJECTED)),
                Case.of("CR LF in the path", "GET", "/api/x%0d%0aSet-Cookie:%20a=b", Set.of(API, REJECTED)));

        ExampleApp hostile = ExampleApp.named("hostile").with("trusted-proxies", "127.0.0.1/32, ::1/128",
                "rule.api.algorithm", "sliding-window-log", "rule.api.limit", "2", "rule.api.window", "1h",
                "rule.login.limit", "2", "rule.login.window", "1h", "denied-cache.max-keys", "4");
        try (Deployment app = container().deploy(hostile, 1)) {
            URI base = app.uri(0, "/");
            Map<String, String> outcomes = new LinkedHashMap<>();
            List<String> wrong = new ArrayList<>();
            for (int i = 0; i < cases.size(); i++) {
                Case c = cases.get(i);
                List<String> headers = new ArrayList<>(c.headers());
                if (!headers.contains("X-Forwarded-For")) headers.addAll(List.of("X-Forwarded-For", "198.51.100." + (i + 1)));
                headers.addAll(List.of("Content-Type", "application/x-www-form-urlencoded"));
                String got = outcome(RawHttp.send(base, c.method(), c.target(), c.body(), headers.toArray(String[]::new)));
                outcomes.put(c.name(), got);
                if (!c.expected().contains(got)) wrong.add(c.name() + ": " + got + ", expected " + c.expected());
            }
            System.out.printf("HOSTILE %s: %s%n", container().name(), outcomes);
            assertThat(wrong).as("every outcome: %s", outcomes).isEmpty();

            // one login counter, whatever the spelling of its path: the third attempt is refused,
            // and so is every later one the container lets through (all in one of the login rule's
            // fixed windows of an hour on Redis's clock)
            WindowRoom.awaitOnRedis(Duration.ofHours(1), Duration.ofSeconds(30));
            String[] spellings = {"/login", "/%6cogin", "/login;jsessionid=1", "/login/", "/./login"};
            for (int i = 0; i < spellings.length; i++) {
                RawHttp.Answer a = RawHttp.send(base, "POST", spellings[i], "user=a&password=b",
                        "X-Forwarded-For", "203.0.113.50", "Content-Type", "application/x-www-form-urlencoded");
                assertThat(outcome(a)).as("attempt %d, %s", i + 1, spellings[i])
                        .isIn(i < 2 ? Set.of(LOGIN) : i == 2 ? Set.of(REFUSED) : Set.of(REFUSED, REJECTED));
            }

            // one client, whatever the spelling of its address: IPv4-mapped IPv6, a zone id
            assertIsOneClient(base, "203.0.113.60", "::ffff:203.0.113.60", "::ffff:cb00:713c");
            assertIsOneClient(base, "fe80::61%eth0", "fe80::61", "FE80:0:0:0:0:0:0:61%eth1");

            assertThat(app.redisKeys()).as("a few keys a case (its counters), never one a byte of input")
                    .isLessThanOrEqualTo(3L * (cases.size() + 4));
            assertThat(app.mxbeanTotal("DeniedCacheSize")).as("the denied-client cache at its bound").isLessThanOrEqualTo(4);
        }
    }

    /** The first two spellings of one address take the api rule's two, the third is refused. */
    private static void assertIsOneClient(URI base, String... spellings) {
        for (int i = 0; i < spellings.length; i++) {
            RawHttp.Answer a = RawHttp.send(base, "GET", "/api/x", null, "X-Forwarded-For", spellings[i]);
            assertThat(outcome(a)).as("%s, request %d of one client", spellings[i], i + 1).isEqualTo(i < 2 ? API : REFUSED);
        }
    }
}
