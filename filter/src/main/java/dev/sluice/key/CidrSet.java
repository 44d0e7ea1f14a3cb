package dev.sluice.key;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * A set of networks ({@code trusted-proxies}, {@code exempt-ips}); immutable. Lookups walk a small
 * array: configured lists are short, and this keeps {@link #contains} allocation-free.
 */
public final class CidrSet {

    private static final CidrSet EMPTY = new CidrSet(new Cidr[0]);

    private final Cidr[] cidrs;

    private CidrSet(Cidr[] cidrs) {
        this.cidrs = cidrs;
    }

    /**
     * Parses each entry with {@link Cidr#parse}; blank entries are skipped.
     *
     * @throws IllegalArgumentException for the first invalid entry, naming it
     */
    public static CidrSet parse(List<String> entries) {
        if (entries == null || entries.isEmpty()) return EMPTY;
        List<Cidr> parsed = new ArrayList<>(entries.size());
        for (String entry : entries) {
            if (entry != null && !entry.isBlank()) {
                parsed.add(Cidr.parse(entry));
            }
        }
        return parsed.isEmpty() ? EMPTY : new CidrSet(parsed.toArray(new Cidr[0]));
    }

    public static CidrSet empty() {
        return EMPTY;
    }

    public boolean contains(InetAddress address) {
        return address != null && contains(address.getAddress());
    }

    boolean contains(byte[] address) {
        for (Cidr cidr : cidrs) {
            if (cidr.contains(address)) return true;
        }
        return false;
    }

    public boolean isEmpty() {
        return cidrs.length == 0;
    }

    public List<Cidr> cidrs() {
        return List.of(cidrs);
    }

    /** Equal when the networks are the same, in the same order. */
    @Override
    public boolean equals(Object o) {
        return o instanceof CidrSet other && java.util.Arrays.equals(cidrs, other.cidrs);
    }

    @Override
    public int hashCode() {
        return java.util.Arrays.hashCode(cidrs);
    }

    @Override
    public String toString() {
        return List.of(cidrs).toString();
    }
}
