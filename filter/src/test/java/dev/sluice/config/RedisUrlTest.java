package dev.sluice.config;

import dev.sluice.config.SluiceConfig.HostPort;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RedisUrlTest {

    @Test
    void hostAloneMeansPort6379Database0NoCredentialsNoTls() {
        assertThat(RedisUrl.parse("redis://localhost"))
                .isEqualTo(new RedisUrl(false, null, null, new HostPort("localhost", 6379), 0));
    }

    @Test
    void everyPartIsRead() {
        assertThat(RedisUrl.parse("rediss://app:secret@redis.internal:6380/3"))
                .isEqualTo(new RedisUrl(true, "app", "secret", new HostPort("redis.internal", 6380), 3));
    }

    @Test
    void schemeIsCaseInsensitiveAndATrailingSlashMeansDatabase0() {
        assertThat(RedisUrl.parse("REDIS://h:1/").database()).isZero();
    }

    @Test
    void aPasswordWithoutUserIsTheDefaultUsersPassword() {
        RedisUrl url = RedisUrl.parse("redis://:s3cret@h");
        assertThat(url.user()).isNull();
        assertThat(url.password()).isEqualTo("s3cret");
    }

    @Test
    void aUserWithoutColonIsAUserWithoutPassword() {
        RedisUrl url = RedisUrl.parse("redis://monitor@h");
        assertThat(url.user()).isEqualTo("monitor");
        assertThat(url.password()).isNull();
    }

    @Test
    void userAndPasswordArePercentDecoded() {
        RedisUrl url = RedisUrl.parse("redis://us%3Aer:p%40ss%2Fw%25rd%C3%A9@h");
        assertThat(url.user()).isEqualTo("us:er");
        assertThat(url.password()).isEqualTo("p@ss/w%rdé");
    }

    @Test
    void anUnescapedAtSignInThePasswordIsToleratedBecauseTheLastOneEndsIt() {
        RedisUrl url = RedisUrl.parse("redis://app:p@ss:w/rd@h:7000");
        assertThat(url.password()).isEqualTo("p@ss:w/rd");
        assertThat(url.address()).isEqualTo(new HostPort("h", 7000));
    }

    @Test
    void anIpv6HostIsWrittenInBracketsAndKeptWithout() {
        RedisUrl url = RedisUrl.parse("redis://[2001:db8::1]:6380/1");
        assertThat(url.address()).isEqualTo(new HostPort("2001:db8::1", 6380));
        assertThat(url.address().toString()).isEqualTo("[2001:db8::1]:6380");
        assertThat(RedisUrl.parse("redis://[::1]").address()).isEqualTo(new HostPort("::1", 6379));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "http://localhost:6379        | must start with redis:// or rediss://",
            "localhost:6379               | must start with redis:// or rediss://",
            "redis://                     | the host is missing",
            "redis://:6379                | the host is missing",
            "redis://h:0                  | the port is not from 1 to 65535",
            "redis://h:65536              | the port is not from 1 to 65535",
            "redis://h:port               | the port is not a number",
            "redis://h/zero               | must be a number",
            "redis://h:6379/0?ssl=true    | query parameters",
            "redis://2001:db8::1          | must be written in brackets",
            "redis://[2001:db8::1         | no closing ']'",
            "redis://[db8]:1              | not an IPv6 address",
            "redis://h_ost name           | not a host name",
            "redis://u:p%zz@h             | %XX escape",
    })
    void aMalformedUrlIsRejectedNamingRedisUrlAndSayingWhy(String value, String why) {
        assertThatThrownBy(() -> RedisUrl.parse(value))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("redis.url=")
                .hasMessageContaining(why)
                .hasMessageContaining("redis://[user[:password]@]host[:port][/db]");
    }

    @Test
    void theMessageOfAMalformedUrlNeverContainsThePassword() {
        for (String bad : new String[] {
                "redis://app:hunter2@h:notaport",
                "redis://app:hunter2@[::1",
                "redis://app:hunter2@h/db?x=1",
                "redis://:hunter2%zz@h",
                "redis://default:hunter2",          // forgot the host: the "port" is the password
                "redis://default:hunter2/0",
                "http://app:hunter2@h"}) {
            assertThatThrownBy(() -> RedisUrl.parse(bad))
                    .as(bad)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("redis.url=")
                    .hasMessageContaining("****")
                    .hasMessageNotContaining("hunter2")
                    .satisfies(e -> assertThat(((ConfigException) e).value()).doesNotContain("hunter2"));
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "redis://app:secret@h:6379/0 | redis://app:****@h:6379/0",
            "redis://:secret@h           | redis://:****@h",
            "redis://:se@cret@h          | redis://:****@h",
            "rediss://monitor@h          | rediss://monitor@h",
            "redis://h:6379              | redis://h:6379",
            "redis://[::1]:6379          | redis://[::1]:6379",
            "redis://user:secret         | redis://user:****",
    })
    void maskedHidesOnlyThePassword(String value, String masked) {
        assertThat(RedisUrl.masked(value)).isEqualTo(masked);
    }

    @Test
    void toStringNeverShowsThePassword() {
        assertThat(RedisUrl.parse("rediss://app:hunter2@h:6380/2"))
                .hasToString("rediss://app:****@h:6380/2");
    }
}
