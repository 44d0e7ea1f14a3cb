package dev.sluice.internal.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.executors.CommandExecutor;

import java.util.function.Supplier;

/**
 * The command executor of a Sentinel or Cluster client that could not be built at start because no
 * Sentinel or seed answered. The application starts anyway (Sluice applies the failure policy
 * meanwhile), and the real executor is built in the background, so that no request ever pays for
 * discovering the topology (which costs up to a timeout per node).
 *
 * <p>One daemon thread ({@code sluice-redis-discovery}) asks the Sentinels or seeds every
 * {@code retryMillis} until they answer, then ends. Until then every call fails at once with a
 * {@link JedisConnectionException}, as a call to an unreachable Redis would, and the circuit breaker
 * keeps such calls rare. {@link #close()} stops the thread.
 */
final class DeferredCommandExecutor implements CommandExecutor {

    private static final Logger LOG = LoggerFactory.getLogger(DeferredCommandExecutor.class);

    private final Supplier<CommandExecutor> factory;
    private final String target;
    private final long retryMillis;
    private final Thread discovery;
    private volatile CommandExecutor delegate;
    private volatile boolean closed;

    DeferredCommandExecutor(Supplier<CommandExecutor> factory, String target, long retryMillis) {
        this.factory = factory;
        this.target = target;
        this.retryMillis = retryMillis;
        this.discovery = new Thread(this::discover, "sluice-redis-discovery");
        discovery.setDaemon(true);
        discovery.start();
    }

    private void discover() {
        while (!closed) {
            try {
                CommandExecutor built = factory.get();
                synchronized (this) {
                    if (!closed) {
                        delegate = built;
                        LOG.info("Sluice: {} answers; Redis topology discovered", target);
                        return;
                    }
                }
                built.close();
                return;
            } catch (Exception notYet) {
                LOG.debug("Sluice: no answer yet from {}: {}", target, notYet.getMessage());
            }
            try {
                Thread.sleep(retryMillis);
            } catch (InterruptedException stop) {
                return;
            }
        }
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
        throw new JedisConnectionException("no answer yet from " + target);
    }

    /** Whether the topology has been discovered. */
    boolean connected() {
        return delegate != null;
    }

    @Override
    public void close() {
        CommandExecutor d;
        synchronized (this) {
            closed = true;
            d = delegate;
        }
        discovery.interrupt();
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
