package dev.sluice.bench;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisSocketFactory;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts round trips to Redis on the client side: every connection the benchmark pools open
 * comes from {@link #socketFactory()}, whose sockets count the writes Jedis makes. Jedis buffers
 * one command and writes it in one go before reading the reply, so without pipelining one write
 * is one round trip. (Redis's own {@code INFO} counters include the commands run inside scripts,
 * so they cannot tell a GET sent by the client from a GET inside a Lua script.)
 */
public final class RoundTrips {

    private static final LongAdder WRITES = new LongAdder();

    private RoundTrips() {
    }

    /** Round trips so far, by every pool in this JVM. */
    public static long count() {
        return WRITES.sum();
    }

    /** Plain TCP sockets to the benchmark Redis, set up as Jedis's default factory does, that count writes. */
    public static JedisSocketFactory socketFactory(HostAndPort hostAndPort, int timeoutMs) {
        return new JedisSocketFactory() {
            @Override
            public Socket createSocket() throws JedisConnectionException {
                Socket socket = new CountingSocket();
                try {
                    socket.setReuseAddress(true);
                    socket.setKeepAlive(true);
                    socket.setTcpNoDelay(true);
                    socket.setSoLinger(true, 0);
                    socket.connect(new InetSocketAddress(hostAndPort.getHost(), hostAndPort.getPort()), timeoutMs);
                    socket.setSoTimeout(timeoutMs);
                    return socket;
                } catch (IOException e) {
                    try {
                        socket.close();
                    } catch (IOException ignored) {
                        // already failing
                    }
                    throw new JedisConnectionException("cannot connect to " + hostAndPort, e);
                }
            }
        };
    }

    private static final class CountingSocket extends Socket {
        private OutputStream out;

        @Override
        public synchronized OutputStream getOutputStream() throws IOException {
            if (out == null) {
                out = new FilterOutputStream(super.getOutputStream()) {
                    @Override
                    public void write(byte[] b, int off, int len) throws IOException {
                        WRITES.increment();
                        super.out.write(b, off, len);
                    }
                };
            }
            return out;
        }
    }
}
