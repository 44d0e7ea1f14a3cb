package dev.sluice.example;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * A stand-in JSON API: answers every GET under /api/ with the path and the instance's port, but
 * {@code /api/missing/...}, which is not found (404, answered by the application's error page).
 */
public class ApiServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getPathInfo() == null ? "/" : req.getPathInfo();
        if (path.startsWith("/missing")) {
            resp.sendError(HttpServletResponse.SC_NOT_FOUND);
            return;
        }
        resp.setContentType("application/json");
        resp.getWriter().write("{\"path\":\"" + path.replaceAll("[^A-Za-z0-9/_.-]", "") + "\",\"instance\":"
                + req.getLocalPort() + "}");
    }

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        doGet(req, resp);
    }
}
