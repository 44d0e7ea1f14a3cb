package dev.sluice.bench.webapp;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The cheapest filter that asks Redis once per request (issue 17's floor): one {@code EVALSHA} of
 * {@code return 1} per request, over a socket each request thread holds for itself (a
 * {@link ThreadLocal}), the RESP command written as one prepared byte array and the 4-byte reply
 * {@code :1\r\n} read back directly. No client library, no pool, no parsing beyond checking the
 * reply. A limiter that keeps its state in Redis and asks it once per request cannot do less.
 *
 * <p>Init-params: {@code redis.host} (default 127.0.0.1), {@code redis.port} (required). A failed
 * call closes that thread's socket and fails the request (a 500): the harness counts non-2xx. A
 * Redis that stops answering hangs the request threads (no read timeout): a benchmark's risk only.
 */
public final class FloorFilter implements Filter {

    private static final byte[] REPLY = ":1\r\n".getBytes(StandardCharsets.US_ASCII);
    /** Connecting, and the one call at init; the requests' reads block without a timeout (see {@link #open}). */
    private static final int TIMEOUT_MS = 2_000;

    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final ThreadLocal<Connection> connection = new ThreadLocal<>();
    private InetSocketAddress redis;
    private byte[] command;
    /** Init-param {@code fields=true}: the five rate-limit fields too ({@link FieldsFilter}), as Sluice writes them. */
    private boolean fields;

    @Override
    public void init(FilterConfig config) throws ServletException {
        String host = config.getInitParameter("redis.host");
        String port = config.getInitParameter("redis.port");
        fields = Boolean.parseBoolean(config.getInitParameter("fields"));
        if (port == null) throw new ServletException("init-param redis.port is required");
        redis = new InetSocketAddress(host == null ? "127.0.0.1" : host, Integer.parseInt(port.trim()));
        try (Socket s = open()) {
            s.setSoTimeout(TIMEOUT_MS);
            // SCRIPT LOAD answers the script's SHA-1 as a bulk string: $40\r\n<sha>\r\n
            s.getOutputStream().write(resp("SCRIPT", "LOAD", "return 1"));
            byte[] reply = new byte["$40\r\n".length() + 40 + 2];
            readFully(s.getInputStream(), reply);
            if (reply[0] != '$') throw new ServletException("SCRIPT LOAD answered " + new String(reply, StandardCharsets.US_ASCII));
            command = resp("EVALSHA", new String(reply, "$40\r\n".length(), 40, StandardCharsets.US_ASCII), "0");
        } catch (IOException e) {
            throw new ServletException("cannot reach Redis at " + redis, e);
        }
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        Connection c = connection.get();
        if (c == null) {
            c = new Connection(open());
            sockets.add(c.socket);
            connection.set(c);
        }
        try {
            c.out.write(command);
            readFully(c.in, c.reply);
            if (!Arrays.equals(c.reply, REPLY)) {
                throw new IOException("EVALSHA answered " + new String(c.reply, StandardCharsets.US_ASCII));
            }
        } catch (IOException e) {
            connection.remove();
            sockets.remove(c.socket);
            c.socket.close();
            throw new ServletException("the floor's EVALSHA failed", e);
        }
        if (fields) FieldsFilter.write((jakarta.servlet.http.HttpServletResponse) response);
        chain.doFilter(request, response);
    }

    @Override
    public void destroy() {
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        sockets.clear();
    }

    /**
     * A connected socket, without a read timeout: the JDK reads a socket that has one in non-blocking
     * mode (read, {@code poll}, read again: three system calls where one blocking read does), and
     * the floor is the least a round trip can cost. (Jedis sets one, so Sluice pays those calls.)
     */
    private Socket open() throws IOException {
        Socket s = new Socket();
        s.setTcpNoDelay(true);
        s.connect(redis, TIMEOUT_MS);
        return s;
    }

    private static void readFully(InputStream in, byte[] into) throws IOException {
        for (int at = 0; at < into.length; ) {
            int n = in.read(into, at, into.length - at);
            if (n < 0) throw new IOException("Redis closed the connection");
            at += n;
        }
    }

    /** A RESP array of bulk strings. */
    private static byte[] resp(String... args) {
        StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) b.append('$').append(a.length()).append("\r\n").append(a).append("\r\n");
        return b.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** One request thread's socket, its streams and its reply buffer. */
    private static final class Connection {
        final Socket socket;
        final OutputStream out;
        final InputStream in;
        final byte[] reply = new byte[REPLY.length];

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            this.out = socket.getOutputStream();
            this.in = socket.getInputStream();
        }
    }
}
