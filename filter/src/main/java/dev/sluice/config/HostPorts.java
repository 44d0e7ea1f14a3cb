package dev.sluice.config;

import dev.sluice.config.SluiceConfig.HostPort;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Parses {@code host[:port]} as written in {@code redis.url} and in the Cluster and Sentinel node
 * lists. IPv6 addresses go in brackets ({@code [::1]:6379}) and are returned without them.
 */
final class HostPorts {

    static final String ACCEPTED = "host[:port] entries separated by commas, e.g. 10.0.0.1:6379, redis-2:6379;"
            + " IPv6 addresses in brackets, e.g. [2001:db8::1]:6379";

    private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9_.-]+");
    private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

    private HostPorts() {
    }

    /**
     * @param key         the configuration key, for the error message
     * @param value       comma-separated {@code host[:port]} entries; blank entries are skipped
     * @param defaultPort the port of an entry without one
     * @return the entries in the order given
     * @throws ConfigException naming the key and the first bad entry
     */
    static List<HostPort> parseList(String key, String value, int defaultPort) {
        List<HostPort> nodes = new ArrayList<>();
        for (String entry : value.split(",")) {
            String e = entry.trim();
            if (e.isEmpty()) continue;
            try {
                nodes.add(parse(e, defaultPort));
            } catch (IllegalArgumentException bad) {
                throw new ConfigException(key, e, ACCEPTED + "; " + bad.getMessage());
            }
        }
        return nodes;
    }

    /**
     * @throws IllegalArgumentException saying what is wrong without quoting the input (in a malformed
     *         {@code redis.url} the "port" may be a password)
     */
    static HostPort parse(String hostPort, int defaultPort) {
        String host;
        String port;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) throw new IllegalArgumentException("the IPv6 address has no closing ']'");
            host = hostPort.substring(1, close);
            if (!IPV6.matcher(host).matches()) {
                throw new IllegalArgumentException("the address in brackets is not an IPv6 address");
            }
            String rest = hostPort.substring(close + 1);
            if (!rest.isEmpty() && !rest.startsWith(":")) {
                throw new IllegalArgumentException("expected ':port' after ']'");
            }
            port = rest.isEmpty() ? null : rest.substring(1);
        } else {
            int colon = hostPort.indexOf(':');
            if (colon >= 0 && hostPort.indexOf(':', colon + 1) >= 0) {
                throw new IllegalArgumentException("an IPv6 address must be written in brackets, e.g. [::1]:6379");
            }
            host = colon < 0 ? hostPort : hostPort.substring(0, colon);
            port = colon < 0 ? null : hostPort.substring(colon + 1);
            if (host.isEmpty()) throw new IllegalArgumentException("the host is missing");
            if (!HOST_NAME.matcher(host).matches()) {
                throw new IllegalArgumentException("the host is not a host name or IPv4 address");
            }
        }
        return new HostPort(host, port == null ? defaultPort : port(port));
    }

    private static int port(String port) {
        if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("the port is not a number from 1 to 65535");
        }
        int p = Integer.parseInt(port);
        if (p < 1 || p > 65535) throw new IllegalArgumentException("the port is not from 1 to 65535");
        return p;
    }
}
