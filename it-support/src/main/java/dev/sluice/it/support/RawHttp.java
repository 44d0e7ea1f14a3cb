package dev.sluice.it.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 as a hostile client writes it, byte for byte, over a socket of its own: what the JDK's
 * client refuses to send (control characters, methods in mixed case, paths it would normalize).
 * One request per connection ({@code Connection: close}); the answer is read to the end.
 */
public final class RawHttp {

    /** An answer: its status (0 if the server closed the connection without one), headers (lower-case names), body. */
    public record Answer(int status, Map<String, String> headers, String body) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    private RawHttp() {
    }

    /**
     * Sends {@code method target} to the application at {@code base} (its context path, if any,
     * goes before {@code target}, written as given) with {@code headers} (name, value pairs, written
     * as given) and {@code body} unless null.
     */
    public static Answer send(URI base, String method, String target, String body, String... headers) {
        String context = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/+$", "");
        StringBuilder request = new StringBuilder(method).append(' ').append(context).append(target).append(" HTTP/1.1\r\n")
                .append("Host: ").append(base.getHost()).append(':').append(base.getPort()).append("\r\n")
                .append("Connection: close\r\n");
        for (int i = 0; i + 1 < headers.length; i += 2) request.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
        byte[] content = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        if (body != null) request.append("Content-Length: ").append(content.length).append("\r\n");
        request.append("\r\n");
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(content);
            out.flush();
            return parse(readAll(socket.getInputStream()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        try {
            for (int n; (n = in.read(buffer)) > 0; ) bytes.write(buffer, 0, n);
        } catch (SocketException reset) {
            // a server that refuses a request may reset the connection after its answer
        }
        return bytes.toByteArray();
    }

    private static Answer parse(byte[] raw) {
        String text = new String(raw, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (!text.startsWith("HTTP/1.") || end < 0) return new Answer(0, Map.of(), text);
        String[] lines = text.substring(0, end).split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) headers.merge(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    lines[i].substring(colon + 1).trim(), (a, b) -> a + ", " + b);
        }
        return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers, text.substring(end + 4));
    }
}
