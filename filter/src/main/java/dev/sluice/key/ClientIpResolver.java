package dev.sluice.key;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;

/**
 * Finds the client address of a request from its direct peer and, when that peer is a trusted
 * proxy, the {@code X-Forwarded-For} or RFC 7239 {@code Forwarded} header. Pure Java; immutable.
 *
 * <p>The rules (as Tomcat's {@code RemoteIpValve}): forwarded headers count only when the direct
 * peer is in {@code trusted-proxies}. Several header lines are one list, in order. Walking that
 * list right to left, trusted proxies are skipped and the first other address is the client; if
 * every hop is trusted, the left-most is the client. An entry that is not an IP address
 * ({@code unknown}, an obfuscated {@code _hidden}, garbage, a {@code Forwarded} element without
 * {@code for=}) ends the walk, and the address to its right (the last trusted proxy, the one that
 * received it) is the client. Only entries left of the client could be forged, so nothing a
 * client writes can move its identity.
 *
 * <p>The work is bounded whatever the header holds: at most {@value #MAX_HOPS} entries are
 * examined (the walk stops at the last trusted one, as if the next were garbage), and an entry
 * longer than {@value #MAX_ENTRY_LENGTH} characters is garbage, so a hostile 1 MB header costs a
 * few kilobytes of scanning from its right end.
 *
 * <p>The peers seen last are remembered ({@value #RECENT_PEERS} at most, by their text): a client's
 * next request on its connection, or through the same proxy, finds its peer's address without parsing
 * it again. Immutable otherwise; safe for any number of threads.
 */
public final class ClientIpResolver {

    /** Which forwarded header carries the chain ({@code client-ip-header}). */
    public enum Header {
        X_FORWARDED_FOR("X-Forwarded-For"),
        FORWARDED("Forwarded");

        private final String headerName;

        Header(String headerName) {
            this.headerName = headerName;
        }

        public String headerName() {
            return headerName;
        }
    }

    static final int MAX_HOPS = 32;
    static final int MAX_ENTRY_LENGTH = 256;
    /** Peers remembered, a power of two: a table of their clients by the text's hash, the last one per slot. */
    static final int RECENT_PEERS = 256;

    /** A peer as written and its client (the peer itself, its identity computed). */
    private record Peer(String text, ClientAddress client) {
    }

    private final CidrSet trustedProxies;
    private final Header header;
    private final int ipv6Prefix;
    /** Racy by design: a slot holds an immutable record, so a reader sees a whole one, or an older one. */
    private final Peer[] recentPeers = new Peer[RECENT_PEERS];

    /**
     * @param trustedProxies peers whose forwarded headers are believed; empty = never read the header
     * @param header         which header to read
     * @param ipv6Prefix     0..128: IPv6 clients are identified by this prefix
     */
    public ClientIpResolver(CidrSet trustedProxies, Header header, int ipv6Prefix) {
        if (ipv6Prefix < 0 || ipv6Prefix > 128) {
            throw new IllegalArgumentException("ipv6Prefix must be 0..128: " + ipv6Prefix);
        }
        this.trustedProxies = Objects.requireNonNull(trustedProxies, "trustedProxies");
        this.header = Objects.requireNonNull(header, "header");
        this.ipv6Prefix = ipv6Prefix;
    }

    /** The name of the header to pass to {@link #resolve}, e.g. {@code X-Forwarded-For}. */
    public String headerName() {
        return header.headerName;
    }

    /** Whether {@link #resolve} will look at the header for this peer at all. */
    public boolean trusts(InetAddress peer) {
        return trustedProxies.contains(peer);
    }

    /**
     * The client of a request.
     *
     * @param peer         the direct peer ({@code request.getRemoteAddr()})
     * @param headerValues every line of {@link #headerName()} in order ({@code request.getHeaders(name)}); may be null
     * @return the client, or {@code null} when the peer is not an IP address (e.g. a Unix socket)
     */
    public ClientAddress resolve(String peer, Enumeration<String> headerValues) {
        ClientAddress direct = peer(peer);
        if (direct == null) return null;
        InetAddress peerAddress = direct.address();
        if (headerValues == null || !trustedProxies.contains(peerAddress) || !headerValues.hasMoreElements()) {
            return direct;
        }
        String first = headerValues.nextElement();
        if (!headerValues.hasMoreElements()) {
            return client(walk(peerAddress, first == null ? List.of() : List.of(first)));
        }
        List<String> lines = new ArrayList<>(4);
        if (first != null) lines.add(first);
        while (headerValues.hasMoreElements()) {
            String line = headerValues.nextElement();
            if (line != null) lines.add(line);
        }
        return client(walk(peerAddress, lines));
    }

