package dev.sluice.key;

import java.net.InetAddress;

/**
 * Who sent a request, as far as the network can tell.
 *
 * @param address  the client's address, for {@code exempt-ips} checks
 * @param identity what the {@code ip} key source counts: an IPv4 address as a dotted quad
 *                 ({@code 203.0.113.7}), an IPv6 address as its {@code ipv6-prefix} network in
 *                 canonical form ({@code 2001:db8:1:2::/64}), since one IPv6 client owns a whole prefix
 */
public record ClientAddress(InetAddress address, String identity) {
}
