package dev.sluice.metrics;

import com.sun.tools.attach.VirtualMachine;
import com.sun.tools.attach.VirtualMachineDescriptor;

import javax.management.Attribute;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.TabularData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Sluice's figures on a server without a display: the jar's {@code Main-Class}. Run as the server's
 * user, with the server's JDK (or any JDK 17+):
 *
 * <pre>
 * java -jar sluice-filter-&lt;version&gt;.jar                      the Java processes of this user (pid, main class)
 * java -jar sluice-filter-&lt;version&gt;.jar &lt;pid&gt;                every Sluice instance's MXBeans in that JVM
 * java -jar sluice-filter-&lt;version&gt;.jar &lt;pid&gt; shop/sluice    one instance's
 * java -jar sluice-filter-&lt;version&gt;.jar &lt;pid&gt; shop/sluice reload
 * java -jar sluice-filter-&lt;version&gt;.jar &lt;pid&gt; shop/sluice clearDeniedCache
 * java -jar sluice-filter-&lt;version&gt;.jar &lt;pid&gt; shop/sluice resetClient api ip=203.0.113.7
 * </pre>
 *
 * It attaches the way {@code jconsole <pid>} does (the JDK's attach mechanism starts the JVM's local
 * management agent, which listens on the loopback interface only, and hands back its address): nothing
 * is configured in the server and no port is opened to the network. It needs only the JDK (module
 * {@code jdk.attach}), none of the library's dependencies, and it is never loaded by the filter.
 */
public final class Figures {

    private static final String USAGE = String.join("\n",
            "usage: java -jar sluice-filter.jar [<pid> [<instance> [reload | clearDeniedCache | resetClient <rule> <client>]]]",
            "  no argument: the Java processes this user may attach to",
            "  <pid>: the figures of every Sluice instance in that JVM (dev.sluice MXBeans)",
            "  <instance>: one instance's figures, e.g. shop/sluice (the JMX name, as the start-up line shows it)",
            "  then an operation of the instance's MXBean; its answer is printed",
            "Run it as the user the server runs as.");

