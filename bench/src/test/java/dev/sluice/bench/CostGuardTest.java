package dev.sluice.bench;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 17's guards in a build: fails when a decision (or a request that settles, or a concurrency
 * slot renewed) costs more round trips, Redis commands or Redis instructions than {@code bench/cost-baseline.properties} allows ({@link CostGuard}: counted,
 * not timed, so the machine's speed and load do not matter). Needs {@code redis-server} and
 * {@code valgrind} on PATH; starts its own servers. About 30 s on two shared cores.
 *
 * <pre>mvn -Pbench -pl bench -am test -Dtest=CostGuardTest -Dsurefire.failIfNoSpecifiedTests=false</pre>
 */
class CostGuardTest {

    @Test
    void aDecisionCostsNoMoreRoundTripsCommandsOrInstructionsThanTheBaseline() throws Exception {
        Properties baseline = CostGuard.baseline(Path.of("cost-baseline.properties"));
        List<CostGuard.Figures> figures = CostGuard.measure();
        List<String> failures = CostGuard.check(figures, baseline);
        System.out.print(CostGuard.table(figures, baseline, failures, Double.NaN));
        assertThat(failures).as("figures over bench/cost-baseline.properties").isEmpty();
    }
}
