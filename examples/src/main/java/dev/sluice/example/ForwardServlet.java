package dev.sluice.example;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * Forwards {@code /forward/x} to {@code /api/x}: one client request, two dispatches through the
 * filter, counted once.
 */
public class ForwardServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
        String rest = req.getPathInfo() == null ? "/" : req.getPathInfo();
        req.getRequestDispatcher("/api" + rest).forward(req, resp);
    }
}
