package dev.sluice.example;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * Prometheus' scrape endpoint: serves, in Prometheus' text format, the registry that
 * {@link PrometheusRegistry} added to Micrometer's global registry, where Sluice registers its
 * meters ({@code sluice_decisions_total}, ...).
 */
public class MetricsServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain; version=0.0.4; charset=utf-8");
        resp.getWriter().write(PrometheusRegistry.of(getServletContext()).scrape());
    }
}
