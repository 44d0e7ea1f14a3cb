package dev.sluice.testing;

import java.security.SecureRandom;

/**
 * The seed of the randomized tests: fresh for every run, so that runs keep searching new cases,
 * and {@code -Dsluice.seed=N} to replay one. Tests derive their sequences from it and name it in
 * every failure; it is printed once per JVM.
 */
public final class TestSeed {

    private static final long SEED = choose();

    private TestSeed() {
    }

    /** This run's seed. */
    public static long get() {
        return SEED;
    }

    /** How to replay this run, for failure messages. */
    public static String replay() {
        return "-Dsluice.seed=" + SEED;
    }

    private static long choose() {
        String given = System.getProperty("sluice.seed");
        long seed = given == null || given.isBlank() ? new SecureRandom().nextLong() : Long.parseLong(given.trim());
        System.out.println("randomized tests: seed " + seed + " (replay with -Dsluice.seed=" + seed + ")");
        return seed;
    }
}
