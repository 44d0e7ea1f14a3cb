package dev.sluice.key;

import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * IP address literals, parsed by hand so that untrusted text can never trigger a DNS lookup
 * (unlike {@code InetAddress.getByName}, which resolves anything that is not a literal).
 *
 * <p>Accepted: IPv4 dotted quads ({@code 203.0.113.7}; no leading zeros, which some parsers read
 * as octal) and IPv6 in any RFC 4291 text form ({@code 2001:db8::1}, {@code ::ffff:1.2.3.4}), with
 * an optional zone ({@code fe80::1%eth0}, dropped). IPv4-mapped IPv6 addresses come back as the
 * IPv4 address, so a dual-stack socket and an IPv4 proxy see the same client.
 * {@link #parseNode} also accepts the node forms of {@code X-Forwarded-For} and RFC 7239
 * {@code Forwarded}: a port ({@code 1.2.3.4:5678}, {@code [2001:db8::1]:443}), brackets, quotes.
 * Everything else ({@code unknown}, obfuscated {@code _hidden}, host names, garbage) is not a
 * literal: the methods return {@code null} rather than throw, because on the request path a
 * non-address is an expected input.
 */
public final class IpLiteral {

    /** Longer than any address form we accept ({@code "[v6 with v4 tail %zone]:65535"}). */
    static final int MAX_NODE_LENGTH = 96;
    private static final int MAX_ZONE_LENGTH = 32;

    private IpLiteral() {
    }

    /** A bare address (no port, brackets or quotes), or {@code null} if {@code text} is not one. */
    public static InetAddress parse(String text) {
        return text == null ? null : parse(text, 0, text.length());
    }

    /** {@link #parse(String)} on {@code text[from, to)}. */
    static InetAddress parse(String text, int from, int to) {
        byte[] bytes = bytes(text, from, to);
        return bytes == null ? null : toAddress(bytes);
    }

    /**
     * A forwarded node: an address with optional port, IPv6 in brackets when a port follows, the
     * whole optionally in double quotes (RFC 7239 {@code for="[2001:db8::1]:4711"}). Surrounding
     * whitespace is ignored. {@code null} if the node is not an IP address.
     */
    public static InetAddress parseNode(String text) {
        return text == null ? null : parseNode(text, 0, text.length());
    }

    /** {@link #parseNode(String)} on {@code text[from, to)}. */
    static InetAddress parseNode(String s, int from, int to) {
        while (from < to && isSpace(s.charAt(from))) from++;
        while (to > from && isSpace(s.charAt(to - 1))) to--;
        if (to - from > MAX_NODE_LENGTH) return null;
        if (to - from >= 2 && s.charAt(from) == '"' && s.charAt(to - 1) == '"') {
            from++;
            to--;
        }
        if (from >= to) return null;
        if (s.charAt(from) == '[') {
            int close = s.indexOf(']', from);
            if (close < 0 || close >= to) return null;
            if (close + 1 < to && !isPort(s, close + 1, to)) return null;
            byte[] bytes = ipv6(s, from + 1, close);
            return bytes == null ? null : toAddress(bytes);
        }
        int firstColon = indexOf(s, ':', from, to);
        if (firstColon >= 0 && indexOf(s, ':', firstColon + 1, to) < 0) {
            // exactly one colon: IPv4 with a port
            if (!isPort(s, firstColon, to)) return null;
            byte[] bytes = new byte[4];
            return ipv4(s, from, firstColon, bytes, 0) ? toAddress(bytes) : null;
        }
        return parse(s, from, to);
    }

    static byte[] bytes(String s, int from, int to) {
        if (to - from < 2 || to - from > MAX_NODE_LENGTH) return null;
        if (indexOf(s, ':', from, to) >= 0) return ipv6(s, from, to);
        byte[] bytes = new byte[4];
        return ipv4(s, from, to, bytes, 0) ? bytes : null;
    }

    static InetAddress toAddress(byte[] bytes) {
        try {
            if (bytes.length == 16 && isIpv4Mapped(bytes)) {
                return InetAddress.getByAddress(new byte[] {bytes[12], bytes[13], bytes[14], bytes[15]});
            }
            return InetAddress.getByAddress(bytes); // never a lookup: no host name is given
        } catch (UnknownHostException impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    static boolean isIpv4Mapped(byte[] b) {
        for (int i = 0; i < 10; i++) {
            if (b[i] != 0) return false;
        }
        return b[10] == (byte) 0xff && b[11] == (byte) 0xff;
    }

    /** Four decimal octets 0..255 without leading zeros into {@code out[at..at+4)}. */
    private static boolean ipv4(String s, int from, int to, byte[] out, int at) {
        int octet = 0;
        int i = from;
        while (octet < 4) {
            int start = i;
            int value = 0;
            while (i < to && i - start < 3) {
                char c = s.charAt(i);
                if (c < '0' || c > '9') break;
                value = value * 10 + (c - '0');
                i++;
            }
            int digits = i - start;
            if (digits == 0 || value > 255 || (digits > 1 && s.charAt(start) == '0')) return false;
            out[at + octet++] = (byte) value;
            if (octet < 4) {
                if (i >= to || s.charAt(i) != '.') return false;
                i++;
            }
        }
        return i == to;
    }

    private static byte[] ipv6(String s, int from, int to) {
        int percent = indexOf(s, '%', from, to);
        if (percent >= 0) {
            if (!isZone(s, percent + 1, to)) return null;
            to = percent;
        }
        if (to - from < 2) return null;
        byte[] out = new byte[16];
        int groups = 0;
        int compressAt = -1;
        int i = from;
        if (s.charAt(i) == ':') {
            if (s.charAt(i + 1) != ':') return null;
            compressAt = 0;
            i += 2;
        }
        while (i < to) {
            if (groups == 8) return null;
            int end = i;
            boolean dotted = false;
            while (end < to && s.charAt(end) != ':') {
                if (s.charAt(end) == '.') dotted = true;
                end++;
            }
            if (dotted) {
                // an IPv4 tail fills the last two groups
                if (end != to || groups > 6 || !ipv4(s, i, end, out, groups * 2)) return null;
                groups += 2;
                i = end;
                break;
            }
            int digits = end - i;
            if (digits < 1 || digits > 4) return null;
            int value = 0;
            for (int k = i; k < end; k++) {
                int d = Character.digit(s.charAt(k), 16);
                if (d < 0) return null;
                value = (value << 4) | d;
            }
            out[groups * 2] = (byte) (value >>> 8);
            out[groups * 2 + 1] = (byte) value;
            groups++;
            i = end;
            if (i == to) break;
            i++; // the ':'
            if (i == to) return null; // a single trailing colon
            if (s.charAt(i) == ':') {
                if (compressAt >= 0) return null; // a second "::"
                compressAt = groups;
                i++;
            }
        }
        if (compressAt < 0) {
            return groups == 8 ? out : null;
        }
        if (groups > 7) return null;
        int tail = (groups - compressAt) * 2;
        System.arraycopy(out, compressAt * 2, out, 16 - tail, tail);
        java.util.Arrays.fill(out, compressAt * 2, 16 - tail, (byte) 0);
        return out;
    }

    /** {@code :port} where port is 1-5 digits or an RFC 7239 obfuscated port ({@code _abc}). */
    private static boolean isPort(String s, int colon, int to) {
        if (s.charAt(colon) != ':' || colon + 1 >= to || to - colon - 1 > MAX_ZONE_LENGTH) return false;
        char first = s.charAt(colon + 1);
        if (first == '_') {
            for (int i = colon + 2; i < to; i++) {
                if (!isObfuscatedChar(s.charAt(i))) return false;
            }
            return true;
        }
        if (to - colon - 1 > 5) return false;
        for (int i = colon + 1; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return false;
        }
        return true;
    }

    private static boolean isZone(String s, int from, int to) {
        if (from >= to || to - from > MAX_ZONE_LENGTH) return false;
        for (int i = from; i < to; i++) {
            if (!isObfuscatedChar(s.charAt(i))) return false;
        }
        return true;
    }

    private static boolean isObfuscatedChar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || c == '.' || c == '_' || c == '-';
    }

    private static boolean isSpace(char c) {
        return c == ' ' || c == '\t';
    }

    private static int indexOf(String s, char c, int from, int to) {
        for (int i = from; i < to; i++) {
            if (s.charAt(i) == c) return i;
        }
        return -1;
    }
}
