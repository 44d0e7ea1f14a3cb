package dev.sluice.example;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.io.PrintWriter;

/**
 * A page that embeds an API answer: {@code /include/x} includes {@code /api/x} in a JSON object of its
 * own. The api rule decides the request at the include; refused, its 429 is the whole answer.
 */
public class IncludeServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
        String rest = req.getPathInfo() == null ? "/" : req.getPathInfo();
        resp.setContentType("application/json");
        PrintWriter out = resp.getWriter();
        out.write("{\"included\":");
        req.getRequestDispatcher("/api" + rest).include(req, resp);
        out.write("}");
    }
}
