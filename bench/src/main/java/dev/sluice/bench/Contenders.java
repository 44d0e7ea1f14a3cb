package dev.sluice.bench;



/** Builds the contender named in a benchmark's {@code impl} parameter. */
final class Contenders {

    private Contenders() {
    }

    /**
     * @param impl        {@code sluice}, {@code sluice-unshared} (one round trip per decision), {@code bucket4j},
     *                    {@code floor} or {@code batched-floor}
     * @param algorithm   Sluice's algorithm id (Bucket4j and the floor have one each)
     * @param deniedCache whether Sluice's denied-client cache is on
     */
    static Contender create(String impl, Workload workload, String algorithm, boolean deniedCache) {
        return switch (impl) {
            case "bucket4j" -> new Bucket4jContender(workload);
            case "floor" -> new EvalshaFloor(workload);
            case "batched-floor" -> new BatchedFloor(workload);
            case "sluice" -> new SluiceContender(workload, algorithm, deniedCache);
            case "sluice-unshared" -> new SluiceContender(workload, algorithm, deniedCache, 1, false);
            default -> throw new IllegalArgumentException("unknown contender: " + impl);
        };
    }
}
