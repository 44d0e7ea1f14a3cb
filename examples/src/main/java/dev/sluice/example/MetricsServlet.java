package dev.sluice.example;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * Prometheus' scrape endpoint: a Prometheus registry joins Micrometer's global registry, where Sluice
 * registers its meters ({@code sluice_decisions_total}, ...), and this servlet serves its text format.
 */
public class MetricsServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;

    private transient PrometheusMeterRegistry prometheus;

    @Override
    public void init() {
        prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Metrics.addRegistry(prometheus);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/plain; version=0.0.4; charset=utf-8");
        resp.getWriter().write(prometheus.scrape());
    }

    @Override
    public void destroy() {
        Metrics.removeRegistry(prometheus);
        prometheus.close();
    }
}
