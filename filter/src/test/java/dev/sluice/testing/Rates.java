package dev.sluice.testing;

import dev.sluice.limiter.Algorithm;

import java.util.Arrays;
import java.util.List;

/** The algorithms that count a rate ({@link Algorithm#isRate()}): every one but concurrency, which has its own suites. */
public final class Rates {

    public static final List<Algorithm> ALL = Arrays.stream(Algorithm.values()).filter(Algorithm::isRate).toList();

    private Rates() {
    }
}
