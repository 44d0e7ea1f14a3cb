package dev.sluice.internal.redis;

import dev.sluice.Sluice;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.executors.CommandExecutor;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * The command executor of a Sentinel or Cluster client that could not be built at start because no
 * Sentinel or seed answered. It builds the real one on first use, so the application starts (Sluice
 * applies the failure policy meanwhile) and uses Redis as soon as it is there.
 *
 * <p>Building asks the Sentinels or seeds for the topology, which costs up to a timeout per node, so
 * there is at most one attempt at a time and one per {@code retryMillis}; every other call fails at
 * once with a {@link JedisConnectionException}, as a call to an unreachable Redis would.
 */
final class DeferredCommandExecutor implements CommandExecutor {

    private final Supplier<CommandExecutor> factory;
    private final String target;
    private final long retryNanos;
    private final AtomicBoolean attempting = new AtomicBoolean();
    private volatile CommandExecutor delegate;
    private volatile long nextAttemptAt;
    private volatile boolean closed;

    DeferredCommandExecutor(Supplier<CommandExecutor> factory, String target, long retryMillis) {
        this.factory = factory;
        this.target = target;
        this.retryNanos = retryMillis * 1_000_000L;
        this.nextAttemptAt = System.nanoTime();
    }

    @Override
    public <T> T executeCommand(CommandObject<T> command) {
        return delegate().executeCommand(command);
    }

    @Override
    public <T> T broadcastCommand(CommandObject<T> command) {
        return delegate().broadcastCommand(command);
    }

    private CommandExecutor delegate() {
        CommandExecutor d = delegate;
        if (d != null) return d;
        if (closed) throw new JedisConnectionException("the client of " + target + " is closed");
        if (System.nanoTime() - nextAttemptAt < 0 || !attempting.compareAndSet(false, true)) {
            throw new JedisConnectionException("no answer yet from " + target);
        }
        try {
            if (delegate == null) {
                CommandExecutor built = factory.get();
                synchronized (this) {
                    if (closed) {
                        built.close();
                        throw new JedisConnectionException("the client of " + target + " is closed");
                    }
                    delegate = built;
                }
            }
            return delegate;
        } catch (RuntimeException e) {
            nextAttemptAt = System.nanoTime() + retryNanos;
            throw e;
        } catch (Exception e) { // close() of a half-built executor
            nextAttemptAt = System.nanoTime() + retryNanos;
            throw new JedisConnectionException(e);
        } finally {
            attempting.set(false);
        }
    }

    @Override
    public void close() {
        CommandExecutor d;
        synchronized (this) {
            closed = true;
            d = delegate;
        }
        if (d == null) return;
        try {
            d.close();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new JedisException("closing the client of " + target + " failed", e);
        }
    }
}
