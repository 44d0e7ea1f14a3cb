package dev.sluice.example.demo;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo as a newcomer runs it: it finds (here: starts) a Redis, shows the fleet's limit, and
 * every line it suggests, run literally with {@code sh} right after it, does what its comment says.
 * When it ends, the Redis it started is gone. Needs {@code curl} and, unless {@code REDIS_URL} is
 * set, {@code redis-server} on PATH, as the other tests do.
 */
class DemoIT {

    private static final Pattern PORTS = Pattern.compile("three instances on ports \\[(\\d+), (\\d+), (\\d+)\\]");
    private static final Pattern STARTED_PID = Pattern.compile("started on a free port, pid (\\d+)");

    private Process demo;

    @AfterEach
    void stop() throws InterruptedException {
        if (demo != null && demo.isAlive()) {
            demo.destroy();
            if (!demo.waitFor(30, TimeUnit.SECONDS)) demo.destroyForcibly();
        }
    }

    @Test
    void theSuggestionsWorkRightAfterTheDemoAndItsRedisGoesWithIt() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String war = System.getProperty("sluice.war", "target/sluice-examples.war");
        demo = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), Demo.class.getName(), war,
                Integer.toString(freePort())).redirectErrorStream(true).start();
        List<String> output = readUntil(demo, "Press Ctrl-C to stop.");
        String text = String.join("\n", output);

        Matcher ports = PORTS.matcher(text);
        assertThat(ports.find()).as(text).isTrue();
        assertThat(text).as("a Redis, not the local fallback").doesNotContain("NO REDIS");
        assertThat(output).filteredOn(l -> l.startsWith("  request ")).extracting(l -> l.contains("-> 429"))
                .as("13 requests, the 11th refused by whichever instance got it")
                .containsExactly(false, false, false, false, false, false, false, false, false, false, true, true, true);

        List<String> suggestions = output.stream().filter(l -> l.startsWith("  for ") || l.startsWith("  curl ")
                || l.startsWith("  java ")).map(l -> l.replaceFirst("\\s+#.*$", "").trim()).toList();
        assertThat(suggestions).hasSize(10);
        assertThat(sh(suggestions.get(0)).trim()).as(suggestions.get(0))
                .isEqualTo("200 200 200 200 200 200 200 200 200 200 429 429");
        assertThat(sh(suggestions.get(1))).startsWith("HTTP/1.1 429").contains("Retry-After: ")
                .contains("RateLimit: \"api\";r=0;");
        assertThat(sh(suggestions.get(2))).contains("RateLimit-Policy: \"api\";q=100;w=60");
        assertThat(sh(suggestions.get(3))).startsWith("HTTP/1.1 401");
        assertThat(sh(suggestions.get(4))).startsWith("HTTP/1.1 200");
        assertThat(sh(suggestions.get(5))).startsWith("HTTP/1.1 200");
        assertThat(sh(suggestions.get(6))).contains("sluice_decisions_total{instance=\"sluice\",outcome=\"denied\",rule=\"api\"}");
        assertThat(sh(suggestions.get(7)).trim()).as("the third export at once is refused at once").isEqualTo("429 200 200");
        Matcher llm = Pattern.compile("(?i)ratelimit: \"llm\";r=(\\d+);t=\\d+\n").matcher(sh(suggestions.get(8)));
        assertThat(llm.find()).isTrue();
        assertThat(llm.group(1)).as("the estimate taken from a full bucket").isEqualTo("1800");
        assertThat(llm.find()).isTrue();
        assertThat(Long.parseLong(llm.group(1))).as("the first's 700 beyond its estimate charged, a few tokens refilled")
                .isBetween(900L, 930L);
        assertThat(sh(suggestions.get(9))).contains("dev.sluice:type=RateLimiter,name=sluice\n")
                .contains("dev.sluice:type=RateLimiter,name=sluice-3\n");

        Matcher started = STARTED_PID.matcher(text);
        Optional<ProcessHandle> redis = started.find()
                ? ProcessHandle.of(Long.parseLong(started.group(1))) : Optional.empty();
        demo.destroy();
        assertThat(demo.waitFor(30, TimeUnit.SECONDS)).as("the demo ends on SIGTERM").isTrue();
        if (System.getenv("REDIS_URL") == null) {
            assertThat(redis).as("the demo started its own redis-server: " + text).isPresent();
            redis.get().onExit().get(10, TimeUnit.SECONDS);
            assertThat(redis.get().isAlive()).as("its redis-server is stopped with it").isFalse();
        }
    }

    private static List<String> readUntil(Process process, String last) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            lines.add(line);
            if (line.equals(last)) {
                Thread drain = new Thread(() -> {
                    try {
                        while (in.readLine() != null) {
                            // the demo's later log lines
                        }
                    } catch (IOException ended) {
                        // the demo is gone
                    }
                });
                drain.setDaemon(true);
                drain.start();
                return lines;
            }
        }
        throw new AssertionError("the demo ended before '" + last + "':\n" + String.join("\n", lines));
    }

    /** Runs a suggested line as a user pastes it into a shell; returns what it printed. */
    private static String sh(String line) throws Exception {
        // standard error: curl's progress meter
        Process p = new ProcessBuilder("sh", "-c", line).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(line).isTrue();
        return out.replace("\r\n", "\n");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
