package dev.sluice.it;

import dev.sluice.it.support.ConsoleLog;
import dev.sluice.it.support.Container;
import dev.sluice.it.support.Deployment;
import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.ExampleWar;
import dev.sluice.it.support.Http;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An embedded container of src-it as a {@link Container}: each instance of a deployment is a server
 * of its own in this JVM ({@link WebApp}, {@link TomcatWebApp}, {@link UndertowWebApp}), on a port of
 * its own. Free of any container class: each container's IT class passes how to start one instance.
 *
 * <p>One JVM holds them all, so what is JVM-wide is shared: the settings of {@link ExampleApp#env}
 * are system properties while the deployment runs (tests run one at a time), the log is this JVM's
 * standard error, and the Sluice MXBeans are those registered in this JVM (only the deployment's
 * run while it does; the second and third instance's are named {@code sluice-2}, {@code sluice-3},
 * with the warning Sluice logs for a name already taken).
 */
final class Embedded implements Container {

    /** Starts one instance of the example WAR with these init-params of its {@code sluice} filter. */
    interface Starter {
        DeployedWar start(Map<String, String> sluiceParams) throws Exception;
    }

    private final String name;
    private final Starter starter;

    Embedded(String name, Starter starter) {
        this.name = name;
        this.starter = starter;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Deployment deploy(ExampleApp app, int instances) throws Exception {
        Fleet fleet = new Fleet(app, ConsoleLog.record());
        try {
            app.environment().forEach((k, v) -> fleet.previous.put(k, System.setProperty(k, v)));
            String builtWar = System.getProperty(ExampleWar.PROPERTY);
            if (app.dispatchers() != null) {
                // the starters deploy ExampleWar.path(): for their start, the variant with the app's mapping
                Path dir = Files.createTempDirectory("sluice-variant-");
                fleet.variantDir = dir;
                System.setProperty(ExampleWar.PROPERTY, ExampleWar.variant(Map.of(), app.dispatchers(), dir).toString());
            }
            try {
                for (int i = 0; i < instances; i++) fleet.wars.add(starter.start(app.sluice()));
            } finally {
                if (builtWar == null) System.clearProperty(ExampleWar.PROPERTY);
                else System.setProperty(ExampleWar.PROPERTY, builtWar);
            }
            for (DeployedWar war : fleet.wars) {
                // Undertow (as WildFly) starts the filters at the first request, the others at deployment
                int status = Http.get(war.uri("/health")).statusCode();
                if (status != 200) throw new IllegalStateException(name + ": /health answers " + status + " for " + app);
            }
            return fleet;
        } catch (Exception | Error e) {
            fleet.close();
            throw e;
        }
    }

    @Override
    public String toString() {
        return name;
    }

    private final class Fleet implements Deployment {
        final ExampleApp app;
        final ConsoleLog.Recording log;
        final List<DeployedWar> wars = new ArrayList<>();
        final Map<String, String> previous = new HashMap<>();
        /** Where the WAR with the app's own filter mapping is, if it has one. */
        Path variantDir;

        Fleet(ExampleApp app, ConsoleLog.Recording log) {
            this.app = app;
            this.log = log;
        }

        @Override
        public ExampleApp app() {
            return app;
        }

        @Override
        public int size() {
            return wars.size();
        }

        @Override
        public URI uri(int instance, String path) {
            return wars.get(instance).uri(path);
        }

        @Override
        public String log(int instance) {
            wars.get(instance); // a number outside the fleet fails here, as it does in dist-it
            return log.text();
        }

        @Override
        public List<Object> mxbean(String attribute) {
            try {
                MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
                List<Object> values = new ArrayList<>();
                for (ObjectName bean : jmx.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null)) {
                    values.add(jmx.getAttribute(bean, attribute));
                }
                return values;
            } catch (Exception e) {
                throw new IllegalStateException("JMX attribute " + attribute, e);
            }
        }

        @Override
        public void close() throws Exception {
            Exception failed = null;
            for (DeployedWar war : wars) {
                try {
                    war.close();
                } catch (Exception e) {
                    if (failed == null) failed = e;
                    else failed.addSuppressed(e);
                }
            }
            previous.forEach((k, v) -> {
                if (v == null) System.clearProperty(k);
                else System.setProperty(k, v);
            });
            log.close();
            if (variantDir != null) ExampleWar.deleteRecursively(variantDir);
            if (failed != null) throw failed;
        }
    }
}