    /** {@link #resolve(String, Enumeration)} with the header lines as a list. */
    public ClientAddress resolve(String peer, List<String> headerValues) {
        return resolve(peer, headerValues == null ? null : Collections.enumeration(headerValues));
    }

    private InetAddress walk(InetAddress peer, List<String> lines) {
        InetAddress current = peer;
        int hops = 0;
        for (int l = lines.size() - 1; l >= 0; l--) {
            String line = lines.get(l);
            int end = line.length();
            while (end > 0) {
                if (++hops > MAX_HOPS) return current;
                int floor = end - MAX_ENTRY_LENGTH - 1; // the separating comma is at or after this
                int start = end - 1;
                while (start >= 0 && line.charAt(start) != ',') {
                    if (--start < floor) return current; // longer than an entry can be: garbage
                }
                if (!isBlank(line, start + 1, end)) {
                    InetAddress hop = header == Header.FORWARDED
                            ? forwardedFor(line, start + 1, end)
                            : IpLiteral.parseNode(line, start + 1, end);
                    if (hop == null) return current;
                    current = hop;
                    if (!trustedProxies.contains(hop)) return current;
                }
                end = start;
            }
        }
        return current;
    }

    /** The {@code for=} node of one RFC 7239 element ({@code for=192.0.2.60;proto=http;by=...}), or null. */
    private static InetAddress forwardedFor(String s, int from, int to) {
        int pair = from;
        while (pair < to) {
            int semicolon = pair;
            while (semicolon < to && s.charAt(semicolon) != ';') semicolon++;
            int name = pair;
            while (name < semicolon && isSpace(s.charAt(name))) name++;
            if (semicolon - name > 4 && s.regionMatches(true, name, "for=", 0, 4)) {
                return IpLiteral.parseNode(s, name + 4, semicolon);
            }
            pair = semicolon + 1;
        }
        return null;
    }

    /** The client for an address: the address and its counting identity. */
    public ClientAddress client(InetAddress address) {
        return new ClientAddress(address, identity(address));
    }

    /** The client a direct peer is (null when it is not an IP address), remembered for its next requests. */
    private ClientAddress peer(String text) {
        if (text == null) return null;
        int slot = text.hashCode() & (RECENT_PEERS - 1);
        Peer seen = recentPeers[slot];
        if (seen != null && seen.text.equals(text)) return seen.client;
        InetAddress address = IpLiteral.parseNode(text);
        if (address == null) return null;
        ClientAddress client = client(address, text);
        recentPeers[slot] = new Peer(text, client);
        return client;
    }

    /**
     * {@link #client(InetAddress)} for an address parsed from {@code text}: an IPv4 peer written as
     * a plain dotted quad is already its identity (the parser refuses leading zeros, so digits and
     * dots alone are the canonical form), which spares formatting it again on every request.
     */
    private ClientAddress client(InetAddress address, String text) {
        if (address instanceof Inet4Address && isDottedQuad(text)) {
            return new ClientAddress(address, text);
        }
        return client(address);
    }

    private static boolean isDottedQuad(String s) {
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if ((c < '0' || c > '9') && c != '.') return false;
        }
        return true;
    }

    /**
     * What the {@code ip} key counts: IPv4 as a dotted quad, IPv6 as its {@code ipv6Prefix}
     * network in RFC 5952 form ({@code 2001:db8:1:2::/64}).
     */
    public String identity(InetAddress address) {
        byte[] bytes = address.getAddress();
        if (address instanceof Inet4Address) {
            return AddressFormat.format(bytes);
        }
        for (int bit = ipv6Prefix; bit < 128; bit++) {
            bytes[bit >>> 3] &= (byte) ~(0x80 >>> (bit & 7));
        }
        StringBuilder out = new StringBuilder(44);
        AddressFormat.append(out, bytes);
        return out.append('/').append(ipv6Prefix).toString();
    }

    private static boolean isBlank(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            if (!isSpace(s.charAt(i))) return false;
        }
        return true;
    }

    private static boolean isSpace(char c) {
        return c == ' ' || c == '\t';
    }

    @Override
    public String toString() {
        return "ClientIpResolver{trusted=" + trustedProxies + ", header=" + header.headerName
                + ", ipv6Prefix=" + ipv6Prefix + '}';
    }
}
