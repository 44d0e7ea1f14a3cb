package dev.sluice.internal.redis;

import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.exceptions.JedisRedirectionException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * How a script call reaches Redis: concurrent calls to one Redis node share round trips.
 *
 * <p><b>Natural batching.</b> A call that finds a place in flight to its node (fewer than
 * {@value #IN_FLIGHT} round trips on their way) goes at once, on a pooled connection, sent and read
 * by the caller's own thread. Calls that arrive while every place is taken queue up, and the next
 * round trip takes all of them (at most {@value #MAX_BATCH}), pipelined on one connection: one of
 * their threads carries it, the others park until their own reply is in (each is woken as soon as
 * its reply is read; the carrier returns when all are). Nobody waits for a batch to fill: a batch is
 * whatever queued during the round trips before it, taken whole by one carrier: two carriers that
 * start at once (both places freed together) take one after the other, never by turns, so a batch is
 * a run of the queue. No lock is held otherwise (never during a round trip); the queue and the
 * count of round trips in flight are lock-free. A round trip is in flight until Redis answers it (its first reply: Redis replies once it
 * has run what it read), so the next one starts, on another pooled connection, while the replies of
 * the last are still being read and their callers woken; waking a batch's callers one by one is the
 * longest part of the client's work, and kept off the path between two round trips. Up to
 * {@value #IN_FLIGHT} round trips are in flight per node, fewer when its pool lends fewer connections at
 * once ({@code redis.pool.max-total}; a round trip keeps its connection until its callers are woken, so
 * with a pool that small the next carrier may still wait for it there, within the pool's max-wait):
 * with one, Redis would wait between two round trips while the next carrier is woken and sends; three
 * made 1.1x to 1.2x the decisions of two at 8 and 64 threads once Redis had a CPU share of its own
 * (BENCHMARKS.md, "Runs AV to AX").
 *
 * <p><b>One script call per batch.</b> Calls that name a {@link BatchScript} (the engine's decisions
 * on standalone and Sentinel) and go in one round trip go as one {@code EVALSHA} of that script,
 * which runs each call's script in turn and answers each call's reply (or its error) in an array:
 * the cost of a script call is paid once per batch. A batch of one is the call itself. Other calls,
 * and every call on a Cluster (a batch's keys would span slots), each stay their own
 * {@code EVALSHA}, pipelined.
 *
 * <p><b>Still exact.</b> Each decision is what it would have been alone, atomic per request (Redis
 * runs one script at a time; a batch script isolates each call's run, decide-batch.lua); the calls
 * of a round trip run in the order they queued. Two round trips in flight at once are on two
 * connections, which Redis reads in an order of its own, as it does two calls made alone. Replies
 * are matched to calls by their order on the connection (and in a batch's array), which is given
 * back to its pool after every round trip (and discarded by the pool when broken), so a late reply
 * can never reach another call.
 *
 * <p><b>Bounds.</b> A queued call waits at most {@code redis.timeout} for its round trip to start
 * (the round trip it waits behind is bounded by that too; then it fails as a timeout, as a call
 * that gets no pooled connection does), then every read is bounded by the socket timeout
 * ({@code redis.timeout}), as for a call of its own; the carrier borrows the round trip's connection
 * within the pool's {@code max-wait}. When a round trip fails (a timeout, Redis
 * gone), the calls of that batch still waiting fail with its error, those already answered keep
 * their replies, and calls queued behind go on another connection, except after a timeout: the
 * calls that queued while the node did not answer fail with it, so a stuck node costs a decision
 * about one timeout, not one for the round trip ahead and one for its own. Each failed call fails in its
 * own caller's thread, so the failure policy, the breaker and the metrics hear of each exactly as
 * of a call of its own.
 *
 * <p><b>NOSCRIPT</b> (Redis restarted, failed over, {@code SCRIPT FLUSH}): the carrier loads the
 * script once ({@code SCRIPT LOAD}) and sends again the calls that met it, on the same connection,
 * in one more round trip; a call that meets it once more (flushed again in between) goes alone, with
 * {@code EVAL}.
 *
 * <p><b>Nodes</b>: one queue (a lane) per node: the server, the master a Sentinel names now, or each
 * master of a Cluster. A lane whose node has left the topology (a failed-over master) is dropped
 * when a new node's lane is made, so lanes never outnumber the nodes seen in one topology. A call
 * that timed out or whose connection failed tells {@link NodeConnections#failed} (on Cluster the
 * slot map is then read again soon, in the background).
 *
 * <p><b>Cluster</b>: a call redirected ({@code MOVED}/{@code ASK}), or whose node refused or dropped
 * the connection before a timeout, goes again alone through the client, which follows redirections
 * and renews its slot map as it does for any call; a call refused with {@code TRYAGAIN} (its slot
 * migrating) goes again alone after a pause, until {@code redis.timeout}. Clients whose connections Sluice cannot reach
 * ({@link NodeConnections#of} is null) make every call alone.
 */
final class SharedRoundTrips {

    /** Calls per round trip at most: bounds the bytes written at once and the wait of a batch's first reply. */
    static final int MAX_BATCH = 64;

    /** Round trips in flight at once to one node. */
    static final int IN_FLIGHT = 3;

    /** The first pause before a call refused with {@code TRYAGAIN} goes again (doubled each time, up to 16 ms). */
    private static final long TRY_AGAIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How long such a call is sent again when the connections' timeout is not known (the client library's default timeout). */
    private static final long DEFAULT_RETRY_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final UnifiedJedis client;
    private final NodeConnections nodes;
    private final boolean cluster;
    /** {@code redis.timeout}: the longest a queued call waits for its round trip, and a call refused with {@code TRYAGAIN} is sent again; unbounded when not known. */
    private final long maxWaitNanos;
    private final int inFlight;
    private final ConcurrentHashMap<Object, Lane> lanes = new ConcurrentHashMap<>();
    private final LongAdder calls = new LongAdder();
    private final LongAdder roundTrips = new LongAdder();

    /** Shares the round trips of {@code client}'s connections where it can reach them. */
    SharedRoundTrips(UnifiedJedis client, boolean cluster) {
        this(client, cluster, NodeConnections.of(client));
    }

    private SharedRoundTrips(UnifiedJedis client, boolean cluster, NodeConnections nodes) {
        // never more round trips in flight than a node's pool lends connections at once
        this(client, cluster, nodes, nodes == null ? IN_FLIGHT : Math.max(1, Math.min(IN_FLIGHT, nodes.connectionsPerNode())));
    }

    /**
     * @param nodes    where connections come from, or null for every call alone
     * @param inFlight round trips in flight at once to one node
     */
    SharedRoundTrips(UnifiedJedis client, boolean cluster, NodeConnections nodes, int inFlight) {
        this.client = client;
        this.nodes = nodes;
        this.cluster = cluster;
        this.inFlight = inFlight;
        Duration wait = nodes == null ? null : nodes.queueWait();
        this.maxWaitNanos = wait == null ? Long.MAX_VALUE : wait.toNanos();
    }

    /**
     * {@code EVALSHA sha keys args} (the script sent with {@code EVAL}/{@code SCRIPT LOAD} when Redis
     * does not have it), sharing a round trip with other calls to the same node.
     *
     * @return the reply, as the client's {@code evalsha} returns it
     * @throws JedisException as the client's own call would: the reply's error, or the round trip's failure
     */
    Object evalsha(byte[] sha, byte[] script, List<byte[]> keys, List<byte[]> args) {
        return evalsha(sha, script, keys, args, null);
    }

    /**
     * As {@link #evalsha(byte[], byte[], List, List)}; when the round trip carries other calls of
     * {@code batch} too, they go as one call of {@code batch} (not on a Cluster).
     *
     * @param batch the script that runs several calls of this one in one call, or null
     */
    Object evalsha(byte[] sha, byte[] script, List<byte[]> keys, List<byte[]> args, BatchScript batch) {
        Object node = nodes == null || keys.isEmpty() ? null : nodes.nodeOf(keys.get(0));
        if (node == null) {
            return alone(sha, script, keys, args);
        }
        Lane lane = lanes.get(node);
        if (lane == null) {
            lane = newLane(node);
        }
        Call call = new Call(sha, script, keys, args, cluster ? null : batch);
        calls.increment();
        await(lane, call);
        if (call.alone) {
            try {
                return alone(sha, script, keys, args);
            } catch (JedisConnectionException | JedisClusterOperationException e) {
                nodes.failed(node);
                throw e;
            }
        }
        if (call.failure != null) {
            throw call.failure;
        }
        return call.reply;
    }

    /** The lane of a node seen for the first time; the lanes of nodes no longer in the topology go. */
    private Lane newLane(Object node) {
        Lane lane = lanes.computeIfAbsent(node, Lane::new);
        Set<Object> now = nodes.nodes();
        if (now.contains(node)) {
            // a lane removed with calls in it still serves them: its callers hold it
            lanes.keySet().removeIf(n -> !now.contains(n));
        }
        return lane;
    }

    /** The nodes that have a lane (tests). */
    Set<Object> lanes() {
        return Set.copyOf(lanes.keySet());
    }

    /** Calls made so far (those that went alone not counted). */
    long calls() {
        return calls.sum();
    }

    /** Round trips those calls took (a NOSCRIPT reload counts as one more). */
    long roundTrips() {
        return roundTrips.sum();
    }

    /**
     * The node {@code key}'s calls go to (its lane), or null when they go alone. Only a Cluster's node
     * depends on the key: elsewhere {@code key} may be null.
     */
    Object nodeOf(byte[] key) {
        return nodes == null ? null : nodes.nodeOf(key);
    }

    /** The nodes there are now, as the client knows them; empty when Sluice cannot see them. */
    Set<Object> nodes() {
        return nodes == null ? Set.of() : nodes.nodes();
    }

    /** Round trips in flight at once to one node, at most. */
    int inFlight() {
        return inFlight;
    }

    /** Calls queued and not yet sent, over all nodes. */
    int queued() {
        int n = 0;
        for (Lane lane : lanes.values()) {
            for (Call c : lane.queue) {
                if (c.state == Call.QUEUED) n++;
            }
        }
        return n;
    }

    /**
     * The call through the client, which follows redirections. On a Cluster, a call refused with
     * {@code TRYAGAIN} (its slot migrating with some of its keys moved: a settlement names its state
     * key and that key's once key) goes again after a pause, until {@code redis.timeout} has passed
     * since the first refusal: a migration moves a slot's keys within milliseconds.
     */
    private Object alone(byte[] sha, byte[] script, List<byte[]> keys, List<byte[]> args) {
        long deadline = 0;
        for (int attempt = 0; ; attempt++) {
            try {
                return evalshaOrEval(sha, script, keys, args);
            } catch (JedisDataException e) {
                if (!cluster || !RedisFailure.tryAgain(e)) throw e;
                long now = System.nanoTime();
                if (attempt == 0) deadline = now + (maxWaitNanos == Long.MAX_VALUE ? DEFAULT_RETRY_NANOS : maxWaitNanos);
                if (deadline - now <= 0) throw e;
                LockSupport.parkNanos(this, Math.min(deadline - now, TRY_AGAIN_PAUSE_NANOS << Math.min(attempt, 4)));
            }
        }
    }

    private Object evalshaOrEval(byte[] sha, byte[] script, List<byte[]> keys, List<byte[]> args) {
        try {
            return client.evalsha(sha, keys, args);
        } catch (JedisNoScriptException e) {
            return client.eval(script, keys, args); // caches the script again
        }
    }

    /** Returns when {@code call} is answered, carrying round trips when it is its turn. */
    private void await(Lane lane, Call call) {
        lane.queue.offer(call);
        long deadline = System.nanoTime() + maxWaitNanos;
        boolean interrupted = false;
        try {
            for (;;) {
                int state = call.state;
                if (state == Call.DONE) {
                    return;
                }
                if (state == Call.QUEUED && lane.tryStart()) {
                    carry(lane);
                    continue;
                }
                if (state == Call.QUEUED) {
                    long left = maxWaitNanos == Long.MAX_VALUE ? Long.MAX_VALUE : deadline - System.nanoTime();
                    if (left <= 0) {
                        if (call.giveUp()) {
                            lane.wakeNextIfIdle(); // had this call been woken to carry, another must
                            throw waitedTooLong();
                        }
                        continue; // taken just now
                    }
                    LockSupport.parkNanos(this, left);
                } else {
                    LockSupport.park(this); // taken: its carrier answers it, within the socket timeout
                }
                if (Thread.interrupted()) {
                    interrupted = true; // the reply is on its way; the interrupt is the caller's to handle after
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private JedisException waitedTooLong() {
        // the same kind of failure as no pooled connection within max-wait: a timeout
        return new JedisException("no shared round trip to Redis started within " + maxWaitNanos / 1_000_000 + " ms",
                new NoSuchElementException("Timeout waiting for a shared round trip"));
    }

    /** One round trip for the calls queued now, by a thread that holds one of the lane's places in flight. */
    private void carry(Lane lane) {
        List<Call> batch = lane.take();
        try {
            if (batch.isEmpty()) {
                lane.release();
            } else {
                roundTrip(lane, batch);
            }
        } finally {
            for (int i = 0; i < batch.size(); i++) {
                batch.get(i).complete(); // each is answered as its reply is read; this is for an unforeseen error
            }
        }
    }

    /**
     * One round trip for {@code batch}, which gives the lane's place in flight back once: as soon as
     * Redis has answered, before the callers are woken (or when it fails).
     */
    private void roundTrip(Lane lane, List<Call> batch) {
        Connection connection = null;
        boolean released = false;
        try {
            connection = nodes.borrow(lane.node);
            List<Command> commands = commands(batch);
            for (Command command : commands) {
                connection.sendCommand(command.arguments);
            }
            roundTrips.increment();
            List<Command> noScript = null;
            for (Command command : commands) {
                Object reply = read(connection);
                // Redis has run the batch (it answers after running what it read): the next round trip may
                // start, on another connection, while this one's replies are read and its callers woken
                if (!released) {
                    released = true;
                    lane.release();
                }
                if (reply instanceof JedisNoScriptException) {
                    if (noScript == null) noScript = new ArrayList<>();
                    noScript.add(command);
                } else {
                    answer(command, reply); // its callers go on while the rest of the batch is read
                }
            }
            if (noScript != null) {
                reload(connection, noScript);
            }
        } catch (RuntimeException e) {
            JedisException failure = e instanceof JedisException j ? j : new JedisException("Redis call failed: " + e, e);
            boolean timedOut = timedOut(failure);
            boolean again = cluster && failure instanceof JedisConnectionException && !timedOut;
            if (timedOut || failure instanceof JedisConnectionException) {
                nodes.failed(lane.node);
            }
            fail(batch, failure, again);
            if (timedOut) {
                failQueuedBefore(lane, failure, System.nanoTime());
            }
        } catch (Error e) {
            // mid-batch (out of memory, a stack overflow): the connection may hold replies not read, so it must
            // not go back to the pool as sound, and no caller of the batch may wait on for an answer
            if (connection != null) connection.setBroken();
            fail(batch, new JedisException("Redis call failed: " + e, e), false);
            throw e;
        } finally {
            if (connection != null) {
                connection.close(); // back to its pool, or discarded there if broken
            }
            if (!released) {
                lane.release();
            }
        }
    }

    /**
     * A round trip timed out: the node did not answer within {@code redis.timeout}. The calls that
     * queued behind it meanwhile fail with it rather than each wait for a round trip of their own
     * that would most likely time out too, so that no decision pays much more than one timeout for
     * a stuck node (the circuit breaker hears of each failure and soon stops calling). Calls queued
     * after the failure go on as usual.
     */
    /** Completes the calls of {@code batch} not answered yet: to go again alone ({@code again}), else with {@code failure}. */
    private static void fail(List<Call> batch, JedisException failure, boolean again) {
        for (Call c : batch) {
            if (c.settled) continue;
            if (again) {
                c.alone = true;
            } else {
                c.failure = c.caller == Thread.currentThread() ? failure : ownCopy(failure);
            }
            c.settled = true;
            c.complete();
        }
    }

    private void failQueuedBefore(Lane lane, JedisException failure, long failedAt) {
        for (Call c : lane.queue) {
            if (c.queuedAt - failedAt < 0 && c.take()) {
                c.failure = ownCopy(failure);
                c.settled = true;
                c.complete();
            }
        }
    }

    /**
     * The commands of a round trip, in the calls' order: each run of calls of one {@link BatchScript}
     * (two or more) as one call of it, every other call as its own.
     */
    private static List<Command> commands(List<Call> batch) {
        if (batch.size() == 1) {
            Call c = batch.get(0);
            return List.of(new Command(c.sha, c.script, c.command(), batch, false));
        }
        List<Command> commands = new ArrayList<>(batch.size());
        int i = 0;
        while (i < batch.size()) {
            Call c = batch.get(i);
            int end = i + 1;
            if (BatchScript.fits(c)) {
                while (end < batch.size() && batch.get(end).batch == c.batch && BatchScript.fits(batch.get(end))) end++;
            }
            commands.add(end - i == 1 ? new Command(c.sha, c.script, c.command(), List.of(c), false)
                    : c.batch.command(batch.subList(i, end)));
            i = end;
        }
        return commands;
    }

    /** Settles the calls of {@code command} with its reply and wakes their callers. */
    private void answer(Command command, Object reply) {
        if (!command.batched) {
            Call c = command.calls.get(0);
            settle(c, reply);
            c.complete();
            return;
        }
        List<Call> calls = command.calls;
        if (reply instanceof List<?> replies && replies.size() == calls.size()) {
            for (int i = 0; i < calls.size(); i++) {
                settle(calls.get(i), replies.get(i));
                calls.get(i).complete();
            }
            return;
        }
        // the batch's call failed as a whole (BUSY, OOM before the script ran...): each call with it
        JedisDataException error = reply instanceof JedisDataException e ? e
                : new JedisDataException("unexpected reply to a batch of " + calls.size() + " calls: " + reply);
        for (Call c : calls) {
            settle(c, c.caller == Thread.currentThread() ? error : new JedisDataException(error.getMessage(), error));
            c.complete();
        }
    }

    /**
     * Loads each script the commands lacked once, then sends the commands again: one more round trip.
     * A call's script and its batch script go together (a server that lost one lost both).
     */
    private void reload(Connection connection, List<Command> noScript) {
        List<byte[]> loaded = new ArrayList<>(2);
        for (Command command : noScript) {
            Call c = command.calls.get(0);
            load(connection, loaded, c.sha, c.script);
            if (c.batch != null) load(connection, loaded, c.batch.sha(), c.batch.script());
        }
        for (Command command : noScript) {
            connection.sendCommand(command.arguments);
        }
        roundTrips.increment();
        for (int i = 0; i < loaded.size(); i++) {
            read(connection); // the sha, or an error the calls then meet themselves
        }
        for (Command command : noScript) {
            Object reply = read(connection);
            if (reply instanceof JedisNoScriptException) {
                for (Call c : command.calls) {
                    c.alone = true; // flushed again between the load and the call: EVAL, alone
                    c.settled = true;
                    c.complete();
                }
            } else {
                answer(command, reply);
            }
        }
    }

    private static void load(Connection connection, List<byte[]> loaded, byte[] sha, byte[] script) {
        if (loaded.stream().noneMatch(l -> Arrays.equals(l, sha))) {
            loaded.add(sha);
            connection.sendCommand(new CommandArguments(Protocol.Command.SCRIPT).add(Protocol.Keyword.LOAD).add(script));
        }
    }

    /** The next reply; an error reply is returned, not thrown (the connection is still good). */
    private static Object read(Connection connection) {
        try {
            return connection.getOne();
        } catch (JedisDataException error) {
            return error;
        }
    }

    private void settle(Call c, Object reply) {
        if (reply instanceof JedisRedirectionException && cluster) {
            c.alone = true; // MOVED/ASK: the client follows it, and renews its slot map on MOVED
            nodes.redirected();
        } else if (cluster && RedisFailure.tryAgain(reply)) {
            c.alone = true; // its slot is migrating: again, alone, once its keys are in one place
        } else if (reply instanceof JedisDataException error) {
            c.failure = error;
        } else {
            c.reply = reply;
        }
        c.settled = true;
    }

    private static boolean timedOut(Throwable e) {
        return RedisFailure.nodeTimedOut(e);
    }

    /** A failure shared by a batch, as each caller's own exception (its own stack), the cause kept. */
    private static JedisException ownCopy(JedisException shared) {
        return shared instanceof JedisConnectionException
                ? new JedisConnectionException(shared.getMessage(), shared)
                : new JedisException(shared.getMessage(), shared);
    }

    /** The calls waiting for one node and the round trips in flight to it. */
    private final class Lane {
        final Object node;
        final ConcurrentLinkedQueue<Call> queue = new ConcurrentLinkedQueue<>();
        final AtomicInteger running = new AtomicInteger();

        Lane(Object node) {
            this.node = node;
        }

        boolean tryStart() {
            for (;;) {
                int n = running.get();
                if (n >= inFlight) return false;
                if (running.compareAndSet(n, n + 1)) return true;
            }
        }

        /**
         * The calls queued now, in order, taken for one round trip (those that gave up dropped).
         * Synchronized: a second carrier polling at the same time would take every other call, and
         * the two round trips would run the queue's calls out of order. Held for the polls only.
         */
        synchronized List<Call> take() {
            Call first = next();
            if (first == null) return List.of();
            Call second = next();
            if (second == null) return List.of(first); // the round trip of a call that found a place in flight
            List<Call> batch = new ArrayList<>(16);
            batch.add(first);
            batch.add(second);
            Call c;
            while (batch.size() < MAX_BATCH && (c = next()) != null) batch.add(c);
            return batch;
        }

        /** The next queued call that has not given up, taken; or null. */
        private Call next() {
            for (Call c; (c = queue.poll()) != null; ) {
                if (c.take()) return c;
            }
            return null;
        }

        void release() {
            running.decrementAndGet();
            wakeNext();
        }

        void wakeNextIfIdle() {
            if (running.get() < inFlight) wakeNext();
        }

        /** Wakes the first queued caller, to carry the next round trip (the first of it to start does). */
        private void wakeNext() {
            for (Call c : queue) {
                if (c.state == Call.QUEUED) {
                    LockSupport.unpark(c.caller);
                    return;
                }
            }
        }
    }

    /**
     * A script that runs several calls of one script in one call, in their order, each isolated from
     * the others: {@code KEYS} every call's keys, call after call; {@code ARGV[1]} per call four bytes:
     * its number of keys, its number of arguments, the length of its first argument (two bytes,
     * little-endian); {@code ARGV[2]} every call's first argument, call after call, in one string;
     * {@code ARGV[3...]} their further arguments, call after call; the reply an array of each call's
     * reply, an error reply where a call failed. decide-batch.lua is one. A call of more than
     * {@value #MAX_KEYS} keys or {@value #MAX_ARGS} arguments, or whose first argument is longer than
     * {@value #MAX_FIRST} bytes, goes on its own.
     */
    record BatchScript(byte[] sha, byte[] script) {

        static final int MAX_KEYS = 255;
        /** A decision's request, and a settlement's tokens: decide-batch.lua hands a call its first two. */
        static final int MAX_ARGS = 2;
        static final int MAX_FIRST = 65_535;

        /** Whether {@code c} can go in a call of this script. */
        static boolean fits(Call c) {
            return c.batch != null && c.keys.size() <= MAX_KEYS && !c.args.isEmpty() && c.args.size() <= MAX_ARGS
                    && c.args.get(0).length <= MAX_FIRST;
        }

        /** One call of this script for {@code calls}. */
        Command command(List<Call> calls) {
            int[] keys = new int[calls.size()];
            List<List<byte[]>> args = new ArrayList<>(calls.size());
            int all = 0;
            for (int i = 0; i < keys.length; i++) {
                Call c = calls.get(i);
                keys[i] = c.keys.size();
                all += keys[i];
                args.add(c.args);
            }
            CommandArguments arguments = new CommandArguments(Protocol.Command.EVALSHA).add(new Bytes(sha)).add(count(all));
            for (Call c : calls) {
                for (byte[] k : c.keys) arguments.add(new Bytes(k));
            }
            for (byte[] a : argv(keys, args)) arguments.add(new Bytes(a));
            return new Command(sha, script, arguments, calls, true);
        }

        /**
         * The {@code ARGV} of one call of such a script for calls of {@code keys[i]} keys and
         * arguments {@code args.get(i)}, each within this script's bounds (as {@link #fits(Call)} checks).
         */
        static List<byte[]> argv(int[] keys, List<List<byte[]>> args) {
            byte[] layout = new byte[4 * args.size()];
            int length = 0;
            int further = 0;
            for (int i = 0; i < args.size(); i++) {
                List<byte[]> a = args.get(i);
                int first = a.get(0).length;
                layout[4 * i] = (byte) keys[i];
                layout[4 * i + 1] = (byte) a.size();
                layout[4 * i + 2] = (byte) first;
                layout[4 * i + 3] = (byte) (first >>> 8);
                length += first;
                further += a.size() - 1;
            }
            byte[] firsts = new byte[length];
            List<byte[]> argv = new ArrayList<>(2 + further);
            argv.add(layout);
            argv.add(firsts);
            int at = 0;
            for (List<byte[]> a : args) {
                System.arraycopy(a.get(0), 0, firsts, at, a.get(0).length);
                at += a.get(0).length;
            }
            for (List<byte[]> a : args) argv.addAll(a.subList(1, a.size()));
            return argv;
        }
    }

    /**
     * An argument as it is: the client library's own wrapper copies every byte array it is given, and
     * none of these changes once a call is made.
     */
    private record Bytes(byte[] raw) implements Rawable {
        @Override
        public byte[] getRaw() {
            return raw;
        }
    }

    /** Numbers of keys, written once: a call's is its third argument. */
    private static final Rawable[] COUNTS = new Rawable[65];

    static {
        for (int i = 0; i < COUNTS.length; i++) COUNTS[i] = new Bytes(Integer.toString(i).getBytes(StandardCharsets.US_ASCII));
    }

    private static Rawable count(int n) {
        return n < COUNTS.length ? COUNTS[n] : new Bytes(Integer.toString(n).getBytes(StandardCharsets.US_ASCII));
    }

    /** What goes to Redis for one or more calls: their command and what it needs on NOSCRIPT. */
    private record Command(byte[] sha, byte[] script, CommandArguments arguments, List<Call> calls, boolean batched) {
    }

    /** One script call and, once settled, its outcome. */
    private static final class Call {
        static final int QUEUED = 0;
        static final int TAKEN = 1;
        static final int DONE = 2;
        static final int GAVE_UP = 3;
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Call.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final byte[] sha;
        final byte[] script;
        final List<byte[]> keys;
        final List<byte[]> args;
        /** The script to run it with others in one call, or null. */
        final BatchScript batch;
        final Thread caller = Thread.currentThread();
        final long queuedAt = System.nanoTime();
        volatile int state = QUEUED;
        // written by the carrier before DONE, read by the caller after it
        boolean settled;
        Object reply;
        JedisException failure;
        boolean alone;

        Call(byte[] sha, byte[] script, List<byte[]> keys, List<byte[]> args, BatchScript batch) {
            this.sha = sha;
            this.script = script;
            this.keys = keys;
            this.args = args;
            this.batch = batch;
        }

        /** Its own {@code EVALSHA}. */
        CommandArguments command() {
            CommandArguments c = new CommandArguments(Protocol.Command.EVALSHA).add(new Bytes(sha)).add(count(keys.size()));
            for (int i = 0, n = keys.size(); i < n; i++) c.add(new Bytes(keys.get(i)));
            for (int i = 0, n = args.size(); i < n; i++) c.add(new Bytes(args.get(i)));
            return c;
        }

        boolean take() {
            return STATE.compareAndSet(this, QUEUED, TAKEN);
        }

        boolean giveUp() {
            return STATE.compareAndSet(this, QUEUED, GAVE_UP);
        }

        /** Wakes the caller; a call not settled by then fails. Only the first completion counts. */
        void complete() {
            if (state != TAKEN) return;
            if (!settled) {
                failure = new JedisException("the shared round trip ended without a reply for this call");
                settled = true;
            }
            if (STATE.compareAndSet(this, TAKEN, DONE) && caller != Thread.currentThread()) {
                LockSupport.unpark(caller);
            }
        }
    }
}
