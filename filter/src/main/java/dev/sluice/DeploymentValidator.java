package dev.sluice;

import dev.sluice.config.ConfigLoader;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.ServletContainerInitializer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.Set;

/**
 * Fails the deployment of a web application whose {@link RateLimitFilter} has a bad configuration,
 * on every container, while it is being deployed. Tomcat and Jetty initialize filters during the
 * deployment anyway; WildFly's Undertow initializes them at the first request, so without this a
 * WAR with a typo would be reported deployed and then answer every request with a 500.
 *
 * <p>The container finds this initializer in the sluice-filter jar
 * ({@code META-INF/services/jakarta.servlet.ServletContainerInitializer}), also when {@code web.xml}
 * says {@code metadata-complete="true"} (which turns off annotation scanning, not initializers). For
 * each filter registered by then ({@code web.xml}, annotations, initializers that ran earlier) whose
 * class is {@code RateLimitFilter} or a subclass that keeps its {@code init}, it reads the
 * init-params and the file they name exactly as {@code init} will ({@link ConfigLoader#fromInitParams})
 * and nothing more: no Redis connection, no JMX, no thread, no log line when all is well. A bad key
 * throws the same message {@code init} would, which the container logs as the deployment's failure.
 *
 * <p>Not seen here, and so still validated by their own {@code init}: a subclass that overrides
 * {@code init} (it may configure itself some other way), and filters registered after the
 * initializers ran (from a {@code ServletContextListener}).
 *
 * <p>The container calls this class; applications have no use for it.
 */
public final class DeploymentValidator implements ServletContainerInitializer {

    private static final Logger log = LoggerFactory.getLogger(DeploymentValidator.class);

    @Override
    public void onStartup(Set<Class<?>> ignored, ServletContext context) throws ServletException {
        ClassLoader loader = context.getClassLoader();
        if (loader == null) loader = DeploymentValidator.class.getClassLoader();
        for (Map.Entry<String, ? extends FilterRegistration> filter : context.getFilterRegistrations().entrySet()) {
            if (!configuredByInitParams(filter.getValue().getClassName(), loader)) continue;
            try {
                ConfigLoader.fromInitParams(filter.getValue().getInitParameters(), loader);
            } catch (RuntimeException e) {
                String name = RateLimitFilter.instanceName(context, filter.getKey());
                log.error("Sluice [{}] failed to start: {}", name, e.getMessage());
                throw new ServletException("Sluice [" + name + "] failed to start: " + e.getMessage(), e);
            }
        }
    }

    /** Whether {@code className} is a {@link RateLimitFilter} whose {@code init} reads its init-params. */
    static boolean configuredByInitParams(String className, ClassLoader loader) {
        if (className == null) return false;
        Class<?> type;
        try {
            type = Class.forName(className, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            return false; // not ours to report: the container fails the filter itself
        }
        if (!RateLimitFilter.class.isAssignableFrom(type)) return false;
        try {
            return type.getMethod("init", FilterConfig.class).getDeclaringClass() == RateLimitFilter.class;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
