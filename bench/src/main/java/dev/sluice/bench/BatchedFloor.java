package dev.sluice.bench;

import redis.clients.jedis.HostAndPort;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * The batched floor: the cheapest way there can be for concurrent callers to share round trips,
 * the ceiling of any limiter that does (issue 17, item 4). Each caller's {@code INCR} of its key
 * (Redis's cheapest read-modify-write: no script at all) queues; a caller that finds one of
 * {@value #CONNECTIONS} raw sockets free takes the whole queue (up to {@value #MAX_BATCH} calls),
 * writes it in one {@code write}, reads the integer replies, hands each to its caller and wakes it;
 * the others park until their reply is in. No client library, no pool, no codec, no decision: what
 * is left is what sharing costs by itself, one hand-off between threads per call, against the bare
 * floor's ({@link EvalshaFloor}) one blocking round trip per call.
 *
 * <p>Sluice's shared round trips are the same shape with a decision in it; so Sluice / the batched
 * floor says how much of a hand-off design's ceiling Sluice reaches, and the batched floor / the bare
 * floor how far above one round trip per call any such design can go on the host at hand.
 */
final class BatchedFloor implements Contender {

    /**
     * Sockets, so round trips in flight at once: Sluice's {@code SharedRoundTrips.IN_FLIGHT} (three since
     * c52db3b; the batched floor made the same with two and three: 224k-232k and 229k-230k decisions/s).
     */
    static final int CONNECTIONS = 3;

    /** Calls per round trip at most: Sluice's {@code SharedRoundTrips.MAX_BATCH}. */
    static final int MAX_BATCH = 64;

    private final byte[][] commands;
    private final Lane[] lanes = new Lane[CONNECTIONS];
    private final ConcurrentLinkedQueue<Call> queue = new ConcurrentLinkedQueue<>();

    BatchedFloor(Workload workload) {
        String prefix = BenchRedis.prefix("batched-floor");
        String[] clientKeys = workload.clientKeys();
        commands = new byte[clientKeys.length][];
        for (int i = 0; i < clientKeys.length; i++) {
            byte[] key = (prefix + clientKeys[i]).getBytes(StandardCharsets.UTF_8);
            commands[i] = ("*2\r\n$4\r\nINCR\r\n$" + key.length + "\r\n" + new String(key, StandardCharsets.UTF_8) + "\r\n")
                    .getBytes(StandardCharsets.UTF_8);
        }
        HostAndPort server = new HostAndPort(BenchRedis.host(), BenchRedis.port());
        for (int i = 0; i < CONNECTIONS; i++) {
            lanes[i] = new Lane(RoundTrips.socketFactory(server, BenchRedis.TIMEOUT_MS).createSocket());
        }
    }

    @Override
    public boolean tryAcquire(int key) {
        Call call = new Call(commands[key], Thread.currentThread());
        queue.add(call);
        while (!call.done) {
            if (!carry()) LockSupport.park(this);
        }
        return call.reply > 0;
    }

    /** Carries one round trip if a socket is free; false if none was (the caller then waits for its reply or a turn). */
    private boolean carry() {
        for (Lane lane : lanes) {
            if (!lane.busy.compareAndSet(false, true)) continue;
            try {
                lane.roundTrip(queue);
            } finally {
                lane.busy.set(false);
            }
            // a call that queued while every socket was taken found none free: its turn now
            Call next = queue.peek();
            if (next != null) LockSupport.unpark(next.thread);
            return true;
        }
        return false;
    }

    @Override
    public void prepare(Workload workload) {
        // no state to exhaust: the floor is the same on every workload
    }

    @Override
    public void close() {
        for (Lane lane : lanes) {
            try {
                lane.socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    @Override
    public String toString() {
        return "batched-floor";
    }

    private static final class Call {
        final byte[] command;
        final Thread thread;
        long reply;
        volatile boolean done;

        Call(byte[] command, Thread thread) {
            this.command = command;
            this.thread = thread;
        }
    }

    /** One socket and its buffers; used by one carrier at a time. */
    private static final class Lane {
        final AtomicBoolean busy = new AtomicBoolean();
        final Socket socket;
        final OutputStream out;
        final InputStream in;
        final Call[] batch = new Call[MAX_BATCH];
        byte[] written = new byte[4096];
        final byte[] read = new byte[8192];
        int readAt;
        int readEnd;

        Lane(Socket socket) {
            this.socket = socket;
            try {
                out = socket.getOutputStream();
                in = socket.getInputStream();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        void roundTrip(ConcurrentLinkedQueue<Call> queue) {
            int n = 0;
            int length = 0;
            for (Call c; n < MAX_BATCH && (c = queue.poll()) != null; n++) {
                batch[n] = c;
                if (length + c.command.length > written.length) {
                    written = java.util.Arrays.copyOf(written, Math.max(written.length * 2, length + c.command.length));
                }
                System.arraycopy(c.command, 0, written, length, c.command.length);
                length += c.command.length;
            }
            if (n == 0) return;
            try {
                out.write(written, 0, length);
                Thread self = Thread.currentThread();
                for (int i = 0; i < n; i++) {
                    Call c = batch[i];
                    batch[i] = null;
                    c.reply = readInteger();
                    c.done = true;
                    if (c.thread != self) LockSupport.unpark(c.thread);
                }
            } catch (IOException e) {
                for (int i = 0; i < n; i++) { // fail what is left rather than leave its callers parked
                    Call c = batch[i];
                    if (c == null) continue;
                    batch[i] = null;
                    c.reply = -1;
                    c.done = true;
                    LockSupport.unpark(c.thread);
                }
                throw new UncheckedIOException("the batched floor lost its socket", e);
            }
        }

        private long readInteger() throws IOException {
            int b = next();
            if (b != ':') throw new IOException("not an integer reply: " + (char) b);
            boolean negative = false;
            long value = 0;
            b = next();
            if (b == '-') {
                negative = true;
                b = next();
            }
            for (; b != '\r'; b = next()) value = value * 10 + (b - '0');
            next(); // '\n'
            return negative ? -value : value;
        }

        private int next() throws IOException {
            if (readAt == readEnd) {
                readEnd = in.read(read, 0, read.length);
                readAt = 0;
                if (readEnd <= 0) throw new EOFException("Redis closed the connection");
            }
            return read[readAt++];
        }
    }
}
