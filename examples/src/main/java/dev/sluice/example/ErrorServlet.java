package dev.sluice.example;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/** The application's error page ({@code <error-page>} in web.xml): the status as JSON, whatever the method. */
public class ErrorServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        Object status = req.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        resp.setContentType("application/json");
        resp.getWriter().write("{\"error\":" + (status instanceof Integer code ? code : resp.getStatus()) + "}");
    }
}
