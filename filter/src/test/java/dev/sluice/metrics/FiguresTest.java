package dev.sluice.metrics;

import dev.sluice.Sluice;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The jar's command line reads the MXBeans of another JVM on this machine, as an operator reads a
 * server's without a display. {@code dist-it} runs it against each distribution.
 */
class FiguresTest {

    private Process target;

    @AfterEach
    void stop() throws Exception {
        if (target != null) {
            target.getOutputStream().close(); // it ends when its input does
            if (!target.waitFor(10, TimeUnit.SECONDS)) target.destroyForcibly();
        }
    }

    /** Another JVM with a Sluice named {@code shop/sluice} that has decided 3 requests, 2 of them allowed. */
    private long startTarget() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        target = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), Target.class.getName())
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(target.getInputStream(), StandardCharsets.UTF_8));
        assertThat(out.readLine()).isEqualTo("ready");
        return target.pid();
    }

    private record Run(int status, String out, String err) {
    }

    private static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Figures.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void printsEveryInstancesFiguresOfAnotherJvm() throws Exception {
        long pid = startTarget();
        Run run = run(Long.toString(pid));
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out()).startsWith("dev.sluice:type=RateLimiter,name=shop/sluice\n")
                .containsPattern("\n  Allowed +2\n").containsPattern("\n  Denied +1\n")
                .containsPattern("\n  BreakerState +NONE\n").containsPattern("\n  BreakerStates +\\(none\\)\n")
                .containsPattern("\n  InstanceName +shop/sluice\n")
                .contains("dev.sluice:type=Rule,name=shop/sluice,rule=api\n").containsPattern("\n  Limit +2\n");
        assertThat(run(Long.toString(pid), "shop/sluice").out()).isEqualTo(run.out());
    }

    @Test
    void runsAnOperationOfAnInstance() throws Exception {
        long pid = startTarget();
        Run run = run(Long.toString(pid), "shop/sluice", "resetClient", "api", "k=alice");
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out()).isEqualTo("reset rule api for client k=alice\n");
        assertThat(run(Long.toString(pid), "shop/sluice").out()).as("the reset client may again")
                .containsPattern("\n  Allowed +2\n");
    }

    @Test
    void saysWhatThereIsWhenTheInstanceIsNot() throws Exception {
        long pid = startTarget();
        Run run = run(Long.toString(pid), "other/sluice");
        assertThat(run.status()).isEqualTo(1);
        assertThat(run.err()).contains("no Sluice instance named other/sluice in this JVM; it has shop/sluice");
        assertThat(run().out()).as("without arguments: the JVMs to choose from").contains(Long.toString(pid));
        assertThat(run("shop/sluice").status()).as("no pid").isEqualTo(2);
        assertThat(run().out()).as("not this tool's own JVM").doesNotContain(" " + ProcessHandle.current().pid() + " ");
    }

    @Test
    void aReloadThatChangesNothingBecauseItCannotExitsWithThree() throws Exception {
        long pid = startTarget();
        Run run = run(Long.toString(pid), "shop/sluice", "reload");
        assertThat(run.out()).startsWith("nothing to reload");
        assertThat(run.status()).isEqualTo(3);
    }

    @Test
    void aMapAttributeIsOneReadableLine() throws Exception {
        javax.management.openmbean.CompositeType row = new javax.management.openmbean.CompositeType("entry", "entry",
                new String[]{"key", "value"}, new String[]{"key", "value"},
                new javax.management.openmbean.OpenType<?>[]{javax.management.openmbean.SimpleType.STRING,
                        javax.management.openmbean.SimpleType.STRING});
        javax.management.openmbean.TabularDataSupport table = new javax.management.openmbean.TabularDataSupport(
                new javax.management.openmbean.TabularType("map", "map", row, new String[]{"key"}));
        table.put(new javax.management.openmbean.CompositeDataSupport(row, new String[]{"key", "value"},
                new Object[]{"127.0.0.1:7001", "OPEN"}));
        table.put(new javax.management.openmbean.CompositeDataSupport(row, new String[]{"key", "value"},
                new Object[]{"127.0.0.1:7000", "CLOSED"}));
        assertThat(Figures.readable(table)).isEqualTo("127.0.0.1:7000=CLOSED, 127.0.0.1:7001=OPEN");
    }

    /** The JVM {@link #startTarget} starts. */
    public static final class Target {
        public static void main(String[] args) throws Exception {
            try (Sluice sluice = Sluice.create(Map.of("rules", "api", "backend", "local", "rule.api.limit", "2",
                    "rule.api.window", "1h"))) {
                sluice.registerMBeans("shop/sluice");
                for (int i = 0; i < 3; i++) sluice.tryAcquire("api", "alice");
                System.out.println("ready");
                System.out.flush();
                while (System.in.read() >= 0) {
                    // until the test closes our input
                }
            }
        }
    }
}
