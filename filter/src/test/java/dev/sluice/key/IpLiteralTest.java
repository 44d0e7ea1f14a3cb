package dev.sluice.key;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;

import static org.assertj.core.api.Assertions.assertThat;

class IpLiteralTest {

    @Test
    void dottedQuadIsIpv4() {
        assertThat(IpLiteral.parse("203.0.113.7")).isInstanceOf(Inet4Address.class)
                .extracting(InetAddress::getHostAddress).isEqualTo("203.0.113.7");
    }

    @ParameterizedTest
    @ValueSource(strings = {"2001:db8::1", "2001:DB8:0:0:0:0:0:1", "2001:0db8::0001", "2001:db8:0::1"})
    void ipv6TextFormsAreTheSameAddress(String text) {
        assertThat(IpLiteral.parse(text)).isEqualTo(IpLiteral.parse("2001:db8::1")).isInstanceOf(Inet6Address.class);
    }

    @Test
    void ipv6EdgeForms() {
        assertThat(IpLiteral.parse("::")).isNotNull();
        assertThat(IpLiteral.parse("::1").getAddress()[15]).isEqualTo((byte) 1);
        assertThat(IpLiteral.parse("1::").getAddress()[1]).isEqualTo((byte) 1);
        assertThat(IpLiteral.parse("64:ff9b::192.0.2.33").getAddress()[15]).isEqualTo((byte) 33);
        assertThat(IpLiteral.parse("fe80::1%eth0")).isEqualTo(IpLiteral.parse("fe80::1"));
    }

    @Test
    void ipv4MappedIpv6IsTreatedAsIpv4() {
        assertThat(IpLiteral.parse("::ffff:1.2.3.4")).isEqualTo(IpLiteral.parse("1.2.3.4")).isInstanceOf(Inet4Address.class);
        assertThat(IpLiteral.parse("::ffff:0102:0304")).isEqualTo(IpLiteral.parse("1.2.3.4"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "unknown", "_hidden", "localhost", "example.com", "1.2.3", "1.2.3.4.5", "256.0.0.1",
            "01.2.3.4", "1.2.3.4 ", "1..2.3", "-1.2.3.4", "0x7f.0.0.1", "2130706433", "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7", ":1", "1:", "1:::2", "1::2::3", "12345::", "g::1", "::1.2.3", "1.2.3.4::", "[::1]",
            "::1%", "::1%a b", "1.2.3.4:80"})
    void everythingElseIsNotALiteral(String text) {
        assertThat(IpLiteral.parse(text)).isNull();
    }

    @Test
    void nodesMayCarryPortsBracketsAndQuotes() {
        InetAddress v4 = IpLiteral.parse("192.0.2.60");
        InetAddress v6 = IpLiteral.parse("2001:db8:cafe::17");
        assertThat(IpLiteral.parseNode("192.0.2.60")).isEqualTo(v4);
        assertThat(IpLiteral.parseNode(" 192.0.2.60:4711 ")).isEqualTo(v4);
        assertThat(IpLiteral.parseNode("\"192.0.2.60:_port\"")).isEqualTo(v4);
        assertThat(IpLiteral.parseNode("2001:db8:cafe::17")).isEqualTo(v6);
        assertThat(IpLiteral.parseNode("[2001:db8:cafe::17]")).isEqualTo(v6);
        assertThat(IpLiteral.parseNode("[2001:db8:cafe::17]:4711")).isEqualTo(v6);
        assertThat(IpLiteral.parseNode("\"[2001:db8:cafe::17]:4711\"")).isEqualTo(v6);
        assertThat(IpLiteral.parseNode("[::ffff:192.0.2.60]:443")).isEqualTo(v4);
    }

    @ParameterizedTest
    @ValueSource(strings = {"unknown", "\"unknown\"", "_hidden", "\"_hidden:80\"", "[2001:db8::1", "[2001:db8::1]x",
            "[2001:db8::1]:", "[2001:db8::1]:123456", "1.2.3.4:", "1.2.3.4:http", "\"1.2.3.4", "[1.2.3.4]",
            "example.com:80", "\"\"", "  "})
    void nodesThatAreNotAddressesAreRejected(String text) {
        assertThat(IpLiteral.parseNode(text)).isNull();
    }
}
