package dev.sluice.bench.webapp;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** The trivial application: 200, {@code text/plain}, two bytes. */
public final class Hello extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final byte[] OK = "ok".getBytes(StandardCharsets.US_ASCII);

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain");
        resp.setContentLength(OK.length);
        resp.getOutputStream().write(OK);
    }
}
