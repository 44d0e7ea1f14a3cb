package dev.sluice.bench;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * {@code GET /} one request at a time on a kept-alive connection (a new one when the server closes
 * it, as Tomcat does every {@code maxKeepAliveRequests}): a load whose shape does not depend on the
 * machine's speed, so the bytes the server allocates per request can be compared between variants
 * on a busy machine. Every response must be a 200 with a {@code Content-Length}.
 */
final class SequentialClient implements AutoCloseable {

    private static final byte[] REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: sluice-bench\r\n\r\n"
            .getBytes(StandardCharsets.US_ASCII);

    private final int port;
    private Socket socket;
    private InputStream in;
    private OutputStream out;
    private final StringBuilder line = new StringBuilder(128);

    SequentialClient(int port) {
        this.port = port;
    }

    /** Sends {@code n} requests, each after the previous response. */
    void get(int n) throws IOException {
        for (int i = 0; i < n; i++) get();
    }

    private void get() throws IOException {
        if (socket == null) {
            socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(30_000);
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            in = new BufferedInputStream(socket.getInputStream(), 8192);
            out = socket.getOutputStream();
        }
        out.write(REQUEST);
        out.flush();
        String status = readLine();
        if (!status.startsWith("HTTP/1.1 200")) throw new IOException("GET / on port " + port + " answered " + status);
        long length = -1;
        boolean close = false;
        for (String h = readLine(); !h.isEmpty(); h = readLine()) {
            int colon = h.indexOf(':');
            if (colon < 0) continue;
            String name = h.substring(0, colon).trim();
            String value = h.substring(colon + 1).trim();
            if (name.equalsIgnoreCase("Content-Length")) length = Long.parseLong(value);
            if (name.equalsIgnoreCase("Connection") && value.equalsIgnoreCase("close")) close = true;
        }
        if (length < 0) throw new IOException("a response without Content-Length from port " + port);
        for (long left = length; left > 0; left--) {
            if (in.read() < 0) throw new IOException("connection closed in a response body");
        }
        if (close) close();
    }

    private String readLine() throws IOException {
        line.setLength(0);
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) throw new IOException("connection closed in a response's head");
            if (c != '\r') line.append((char) c);
        }
        return line.toString();
    }

    @Override
    public void close() throws IOException {
        if (socket != null) socket.close();
        socket = null;
    }
}