    private Figures() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * @return the exit status: 0 done, 1 the JVM or the instance could not be reached, 2 bad arguments,
     * 3 a {@code reload} that changed nothing because it could not ({@code refused}, {@code not applied},
     * {@code nothing to reload}): a script can tell a refused edit from an applied one
     */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0) {
            listJvms(out);
            return 0;
        }
        if (args[0].equals("-h") || args[0].equals("--help") || !args[0].chars().allMatch(Character::isDigit)) {
            err.println(USAGE);
            return 2;
        }
        String pid = args[0];
        String instance = args.length > 1 ? args[1] : null;
        List<String> operation = args.length > 2 ? List.of(args).subList(2, args.length) : List.of();
        if (!operation.isEmpty() && !validOperation(operation)) {
            err.println(USAGE);
            return 2;
        }
        JMXConnector connector;
        try {
            connector = attach(pid);
        } catch (Exception e) {
            err.println("could not attach to JVM " + pid + ": " + e.getMessage()
                    + " (is it a Java process of this user, started without -XX:+DisableAttachMechanism?)");
            return 1;
        }
        try (connector) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            if (!operation.isEmpty()) return invoke(server, instance, operation, out, err);
            return print(server, instance, out, err);
        } catch (Exception e) {
            err.println("JMX in JVM " + pid + " failed: " + e);
            return 1;
        }
    }

    private static void listJvms(PrintStream out) {
        out.println("Java processes (give one's pid to see its Sluice figures):");
        String self = Long.toString(ProcessHandle.current().pid());
        for (VirtualMachineDescriptor vm : VirtualMachine.list()) {
            if (vm.id().equals(self)) continue; // this tool
            String main = vm.displayName().isBlank() ? "(no main class)" : vm.displayName().split(" ", 2)[0];
            out.printf("  %-8s %s%n", vm.id(), main);
        }
    }

    private static boolean validOperation(List<String> operation) {
        return switch (operation.get(0)) {
            case "reload", "clearDeniedCache" -> operation.size() == 1;
            case "resetClient" -> operation.size() == 3;
            default -> false;
        };
    }

    private static JMXConnector attach(String pid) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(pid);
        try {
            return JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()));
        } finally {
            vm.detach();
        }
    }

    private static int print(MBeanServerConnection server, String instance, PrintStream out, PrintStream err)
            throws Exception {
        Set<ObjectName> beans = new TreeSet<>(Comparator.comparing(Figures::order));
        beans.addAll(server.queryNames(new ObjectName("dev.sluice:*"), null));
        if (instance != null) beans.removeIf(on -> !instance.equals(unquoted(on.getKeyProperty("name"))));
        if (beans.isEmpty()) {
            err.println(instance == null ? "no Sluice instance in this JVM (no dev.sluice MXBean)"
                    : "no Sluice instance named " + instance + " in this JVM; " + instances(server));
            return 1;
        }
        for (ObjectName on : beans) {
            out.println(on);
            List<String> names = new ArrayList<>();
            for (MBeanAttributeInfo a : server.getMBeanInfo(on).getAttributes()) names.add(a.getName());
            names.sort(null);
            int width = names.stream().mapToInt(String::length).max().orElse(0);
            for (Attribute a : server.getAttributes(on, names.toArray(new String[0])).asList()) {
                out.printf("  %-" + width + "s  %s%n", a.getName(), readable(a.getValue()));
            }
        }
        return 0;
    }

    private static int invoke(MBeanServerConnection server, String instance, List<String> operation, PrintStream out,
                              PrintStream err) throws Exception {
        ObjectName on = server.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null).stream()
                .filter(n -> instance.equals(unquoted(n.getKeyProperty("name")))).findFirst().orElse(null);
        if (on == null) {
            err.println("no Sluice instance named " + instance + " in this JVM; " + instances(server));
            return 1;
        }
        String name = operation.get(0);
        Object answer = name.equals("resetClient")
                ? server.invoke(on, name, new Object[]{operation.get(1), operation.get(2)},
                new String[]{String.class.getName(), String.class.getName()})
                : server.invoke(on, name, new Object[0], new String[0]);
        out.println(answer);
        String said = String.valueOf(answer);
        boolean undone = name.equals("reload")
                && (said.startsWith("refused") || said.startsWith("not applied") || said.startsWith("nothing to reload"));
        return undone ? 3 : 0;
    }

    /**
     * An attribute's value as a line: a map attribute (an MXBean's {@code TabularData} of key and
     * value rows, such as {@code BreakerStates}) as {@code key=value, key=value} in key order, or
     * {@code (none)}; anything else as itself.
     */
    static String readable(Object value) {
        if (value instanceof TabularData table) {
            List<String> entries = new ArrayList<>();
            for (Object row : table.values()) {
                CompositeData entry = (CompositeData) row;
                entries.add(entry.containsKey("key") && entry.containsKey("value")
                        ? entry.get("key") + "=" + entry.get("value") : entry.values().toString());
            }
            entries.sort(null);
            return entries.isEmpty() ? "(none)" : String.join(", ", entries);
        }
        return String.valueOf(value);
    }

    private static String instances(MBeanServerConnection server) throws Exception {
        List<String> names = new ArrayList<>();
        for (ObjectName on : server.queryNames(new ObjectName("dev.sluice:type=RateLimiter,*"), null)) {
            names.add(unquoted(on.getKeyProperty("name")));
        }
        names.sort(null);
        return names.isEmpty() ? "it has none" : "it has " + String.join(", ", names);
    }

    /** An instance's beans together, its {@code RateLimiter} bean first. */
    private static String order(ObjectName on) {
        String rule = on.getKeyProperty("rule");
        return unquoted(on.getKeyProperty("name")) + "\u0000" + (rule == null ? "" : "\u0001" + unquoted(rule));
    }

    private static String unquoted(String value) {
        return value != null && value.startsWith("\"") ? ObjectName.unquote(value) : value;
    }
}
