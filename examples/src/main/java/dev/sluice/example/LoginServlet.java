package dev.sluice.example;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * A stand-in login endpoint: a POST with {@code user=alice&password=correct-horse} logs in (200);
 * any other POST is a failed attempt (401). Sluice's login rule counts only the 401s
 * ({@code rule.login.count = 401}), so a user who types the password right is never locked out.
 */
public class LoginServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        boolean ok = "alice".equals(req.getParameter("user")) && "correct-horse".equals(req.getParameter("password"));
        resp.setStatus(ok ? HttpServletResponse.SC_OK : HttpServletResponse.SC_UNAUTHORIZED);
        resp.setContentType("application/json");
        resp.getWriter().write(ok ? "{\"login\":\"ok\"}" : "{\"login\":\"failed\"}");
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/html");
        resp.getWriter().write("<form method=post><input name=user><input type=password name=password><button>Log in</button></form>");
    }
}
