package dev.sluice.key;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CidrTest {

    @Test
    void ipv4NetworkContainsItsHostsOnly() {
        Cidr tenSlash8 = Cidr.parse("10.0.0.0/8");
        assertThat(tenSlash8.contains(IpLiteral.parse("10.255.1.2"))).isTrue();
        assertThat(tenSlash8.contains(IpLiteral.parse("11.0.0.0"))).isFalse();
        assertThat(tenSlash8.contains(IpLiteral.parse("::ffff:10.1.1.1"))).isTrue();
        assertThat(tenSlash8.contains(IpLiteral.parse("::a01:101"))).isFalse();
    }

    @Test
    void prefixesThatAreNotByteAligned() {
        Cidr cidr = Cidr.parse("192.168.4.0/22");
        assertThat(cidr.contains(IpLiteral.parse("192.168.7.255"))).isTrue();
        assertThat(cidr.contains(IpLiteral.parse("192.168.8.0"))).isFalse();
        assertThat(cidr.contains(IpLiteral.parse("192.168.3.255"))).isFalse();
    }

    @Test
    void ipv6Network() {
        Cidr doc = Cidr.parse("2001:db8::/32");
        assertThat(doc.contains(IpLiteral.parse("2001:db8:ffff::1"))).isTrue();
        assertThat(doc.contains(IpLiteral.parse("2001:db9::1"))).isFalse();
        assertThat(doc.contains(IpLiteral.parse("32.1.13.184"))).as("IPv4 is never in an IPv6 network").isFalse();
        assertThat(Cidr.parse("::1/128").contains(IpLiteral.parse("::1"))).isTrue();
    }

    @Test
    void bareAddressIsASingleHost() {
        assertThat(Cidr.parse("127.0.0.1").toString()).isEqualTo("127.0.0.1/32");
        assertThat(Cidr.parse("::1").toString()).isEqualTo("::1/128");
        assertThat(Cidr.parse("127.0.0.1").contains(IpLiteral.parse("127.0.0.2"))).isFalse();
    }

    @Test
    void hostBitsAreClearedAndSlashZeroMatchesItsWholeFamily() {
        assertThat(Cidr.parse("10.1.2.3/8")).isEqualTo(Cidr.parse("10.0.0.0/8")).hasToString("10.0.0.0/8");
        assertThat(Cidr.parse(" 2001:DB8:1:2:3::/33 ")).hasToString("2001:db8::/33");
        assertThat(Cidr.parse("0.0.0.0/0").contains(IpLiteral.parse("203.0.113.7"))).isTrue();
        assertThat(Cidr.parse("::/0").contains(IpLiteral.parse("2001:db8::1"))).isTrue();
    }

    @Test
    void ipv4MappedNetworkIsTheIpv4Network() {
        assertThat(Cidr.parse("::ffff:10.0.0.0/104")).isEqualTo(Cidr.parse("10.0.0.0/8"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "example.com/24", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1",
            "10.0.0.0/8/8", "10.0.0/8", "10.0.0.0 /8", "/8", "10.0.0.0/08x", "::ffff:10.0.0.0/8"})
    void badCidrsAreRejectedWithWhatIsAccepted(String text) {
        assertThatThrownBy(() -> Cidr.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(text.strip())
                .hasMessageContaining("e.g. 10.0.0.0/8");
    }

    @Test
    void prefixTooLongNamesTheRange() {
        assertThatThrownBy(() -> Cidr.parse("10.0.0.0/33")).hasMessageContaining("0..32");
        assertThatThrownBy(() -> Cidr.parse("::/129")).hasMessageContaining("0..128");
    }

    @Test
    void cidrSetContainsAnyOfItsNetworks() {
        CidrSet set = CidrSet.parse(List.of("10.0.0.0/8", " ", "::1"));
        assertThat(set.isEmpty()).isFalse();
        assertThat(set.contains(IpLiteral.parse("10.9.9.9"))).isTrue();
        assertThat(set.contains(IpLiteral.parse("::1"))).isTrue();
        assertThat(set.contains(IpLiteral.parse("192.0.2.1"))).isFalse();
        assertThat(CidrSet.parse(List.of()).isEmpty()).isTrue();
        assertThat(CidrSet.parse(List.of()).contains(IpLiteral.parse("10.0.0.1"))).isFalse();
    }

    @Test
    void cidrSetNamesTheBadEntry() {
        assertThatThrownBy(() -> CidrSet.parse(List.of("10.0.0.0/8", "proxy.internal")))
                .hasMessageContaining("'proxy.internal'");
    }
}
