package dev.sluice.testing;

import redis.clients.jedis.UnifiedJedis;

import java.net.URI;
import java.time.Duration;
import java.util.function.LongSupplier;
import java.util.function.LongUnaryOperator;

/**
 * Waits, by polling a real clock (never a fixed sleep), until enough is left of the window that holds
 * its time, for a test whose requests must all fall in one fixed or calendar window: a count of a
 * fixed window starts afresh at the window's end, so requests on either side of it are counted
 * apart (five logins at 16:41:59 and the sixth at 16:42:00 all pass a limit of five a minute), and a
 * sliding-window counter weighs the previous window anew. A test on a fake clock needs none of this.
 *
 * <p>The wait is at most {@code room}: when less is left, the window ends within it and the next
 * one is longer than {@code room}.
 */
public final class WindowRoom {

    private WindowRoom() {
    }

    /**
     * Until at least {@code room} is left of the current window of {@code window} on Redis's clock
     * ({@code TIME}, as Sluice's scripts read it with {@code clock=redis}) of the test Redis
     * ({@link TestRedis#url()}; every Redis on this machine shares its clock); windows aligned to the
     * epoch, as a fixed window's without a calendar: a minute ends at :00, an hour on the hour, a day
     * at midnight UTC. Returns Redis's time then, in ms.
     */
    public static long awaitOnRedis(Duration window, Duration room) {
        return awaitOnRedis(room, ends(window, room));
    }

    /**
     * Until at least {@code room} is left before {@code end} of Redis's time, the end (ms) of the window
     * holding a time (ms): a calendar window's, such as midnight in Berlin. Returns Redis's time then.
     */
    public static long awaitOnRedis(Duration room, LongUnaryOperator end) {
        try (UnifiedJedis redis = new UnifiedJedis(URI.create(TestRedis.url()))) {
            return await(() -> TestRedis.timeMillis(redis), room, end, "Redis's clock");
        }
    }

    /**
     * Until at least {@code room} is left of the current window of {@code window} (aligned to the epoch)
     * on the system clock: the local engine's, and that of a test's Redis on this machine. Returns
     * the time then, in ms.
     */
    public static long awaitOnSystemClock(Duration window, Duration room) {
        return await(System::currentTimeMillis, room, ends(window, room), "the system clock");
    }

    private static LongUnaryOperator ends(Duration window, Duration room) {
        long w = window.toMillis();
        if (room.toMillis() >= w) {
            throw new IllegalArgumentException("no window of " + window + " has " + room + " left");
        }
        return t -> (Math.floorDiv(t, w) + 1) * w;
    }

    private static long await(LongSupplier clock, Duration room, LongUnaryOperator end, String which) {
        long[] now = new long[1];
        Poll.until(room.plusSeconds(10), room.toMillis() + " ms or more left of the window on " + which, () -> {
            now[0] = clock.getAsLong();
            return end.applyAsLong(now[0]) - now[0] >= room.toMillis();
        });
        return now[0];
    }
}
