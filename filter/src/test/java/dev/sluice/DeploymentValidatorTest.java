package dev.sluice;

import jakarta.servlet.FilterConfig;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.ServletContainerInitializer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * At deployment, before any filter is initialized, a bad configuration of a {@link RateLimitFilter}
 * fails the deployment naming the key; a good one passes without touching Redis or JMX. The
 * containers themselves are exercised in {@code src-it} (Undertow, which initializes filters lazily,
 * and Tomcat).
 */
class DeploymentValidatorTest {

    private static final Map<String, String> GOOD = Map.of("rules", "api", "rule.api.limit", "10", "rule.api.window", "1m");

    @Test
    void theJarRegistersTheValidatorForEveryContainer() {
        assertThat(ServiceLoader.load(ServletContainerInitializer.class, getClass().getClassLoader()).stream()
                .map(ServiceLoader.Provider::type)).contains(DeploymentValidator.class);
    }

    @Test
    void badValueFailsTheDeploymentNamingTheKeyAndTheValue() {
        ServletContext context = context(getClass().getClassLoader(),
                registration("sluice", RateLimitFilter.class.getName(), with(GOOD, "rule.api.limit", "-1")));
        assertThatThrownBy(() -> new DeploymentValidator().onStartup(Set.of(), context))
                .isInstanceOf(ServletException.class)
                .hasMessageContaining("Sluice [shop/sluice]").hasMessageContaining("rule.api.limit").hasMessageContaining("-1");
    }

    @Test
    void goodConfigurationPassesWithoutConnectingToRedisOrRegisteringBeans() throws Exception {
        try (ServerSocketChannel redis = ServerSocketChannel.open()) {
            redis.bind(new InetSocketAddress("127.0.0.1", 0));
            redis.configureBlocking(false);
            int port = ((InetSocketAddress) redis.getLocalAddress()).getPort();
            Set<ObjectName> beansBefore = sluiceBeans();
            ServletContext context = context(getClass().getClassLoader(), registration("validated-good",
                    RateLimitFilter.class.getName(), with(GOOD, "redis.url", "redis://127.0.0.1:" + port)));

            new DeploymentValidator().onStartup(Set.of(), context);

            assertThat(redis.accept()).as("no connection to Redis").isNull();
            assertThat(sluiceBeans()).as("no MXBean registered").isEqualTo(beansBefore);
        }
    }

    @Test
    void configFileIsReadThroughTheWebApplicationsClassLoader(@TempDir Path classes) throws Exception {
        Files.writeString(classes.resolve("limits.properties"), "rules = api\nrule.api.limit = 10\nrule.api.windw = 1m\n");
        try (URLClassLoader webapp = new URLClassLoader(new URL[]{classes.toUri().toURL()}, getClass().getClassLoader())) {
            ServletContext context = context(webapp, registration("sluice", RateLimitFilter.class.getName(),
                    Map.of("config", "classpath:/limits.properties")));
            assertThatThrownBy(() -> new DeploymentValidator().onStartup(Set.of(), context))
                    .hasMessageContaining("rule.api.windw").hasMessageContaining("rule.api.window");
        }
    }

    @Test
    void subclassThatKeepsInitIsValidated() {
        ServletContext context = context(getClass().getClassLoader(),
                registration("sluice", KeepsInit.class.getName(), with(GOOD, "rule.api.limit", "-1")));
        assertThatThrownBy(() -> new DeploymentValidator().onStartup(Set.of(), context))
                .hasMessageContaining("rule.api.limit");
    }

    @Test
    void subclassThatOverridesInitAndOtherFiltersAreLeftToThemselves() throws Exception {
        Map<String, String> notSluiceKeys = Map.of("rules", "whatever", "limit", "-1");
        ServletContext context = context(getClass().getClassLoader(),
                registration("own-init", OverridesInit.class.getName(), Map.of()),
                registration("other", OtherFilter.class.getName(), notSluiceKeys),
                registration("missing", "com.example.NotOnTheClassPath", notSluiceKeys),
                registration("by-instance", null, Map.of()));

        new DeploymentValidator().onStartup(Set.of(), context); // nothing to fail
    }

    /** A subclass that configures itself some other way: its own init validates. */
    public static class OverridesInit extends RateLimitFilter {
        @Override
        public void init(FilterConfig config) {
        }
    }

    public static class KeepsInit extends RateLimitFilter {
    }

    public static class OtherFilter extends HttpFilter {
    }

    private static Set<ObjectName> sluiceBeans() throws Exception {
        return ManagementFactory.getPlatformMBeanServer().queryNames(new ObjectName("dev.sluice:*"), null);
    }

    private static Map<String, String> with(Map<String, String> params, String key, String value) {
        Map<String, String> m = new LinkedHashMap<>(params);
        m.put(key, value);
        return m;
    }

    private static FilterRegistration registration(String name, String className, Map<String, String> params) {
        return (FilterRegistration) Proxy.newProxyInstance(DeploymentValidatorTest.class.getClassLoader(),
                new Class<?>[]{FilterRegistration.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getName" -> name;
                    case "getClassName" -> className;
                    case "getInitParameters" -> params;
                    case "getInitParameter" -> params.get((String) args[0]);
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    private static ServletContext context(ClassLoader loader, FilterRegistration... registrations) {
        Map<String, FilterRegistration> byName = new LinkedHashMap<>();
        for (FilterRegistration r : registrations) byName.put(r.getName(), r);
        return (ServletContext) Proxy.newProxyInstance(DeploymentValidatorTest.class.getClassLoader(),
                new Class<?>[]{ServletContext.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getClassLoader" -> loader;
                    case "getContextPath" -> "/shop";
                    case "getFilterRegistrations" -> byName;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
