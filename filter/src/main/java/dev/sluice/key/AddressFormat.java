package dev.sluice.key;

/**
 * Canonical text of an address: IPv4 as a dotted quad, IPv6 in RFC 5952 form (lower case, no
 * leading zeros, the longest run of two or more zero groups, the first on a tie, as {@code ::}).
 * One form per address, so equal addresses always give equal client keys.
 */
final class AddressFormat {

    private AddressFormat() {
    }

    static String format(byte[] b) {
        StringBuilder out = new StringBuilder(b.length == 4 ? 15 : 39);
        append(out, b);
        return out.toString();
    }

    static void append(StringBuilder out, byte[] b) {
        if (b.length == 4) {
            out.append(b[0] & 0xff).append('.').append(b[1] & 0xff).append('.')
                    .append(b[2] & 0xff).append('.').append(b[3] & 0xff);
            return;
        }
        int bestStart = -1;
        int bestLength = 1; // a single zero group is not compressed
        for (int g = 0; g < 8; ) {
            if (group(b, g) != 0) {
                g++;
                continue;
            }
            int start = g;
            while (g < 8 && group(b, g) == 0) g++;
            if (g - start > bestLength) {
                bestStart = start;
                bestLength = g - start;
            }
        }
        for (int g = 0; g < 8; g++) {
            if (g == bestStart) {
                out.append("::");
                g += bestLength - 1;
                continue;
            }
            if (g > 0 && g != bestStart + bestLength) out.append(':');
            out.append(Integer.toHexString(group(b, g)));
        }
    }

    private static int group(byte[] b, int g) {
        return ((b[2 * g] & 0xff) << 8) | (b[2 * g + 1] & 0xff);
    }
}
