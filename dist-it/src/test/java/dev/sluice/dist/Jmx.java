package dev.sluice.dist;

import com.sun.tools.attach.VirtualMachine;

import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * JMX into a server's JVM the way {@code jconsole} does for a local process: the JDK's attach
 * mechanism starts the JVM's local management agent and hands back its connector address. Used
 * for Sluice's MXBeans, thread counts and the diagnostic commands ({@code GC.run},
 * {@code VM.class_hierarchy}) the leak checks need.
 */
final class Jmx implements AutoCloseable {

    private static final ObjectName DIAGNOSTICS = name("com.sun.management:type=DiagnosticCommand");

    private final JMXConnector connector;
    private final MBeanServerConnection server;

    private Jmx(JMXConnector connector) throws IOException {
        this.connector = connector;
        this.server = connector.getMBeanServerConnection();
    }

    static Jmx attach(long pid) {
        try {
            VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
            try {
                String address = vm.startLocalManagementAgent();
                return new Jmx(JMXConnectorFactory.connect(new JMXServiceURL(address)));
            } finally {
                vm.detach();
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not attach to JVM " + pid + " for JMX", e);
        }
    }

    static ObjectName name(String name) {
        try {
            return new ObjectName(name);
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalArgumentException(name, e);
        }
    }

    /** Sluice's instance MXBean of the filter {@code sluice} in {@code context}. */
    static ObjectName sluiceBean(String context) {
        return name("dev.sluice:type=RateLimiter,name=" + context + "/sluice");
    }

    Object attribute(ObjectName bean, String attribute) {
        try {
            return server.getAttribute(bean, attribute);
        } catch (Exception e) {
            throw new IllegalStateException("JMX " + bean + " " + attribute, e);
        }
    }

    long longAttribute(ObjectName bean, String attribute) {
        return ((Number) attribute(bean, attribute)).longValue();
    }

    Set<ObjectName> query(String pattern) {
        try {
            return server.queryNames(name(pattern), null);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The names of the JVM's live threads, without those this JMX connection itself keeps busy
     * (RMI's connection handlers and the connector's timeout thread).
     */
    List<String> threadNames() {
        try {
            ThreadMXBean threads = ManagementFactory.newPlatformMXBeanProxy(server,
                    ManagementFactory.THREAD_MXBEAN_NAME, ThreadMXBean.class);
            return Arrays.stream(threads.getThreadInfo(threads.getAllThreadIds()))
                    .filter(Objects::nonNull)
                    .map(ThreadInfo::getThreadName)
                    .filter(n -> !n.startsWith("RMI ") && !n.startsWith("JMX server connection timeout"))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code jcmd <pid> GC.run}: a full collection, which unloads the classes of unreachable class loaders. */
    void gc() {
        diagnosticCommand("gcRun");
    }

    /** How many classes named {@code className} are loaded, from as many class loaders ({@code VM.class_hierarchy}). */
    int loadedCopies(String className) {
        String hierarchy = diagnosticCommand("vmClassHierarchy", className);
        return (int) hierarchy.lines().filter(l -> l.contains("--" + className + "/")).count();
    }

    private String diagnosticCommand(String operation, String... args) {
        try {
            return String.valueOf(server.invoke(DIAGNOSTICS, operation, new Object[]{args},
                    new String[]{String[].class.getName()}));
        } catch (Exception e) {
            throw new IllegalStateException("diagnostic command " + operation, e);
        }
    }

    @Override
    public void close() {
        try {
            connector.close();
        } catch (IOException ignored) {
            // the server may be gone already
        }
    }
}
