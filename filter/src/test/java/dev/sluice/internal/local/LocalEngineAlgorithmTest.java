package dev.sluice.internal.local;

import dev.sluice.internal.algorithm.AlgorithmSpec;
import dev.sluice.limiter.RateLimiter;
import dev.sluice.testing.ManualClock;

/** The algorithms' specification, in process. */
class LocalEngineAlgorithmTest extends AlgorithmSpec {

    @Override
    protected RateLimiter newEngine(ManualClock clock) {
        return new LocalEngine(clock, 10_000);
    }
}
