package dev.sluice.example;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;

/**
 * Adds a Prometheus registry to Micrometer's global registry when the application starts, and
 * removes it when it stops. A listener starts before any filter, so the registry is there before
 * Sluice registers its meters: a registry added after them would see them as well, but Micrometer
 * then warns that what they recorded before it came is not in it.
 */
public class PrometheusRegistry implements ServletContextListener {

    private static final String ATTRIBUTE = PrometheusMeterRegistry.class.getName();

    /** The application's Prometheus registry. */
    static PrometheusMeterRegistry of(ServletContext context) {
        return (PrometheusMeterRegistry) context.getAttribute(ATTRIBUTE);
    }

    @Override
    public void contextInitialized(ServletContextEvent event) {
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Metrics.addRegistry(prometheus);
        event.getServletContext().setAttribute(ATTRIBUTE, prometheus);
    }

    @Override
    public void contextDestroyed(ServletContextEvent event) {
        PrometheusMeterRegistry prometheus = of(event.getServletContext());
        Metrics.removeRegistry(prometheus);
        prometheus.close();
    }
}
