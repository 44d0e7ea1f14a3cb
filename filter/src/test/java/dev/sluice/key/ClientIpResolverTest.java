package dev.sluice.key;

import dev.sluice.key.ClientIpResolver.Header;
import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.NoSuchElementException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClientIpResolverTest {

    private static final CidrSet PROXIES = CidrSet.parse(List.of("10.0.0.0/8", "2001:db8:ffff::/48"));
    private final ClientIpResolver xff = new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 64);
    private final ClientIpResolver forwarded = new ClientIpResolver(PROXIES, Header.FORWARDED, 64);

    private static String client(ClientIpResolver resolver, String peer, String... headerLines) {
        ClientAddress client = resolver.resolve(peer, List.of(headerLines));
        return client == null ? null : client.identity();
    }

    @Test
    void anIpv4PeerIsCountedByItsCanonicalDottedQuadWhateverItsSpelling() {
        assertThat(xff.resolve("203.0.113.7", List.of()).identity()).isEqualTo("203.0.113.7");
        assertThat(xff.resolve("::ffff:203.0.113.7", List.of()).identity()).isEqualTo("203.0.113.7");
        assertThat(xff.resolve("203.0.113.7:8080", List.of()).identity()).isEqualTo("203.0.113.7");
        assertThat(xff.resolve("1.2.3", List.of())).as("not an address, so no short forms").isNull();
        assertThat(xff.resolve("010.0.0.1", List.of())).as("no octal-looking octets").isNull();
    }

    @Test
    void withoutHeaderThePeerIsTheClient() {
        assertThat(client(xff, "203.0.113.7")).isEqualTo("203.0.113.7");
        assertThat(client(xff, "10.0.0.1")).isEqualTo("10.0.0.1");
    }

    @Test
    void spoofedForwardedForFromUntrustedPeerIsIgnored() {
        assertThat(client(xff, "203.0.113.7", "198.51.100.1")).isEqualTo("203.0.113.7");
        assertThat(client(forwarded, "203.0.113.7", "for=198.51.100.1")).isEqualTo("203.0.113.7");
    }

    @Test
    void withoutTrustedProxiesTheHeaderIsNeverRead() {
        ClientIpResolver none = new ClientIpResolver(CidrSet.empty(), Header.X_FORWARDED_FOR, 64);
        Enumeration<String> untouchable = new Enumeration<>() {
            public boolean hasMoreElements() {
                throw new AssertionError("header read");
            }

            public String nextElement() {
                throw new AssertionError("header read");
            }
        };
        assertThat(none.resolve("10.0.0.1", untouchable).identity()).isEqualTo("10.0.0.1");
    }

    @Test
    void rightMostUntrustedAddressIsTheClient() {
        // the client forged "1.1.1.1"; its real address 198.51.100.9 was appended by our proxy 10.0.0.2
        assertThat(client(xff, "10.0.0.1", "1.1.1.1, 198.51.100.9, 10.0.0.2")).isEqualTo("198.51.100.9");
    }

    @Test
    void everyHopTrustedMeansLeftMostIsClient() {
        assertThat(client(xff, "10.0.0.1", "10.9.9.9, 10.0.0.3,10.0.0.2")).isEqualTo("10.9.9.9");
    }

    @Test
    void garbageEntryEndsTheWalk() {
        assertThat(client(xff, "10.0.0.1", "198.51.100.9, unknown, 10.0.0.2")).isEqualTo("10.0.0.2");
        assertThat(client(xff, "10.0.0.1", "198.51.100.9, 10.0.0.2, garbage")).as("right-most garbage: the peer")
                .isEqualTo("10.0.0.1");
        assertThat(client(forwarded, "10.0.0.1", "for=198.51.100.9, for=_hidden, for=10.0.0.2")).isEqualTo("10.0.0.2");
        assertThat(client(forwarded, "10.0.0.1", "for=198.51.100.9, proto=https")).as("an element without for=")
                .isEqualTo("10.0.0.1");
    }

    @Test
    void severalHeaderLinesAreOneListInOrder() {
        assertThat(client(xff, "10.0.0.1", "198.51.100.9", "10.0.0.3, 10.0.0.2")).isEqualTo("198.51.100.9");
        assertThat(client(xff, "10.0.0.1", "198.51.100.9", "192.0.2.5")).isEqualTo("192.0.2.5");
    }

    @Test
    void emptyEntriesAreSkipped() {
        assertThat(client(xff, "10.0.0.1", "198.51.100.9, , 10.0.0.2,")).isEqualTo("198.51.100.9");
        assertThat(client(xff, "10.0.0.1", "")).isEqualTo("10.0.0.1");
    }

    @Test
    void portsInForwardedForAreIgnored() {
        assertThat(client(xff, "10.0.0.1", "198.51.100.9:5678, [2001:db8:1:2::7]:443, 10.0.0.2:80"))
                .isEqualTo("2001:db8:1:2::/64");
        assertThat(client(xff, "10.0.0.1", "198.51.100.9:5678")).isEqualTo("198.51.100.9");
    }

    @Test
    void rfc7239ForWithQuotedIpv6AndPort() {
        assertThat(client(forwarded, "10.0.0.1", "for=\"[2001:db8:cafe::17]:4711\";proto=https;by=10.0.0.1"))
                .isEqualTo("2001:db8:cafe::/64");
        assertThat(client(forwarded, "10.0.0.1", "For=192.0.2.60;proto=http, for=10.0.0.5"))
                .isEqualTo("192.0.2.60");
        assertThat(client(forwarded, "10.0.0.1", "proto=https; for=192.0.2.43:47011")).isEqualTo("192.0.2.43");
    }

    @Test
    void peerMayBeBracketedOrMapped() {
        assertThat(client(xff, "[2001:db8:1:2::9]")).isEqualTo("2001:db8:1:2::/64");
        assertThat(client(xff, "::ffff:10.0.0.1", "198.51.100.9")).as("a mapped peer is the IPv4 proxy")
                .isEqualTo("198.51.100.9");
    }

    @Test
    void peerThatIsNotAnAddressHasNoClient() {
        assertThat(xff.resolve("/run/app.sock", List.of())).isNull();
        assertThat(xff.resolve(null, List.of())).isNull();
    }

    @Test
    void ipv6ClientsAreGroupedByPrefix() {
        assertThat(client(xff, "2001:db8:1:2:aaaa::1")).isEqualTo("2001:db8:1:2::/64");
        assertThat(client(xff, "2001:db8:1:2:bbbb:cccc:dddd:eeee")).isEqualTo("2001:db8:1:2::/64");
        assertThat(client(xff, "2001:db8:1:3::1")).isEqualTo("2001:db8:1:3::/64");
        ClientIpResolver per48 = new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 48);
        assertThat(client(per48, "2001:db8:1:2::1")).isEqualTo("2001:db8:1::/48");
        ClientIpResolver perHost = new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 128);
        assertThat(client(perHost, "2001:DB8::0:1")).isEqualTo("2001:db8::1/128");
    }

    @Test
    void groupingKeepsTheFullAddressForExemptChecks() {
        ClientAddress client = xff.resolve("2001:db8:1:2::7", List.of());
        assertThat(client.address()).isEqualTo(IpLiteral.parse("2001:db8:1:2::7"));
    }

    @Test
    void identityIsCanonical() {
        assertThat(client(xff, "0:0:0:0:0:0:0:1")).isEqualTo("::/64");
        assertThat(client(new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 128), "2001:0:0:1:0:0:1:1"))
                .as("RFC 5952: the first of equally long zero runs").isEqualTo("2001::1:0:0:1:1/128");
        assertThat(client(new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 128), "2001:0:0:1:0:0:0:1"))
                .as("RFC 5952: the longest zero run").isEqualTo("2001:0:0:1::1/128");
        assertThat(client(new ClientIpResolver(PROXIES, Header.X_FORWARDED_FOR, 128), "2001:db8:0:1:1:1:1:1"))
                .as("RFC 5952: a single zero group stays").isEqualTo("2001:db8:0:1:1:1:1:1/128");
    }

    @Test
    void hopsExaminedAreCapped() {
        String trustedChain = String.join(", ", Collections.nCopies(ClientIpResolver.MAX_HOPS + 10, "10.1.1.1"));
        assertThat(client(xff, "10.0.0.1", "198.51.100.9, " + trustedChain))
                .as("the walk stops at the last trusted hop examined").isEqualTo("10.1.1.1");
        String shortChain = String.join(", ", Collections.nCopies(ClientIpResolver.MAX_HOPS - 1, "10.1.1.1"));
        assertThat(client(xff, "10.0.0.1", "198.51.100.9, " + shortChain)).isEqualTo("198.51.100.9");
    }

    @Test
    void hostileMegabyteHeaderIsReadOnlyFromItsRightEnd() {
        String junk = "x".repeat(1 << 20);
        assertThat(client(xff, "10.0.0.1", junk + ", 198.51.100.9")).isEqualTo("198.51.100.9");
        assertThat(client(xff, "10.0.0.1", junk + "1.2.3.4")).as("an over-long entry is garbage").isEqualTo("10.0.0.1");
        String manyCommas = ",".repeat(1 << 20) + "198.51.100.9";
        assertThat(client(xff, "10.0.0.1", manyCommas)).isEqualTo("198.51.100.9");
        assertThat(client(xff, "10.0.0.1", "198.51.100.9" + ",".repeat(1 << 20))).as("blank entries count as hops")
                .isEqualTo("10.0.0.1");
    }

    @Test
    void ipv6PrefixOutOfRangeIsRejected() {
        assertThatThrownBy(() -> new ClientIpResolver(PROXIES, Header.FORWARDED, 129))
                .hasMessageContaining("0..128");
    }

    @Test
    void headerNames() {
        assertThat(xff.headerName()).isEqualTo("X-Forwarded-For");
        assertThat(forwarded.headerName()).isEqualTo("Forwarded");
    }

    @Test
    void enumerationOfManyLinesIsReadInOrder() {
        Enumeration<String> lines = Collections.enumeration(List.of("198.51.100.9", "10.0.0.3", "10.0.0.2"));
        assertThat(xff.resolve("10.0.0.1", lines).identity()).isEqualTo("198.51.100.9");
        assertThatThrownBy(lines::nextElement).isInstanceOf(NoSuchElementException.class);
    }
}
