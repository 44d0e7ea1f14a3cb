package dev.sluice;

import dev.sluice.config.SluiceConfig;
import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.Rule;
import dev.sluice.testing.FakeServlet;
import dev.sluice.testing.FakeServlet.CountingChain;
import dev.sluice.testing.ManualClock;
import org.junit.jupiter.api.Test;

import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A web application without Micrometer: run by the surefire execution {@code without-micrometer}
 * (see filter/pom.xml), whose class path lacks {@code io.micrometer:*}, never with the other tests.
 */
class WithoutMicrometerTest {

    @Test
    void theFilterStartsDecidesAndLoadsNothingOfMicrometer() throws Exception {
        assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
                .as("this test's premise: Micrometer is not on the class path").isInstanceOf(ClassNotFoundException.class);
        RateLimitFilter filter = new RateLimitFilter(new ManualClock(ManualClock.MINUTE_BOUNDARY)); // no hour ends between the two requests
        filter.init(FakeServlet.filterConfig("no-micrometer", FakeServlet.params("rules", "api", "backend", "local",
                "rule.api.algorithm", "fixed-window", "rule.api.limit", "1", "rule.api.window", "1h")));
        try {
            CountingChain chain = new CountingChain();
            Map<String, String> second = new HashMap<>();
            filter.doFilter(FakeServlet.get("/a", "192.0.2.1"), FakeServlet.response(new HashMap<>()), chain);
            filter.doFilter(FakeServlet.get("/a", "192.0.2.1"), FakeServlet.response(second), chain);

            assertThat(chain.passed).isEqualTo(1);
            assertThat(second.get("status")).isEqualTo("429");
            ObjectName api = new ObjectName("dev.sluice:type=Rule,name=no-micrometer,rule=api");
            assertThat(ManagementFactory.getPlatformMBeanServer().getAttribute(api, "Denied")).as("JMX counts").isEqualTo(1L);
        } finally {
            filter.destroy();
        }
        assertThat(loadedClasses()).as("classes loaded by this JVM")
                .doesNotContain("dev.sluice.internal.metrics.MicrometerMeters")
                .noneMatch(name -> name.startsWith("io.micrometer."));
    }

    @Test
    void aRegistryHandedInWithoutMicrometerIsRefusedSayingWhy() {
        SluiceConfig config = SluiceConfig.builder().backend(SluiceConfig.Backend.LOCAL)
                .rule(Rule.of("api", Algorithm.FIXED_WINDOW, 1, Duration.ofHours(1))).build();

        assertThatThrownBy(() -> Sluice.builder(config).meterRegistry(new Object()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Micrometer (io.micrometer:micrometer-core) is not on Sluice's class path");
    }

    /** Every class the JVM has loaded, from HotSpot's VM.class_hierarchy diagnostic command (as jcmd shows it). */
    private static java.util.List<String> loadedClasses() throws Exception {
        String hierarchy = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmClassHierarchy",
                new Object[]{new String[0]}, new String[]{String[].class.getName()});
        java.util.List<String> names = new java.util.ArrayList<>();
        for (String line : hierarchy.split("\n")) {
            String entry = line.replaceFirst("^[|\\s-]*", "");
            int slash = entry.indexOf('/');
            if (slash > 0) names.add(entry.substring(0, slash));
        }
        assertThat(names).as("the command lists this class").contains(WithoutMicrometerTest.class.getName());
        return names;
    }
}
