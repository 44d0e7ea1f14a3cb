package dev.sluice.local;

import dev.sluice.algorithm.AlgorithmSpec;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.testing.ManualClock;

/** The algorithms' specification, in process. */
class LocalEngineAlgorithmTest extends AlgorithmSpec {

    @Override
    protected RateLimiter newEngine(ManualClock clock) {
        return new LocalEngine(clock, 10_000);
    }
}
