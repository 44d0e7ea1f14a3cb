package dev.sluice.internal.approximate;

import dev.sluice.limiter.Algorithm;
import dev.sluice.limiter.LimiterUnavailableException;

import java.util.List;

/**
 * How the approximate mode exchanges counts with the fleet: once per sync interval, one call for all
 * of an instance's keys that are in use. Each key's {@link Delta} (what this instance counted since
 * the last exchange) is added to the fleet's count of its window, and the fleet's counts come back.
 * The Redis implementation is {@code dev.sluice.internal.redis.SyncScript}; tests use an in-memory one.
 */
public interface CountExchange {

    /**
     * What one instance counted for one key since its last exchange: its takes, and apart from them its
     * give-backs of takes it had already sent (another rule of the request denied it), which come off their
     * own window's count only, wherever the takes go.
     *
     * @param key           the Redis key of the rule's client, the same one the exact script keeps
     * @param algorithm     {@code FIXED_WINDOW} or {@code SLIDING_WINDOW_COUNTER}
     * @param windowMs      the rule's window
     * @param windowStart   the aligned window the instance is in (ms since the epoch)
     * @param current       tokens it took in that window (not yet sent)
     * @param previous      tokens it took in the window before ({@code sliding-window-counter} only, else 0)
     * @param givenCurrent  tokens it gives back of takes sent into that window's count
     * @param givenPrevious tokens it gives back of takes sent into the window before's count
     *                      ({@code sliding-window-counter} only, else 0)
     */
    record Delta(byte[] key, Algorithm algorithm, long windowMs, long windowStart, long current, long previous,
                 long givenCurrent, long givenPrevious) {

        /** Takes alone, nothing given back. */
        public Delta(byte[] key, Algorithm algorithm, long windowMs, long windowStart, long current, long previous) {
            this(key, algorithm, windowMs, windowStart, current, previous, 0, 0);
        }
    }

    /**
     * The fleet's counts of one key after the exchange.
     *
     * @param windowStart the window they belong to, or {@link #NONE} when the fleet holds nothing for the key
     * @param current     tokens counted in that window
     * @param previous    tokens counted in the window before it ({@code sliding-window-counter} only, else 0)
     */
    record Counts(long windowStart, long current, long previous) {

        /** No window: nothing counted. */
        public static final long NONE = Long.MIN_VALUE;

        public static final Counts EMPTY = new Counts(NONE, 0, 0);
    }

    /**
     * The outcome of one exchange.
     *
     * @param counts   the fleet's counts, one per delta, in order; null for a delta that was not
     *                 exchanged (its part of the exchange failed: a node of a Cluster away), which
     *                 may or may not have been added (a lost reply)
     * @param atMillis the time the exchange happened at, ms since the epoch: the store's clock when
     *                 {@code now} was negative, else {@code now}
     */
    record Reply(List<Counts> counts, long atMillis) {
    }

    /**
     * Adds each delta to its key's window and returns the keys' counts, atomically per key.
     *
     * @param deltas one per key, no key twice
     * @param now    ms since the epoch on the instance's clock ({@code clock=local}), or negative to use
     *               the store's clock ({@code clock=redis})
     * @throws LimiterUnavailableException when no part of the exchange succeeded; the deltas may or may
     *                                     not have been added (a lost reply)
     */
    Reply exchange(List<Delta> deltas, long now);

    /**
     * Whether the store answers, asked by an engine that has nothing to send while its syncs fail (its
     * clients' unsent counts reset or expired): without an answer it would never learn that the store is
     * back. An exchange of nothing unless the store has a cheaper question.
     *
     * @throws RuntimeException when the store does not answer
     */
    default void ping() {
        exchange(List.of(), -1);
    }
}
