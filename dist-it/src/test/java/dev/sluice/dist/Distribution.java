package dev.sluice.dist;

import dev.sluice.it.support.Container;
import dev.sluice.it.support.Deployment;
import dev.sluice.it.support.ExampleApp;
import dev.sluice.it.support.ExampleWar;

import javax.management.ObjectName;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real distribution as a {@link Container}: up to {@value #MAX_SERVERS} server processes, started
 * (in parallel) when a deployment first needs them, kept for all the deployments of a test class
 * and stopped when the container is closed. A deployment is the WAR, with the app's Sluice keys as
 * init-params in its {@code web.xml}, dropped into the deployment directory of the first N servers
 * under a context of its own, as users deploy; closing it deletes the WAR and waits until the
 * context is gone. The app's settings
 * ({@link ExampleApp#env}) are the server processes' environment: servers started with others are
 * restarted first.
 */
final class Distribution implements Container {

    /** A deployment of three instances is the most a test asks for; WildFly takes about 20 s to start. */
    static final int MAX_SERVERS = 3;

    /** Creates one server, not yet started, named {@code name}, whose process gets {@code environment}. */
    interface ServerFactory {
        Server create(String name, Map<String, String> environment);
    }

    private final String name;
    private final ServerFactory factory;
    private final AtomicInteger contexts = new AtomicInteger();
    private List<Server> servers = List.of();
    private Map<String, String> environment = Map.of();

    Distribution(String name, ServerFactory factory) {
        this.name = name;
        this.factory = factory;
    }

    @Override
    public synchronized String name() {
        return servers.isEmpty() ? name : servers.get(0).product();
    }

    /**
     * The first {@code n} servers, their processes started with {@code env}: the missing ones are
     * started (in parallel), and all are restarted if they run with another environment.
     */
    synchronized List<Server> servers(int n, Map<String, String> env) {
        if (n > MAX_SERVERS) throw new IllegalArgumentException(n + " servers: at most " + MAX_SERVERS);
        if (!env.equals(environment)) {
            Servers.closeAll(servers);
            servers = List.of();
            environment = Map.copyOf(env);
        }
        if (servers.size() < n) {
            List<Server> added = new ArrayList<>();
            for (int i = servers.size() + 1; i <= n; i++) added.add(factory.create(name + "-" + i, env));
            List<Server> all = new ArrayList<>(servers);
            all.addAll(Servers.startAll(added));
            servers = List.copyOf(all);
        }
        return servers.subList(0, n);
    }

    /** The first {@code n} servers, with the environment they run with (none if none run yet). */
    synchronized List<Server> servers(int n) {
        return servers(n, environment);
    }

    @Override
    public Deployment deploy(ExampleApp app, int instances) {
        if (instances < 1) throw new IllegalArgumentException(instances + " instances");
        List<Server> used = List.copyOf(servers(instances, app.environment()));
        String context = app.name().replaceAll("[^A-Za-z0-9-]", "-") + "-" + contexts.incrementAndGet();
        Path war = ExampleWar.of(app, Server.serversDir().resolve("wars"));
        List<Map<Path, Long>> marks = used.stream().map(Server::logMark).toList();
        try {
            Servers.eachInParallel(used, s -> s.deployServing(context, war));
        } catch (RuntimeException | Error e) {
            undeploy(used, context, e);
            throw e;
        }
        return new Deployment() {
            @Override
            public ExampleApp app() {
                return app;
            }

            @Override
            public int size() {
                return used.size();
            }

            @Override
            public URI uri(int instance, String path) {
                return used.get(instance).uri(context, path);
            }

            @Override
            public String log(int instance) {
                return used.get(instance).logSince(marks.get(instance));
            }

            @Override
            public List<Object> mxbean(String attribute) {
                ObjectName bean = Jmx.sluiceBean(context);
                List<Object> values = new ArrayList<>();
                for (Server s : used) {
                    if (!s.jmx().query(bean.toString()).isEmpty()) values.add(s.jmx().attribute(bean, attribute));
                }
                return values;
            }

            @Override
            public void close() {
                Servers.eachInParallel(used, s -> s.undeploy(context));
            }

            @Override
            public String toString() {
                return context + " on " + used;
            }
        };
    }

    /** Undeploys what a failed deployment left, keeping the failure the test sees. */
    private static void undeploy(List<Server> servers, String context, Throwable failure) {
        try {
            Servers.eachInParallel(servers, s -> s.undeploy(context));
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }

    @Override
    public synchronized void close() {
        Servers.closeAll(servers);
        servers = List.of();
    }

    @Override
    public String toString() {
        return name();
    }
}
