package dev.sluice.key;

import java.net.InetAddress;
import java.util.Arrays;

/**
 * An IPv4 or IPv6 network ({@code 10.0.0.0/8}, {@code 2001:db8::/32}); immutable.
 *
 * <p>A bare address means a single host ({@code /32} or {@code /128}). Host bits below the prefix
 * are allowed and cleared ({@code 10.1.2.3/8} is {@code 10.0.0.0/8}). An IPv4-mapped IPv6 network
 * with a prefix of at least 96 ({@code ::ffff:10.0.0.0/104}) is the IPv4 network it maps
 * ({@code 10.0.0.0/8}), matching how {@link IpLiteral} reads mapped addresses. Host names are
 * rejected: configuration never triggers DNS.
 */
public final class Cidr {

    static final String ACCEPTED = "accepted: an IPv4 or IPv6 address with an optional /prefix, e.g. 10.0.0.0/8, "
            + "127.0.0.1/32, ::1/128, 2001:db8::/32 (a bare address is a single host; host names are not accepted)";

    private final byte[] network;
    private final int prefix;

    private Cidr(byte[] network, int prefix) {
        this.network = network;
        this.prefix = prefix;
        for (int bit = prefix; bit < network.length * 8; bit++) {
            network[bit >>> 3] &= (byte) ~(0x80 >>> (bit & 7));
        }
    }

    /**
     * Parses {@code address[/prefix]}; surrounding whitespace is ignored.
     *
     * @throws IllegalArgumentException naming the value and the accepted forms
     */
    public static Cidr parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("empty CIDR; " + ACCEPTED);
        }
        String s = text.strip();
        int slash = s.indexOf('/');
        String address = slash < 0 ? s : s.substring(0, slash);
        byte[] bytes = IpLiteral.bytes(address, 0, address.length());
        if (bytes == null) {
            throw new IllegalArgumentException("'" + text + "' is not an IP address or CIDR; " + ACCEPTED);
        }
        int max = bytes.length * 8;
        int prefix = max;
        if (slash >= 0) {
            prefix = prefixLength(s.substring(slash + 1), max);
            if (prefix < 0) {
                throw new IllegalArgumentException("'" + text + "' has an invalid prefix length (0.." + max
                        + " for IPv" + (max == 32 ? "4" : "6") + "); " + ACCEPTED);
            }
        }
        if (bytes.length == 16 && IpLiteral.isIpv4Mapped(bytes)) {
            if (prefix < 96) {
                throw new IllegalArgumentException("'" + text + "' is an IPv4-mapped network shorter than /96; "
                        + "write the IPv4 network instead; " + ACCEPTED);
            }
            return new Cidr(Arrays.copyOfRange(bytes, 12, 16), prefix - 96);
        }
        return new Cidr(bytes, prefix);
    }

    private static int prefixLength(String digits, int max) {
        if (digits.isEmpty() || digits.length() > 3) return -1;
        int value = 0;
        for (int i = 0; i < digits.length(); i++) {
            char c = digits.charAt(i);
            if (c < '0' || c > '9') return -1;
            value = value * 10 + (c - '0');
        }
        return value <= max ? value : -1;
    }

    /** Whether {@code address} is in this network; an IPv4 address is never in an IPv6 network and vice versa. */
    public boolean contains(InetAddress address) {
        return address != null && contains(address.getAddress());
    }

    boolean contains(byte[] address) {
        if (address.length != network.length) return false;
        int full = prefix >>> 3;
        for (int i = 0; i < full; i++) {
            if (address[i] != network[i]) return false;
        }
        int rest = prefix & 7;
        if (rest == 0) return true;
        int mask = (0xff << (8 - rest)) & 0xff;
        return (address[full] & mask) == (network[full] & 0xff);
    }

    public int prefixLength() {
        return prefix;
    }

    public boolean isIpv6() {
        return network.length == 16;
    }

    /** The normalised form, e.g. {@code 10.0.0.0/8} or {@code 2001:db8::/32}. */
    @Override
    public String toString() {
        return AddressFormat.format(network) + "/" + prefix;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Cidr other && prefix == other.prefix && Arrays.equals(network, other.network);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(network) + prefix;
    }
}
