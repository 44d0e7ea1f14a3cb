package dev.sluice.internal.algorithm;

/**
 * The state of a window algorithm ({@code fixed-window}, {@code sliding-window-counter}) made from
 * counts rather than from its own admissions: what the approximate mode decides with (the fleet's
 * counts as of the last sync plus this instance's own since), so that its allowed/denied, remaining,
 * retry-after, reset and next are those of the exact algorithm for those counts.
 */
public final class WindowCounts {

    private WindowCounts() {
    }

    /**
     * A state of {@code algorithm}'s rule (a window algorithm) holding these counts, to decide on.
     *
     * @param windowStart the aligned (or calendar) window the counts belong to (ms since the epoch)
     * @param current     tokens counted in that window
     * @param previous    tokens counted in the window before it (ignored by {@code fixed-window})
     */
    public static KeyState of(RateAlgorithm algorithm, long windowStart, long current, long previous) {
        KeyState state = algorithm.newState();
        long end = algorithm instanceof FixedWindow f && f.calendar() != null ? f.windowAt(windowStart).endMs()
                : windowStart + algorithm.windowMs;
        set(state, end, current, previous);
        return state;
    }

    /** The window states keep when their current count ends: the end of its aligned window. */
    private static void set(KeyState state, long windowEnd, long current, long previous) {
        if (state instanceof FixedWindow.State s) {
            s.end = windowEnd;
            s.count = current;
        } else if (state instanceof SlidingWindowCounter.State s) {
            s.end = windowEnd;
            s.current = current;
            s.previous = previous;
        } else {
            throw new IllegalArgumentException("counts are kept per window only for fixed-window and"
                    + " sliding-window-counter, not " + state.getClass().getName());
        }
    }
}
