package dev.sluice.internal.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.executors.CommandExecutor;
import redis.clients.jedis.providers.ConnectionProvider;

import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The command executor of a Sentinel or Cluster client that could not be built at start because no
 * Sentinel or seed answered. The application starts anyway (Sluice applies the failure policy
 * meanwhile), and the real executor is built in the background, so that no request ever pays for
 * discovering the topology (which costs up to a timeout per node).
 *
 * <p>One daemon thread ({@code sluice-redis-discovery-<instance>}) asks the Sentinels or seeds every
 * {@code retryMillis} until they answer, then ends. Until then every call fails at once with a
 * {@link JedisConnectionException}, as a call to an unreachable Redis would, and the circuit breaker
 * keeps such calls rare. {@link #close()} stops the thread. Once discovered, {@link #provider()} is the
 * connection provider the executor uses, for shared round trips.
 */
final class DeferredCommandExecutor implements CommandExecutor {

    private static final Logger LOG = LoggerFactory.getLogger(DeferredCommandExecutor.class);

    private final Supplier<ConnectionProvider> providers;
    private final Function<ConnectionProvider, CommandExecutor> executors;
    private final String target;
    private final String instance;
    private final long retryMillis;
    private final Thread discovery;
    private volatile ConnectionProvider provider;
    private volatile CommandExecutor delegate;
    private volatile boolean closed;

    /**
     * @param providers builds the connection provider, asking the Sentinels or seeds (throws while none answers)
     * @param executors the executor over a provider
     * @param target    the Redis asked, for the log
     * @param instance  the Sluice instance's name ({@code shop/sluice}), for the log and the thread's name
     */
    DeferredCommandExecutor(Supplier<ConnectionProvider> providers, Function<ConnectionProvider, CommandExecutor> executors,
                            String target, String instance, long retryMillis) {
        this.providers = providers;
        this.executors = executors;
        this.target = target;
        this.instance = instance;
        this.retryMillis = retryMillis;
        this.discovery = new Thread(this::discover, "sluice-redis-discovery-" + instance);
        discovery.setDaemon(true);
        discovery.start();
    }

    private void discover() {
        while (!closed) {
            try {
                ConnectionProvider p = providers.get();
                CommandExecutor built = executors.apply(p);
                synchronized (this) {
                    if (!closed) {
                        provider = p;
                        delegate = built;
                        LOG.info("Sluice [{}]: {} answers; Redis topology discovered", instance, target);
                        return;
                    }
                }
                built.close();
                return;
            } catch (Exception notYet) {
                LOG.debug("Sluice [{}]: no answer yet from {}: {}", instance, target, notYet.getMessage());
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

    /** The discovered connection provider, or null while no Sentinel or seed has answered. */
    ConnectionProvider provider() {
        return provider;
    }

    /** A connection from the discovered provider; fails at once, as a call does, while none is known. */
    Connection connection() {
        ConnectionProvider p = provider;
        if (p != null) return p.getConnection();
        throw new JedisConnectionException(closed ? "the client of " + target + " is closed" : "no answer yet from " + target);
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
        ClusterTopology.awaitEnd(discovery); // an attempt under way: at most a timeout per node
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
