package dev.sluice.key;

import dev.sluice.key.ClientIpResolver.Header;
import jakarta.servlet.http.HttpServletRequest;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClientKeyResolverTest {

    private static final ClientIpResolver IP = new ClientIpResolver(
            CidrSet.parse(List.of("10.0.0.0/8")), Header.X_FORWARDED_FOR, 64);

    private static ClientKeyResolver resolver(String expression) {
        return new ClientKeyResolver(KeyExpression.parse(expression), IP, ClientKeyResolverTest.class.getClassLoader());
    }

    private static String key(String expression, FakeRequest request) {
        ClientKey key = resolver(expression).resolve(request.build());
        return key == null ? null : key.value();
    }

    @Test
    void ipKeyIsTheResolvedClient() {
        assertThat(key("ip", FakeRequest.from("203.0.113.7"))).isEqualTo("ip=203.0.113.7");
        assertThat(key("ip", FakeRequest.from("10.0.0.1").header("X-Forwarded-For", "198.51.100.9")))
                .isEqualTo("ip=198.51.100.9");
        assertThat(key("ip", FakeRequest.from("2001:db8:1:2::99"))).isEqualTo("ip=2001:db8:1:2::/64");
    }

    @Test
    void clientResolvedOnceByTheCallerIsUsed() {
        FakeRequest request = FakeRequest.from("203.0.113.7");
        ClientAddress client = IP.client(IpLiteral.parse("198.51.100.1"));
        assertThat(resolver("ip").resolve(request.build(), client)).isEqualTo(ClientKey.parse("ip=198.51.100.1"));
        assertThat(request.calls()).doesNotContain("getRemoteAddr()");
        assertThat(resolver("ip").resolve(request.build(), null)).as("a peer without an IP has no ip key").isNull();
    }

    @Test
    void everySourceHasItsTag() {
        FakeRequest request = FakeRequest.from("203.0.113.7").user("alice@example.com").header("X-Api-Key", "k-42")
                .query("api_key=q1").attribute("tenant", 7);
        assertThat(key("user", request)).isEqualTo("u=alice@example.com");
        assertThat(key("header:x-api-key", request)).isEqualTo("h=k-42");
        assertThat(key("query:api_key", request)).isEqualTo("q=q1");
        assertThat(key("attr:tenant", request)).isEqualTo("a=7");
        assertThat(key("global", request)).isEqualTo("global");
        assertThat(key("class:" + TenantFromHeader.class.getName(), request)).isEqualTo("c=tenant-k-42");
    }

    private static String insensitiveKey(String expression, FakeRequest request) {
        ClientKey key = new ClientKeyResolver(KeyExpression.parse(expression), IP,
                ClientKeyResolverTest.class.getClassLoader(), KeyCase.INSENSITIVE).resolve(request.build());
        return key == null ? null : key.value();
    }

    @Test
    void caseInsensitiveKeysAreOneClientForEveryCaseVariantOfEachSource() {
        for (String variant : List.of("Alice@Example.com", "ALICE@EXAMPLE.COM", "alice@example.com")) {
            FakeRequest request = FakeRequest.from("203.0.113.7").user(variant).header("X-User", variant)
                    .query("user=" + variant).attribute("account", variant);
            assertThat(insensitiveKey("user", request)).as(variant).isEqualTo("u=alice@example.com");
            assertThat(insensitiveKey("header:X-User", request)).as(variant).isEqualTo("h=alice@example.com");
            assertThat(insensitiveKey("query:user", request)).as(variant).isEqualTo("q=alice@example.com");
            assertThat(insensitiveKey("attr:account", request)).as(variant).isEqualTo("a=alice@example.com");
            assertThat(insensitiveKey("class:" + UserFromHeader.class.getName(), request)).as(variant)
                    .isEqualTo("c=alice@example.com");
            assertThat(insensitiveKey("ip+header:X-User", request)).as(variant).isEqualTo("ip=203.0.113.7+h=alice@example.com");
            assertThat(key("header:X-User", request)).as("sensitive by default").isEqualTo("h=" + variant);
        }
    }

    @Test
    void caseInsensitiveValuesAreFoldedBeforeTheyAreHashed() {
        String upper = "USER-" + "X".repeat(300);
        String hashed = insensitiveKey("header:X-User", FakeRequest.from("203.0.113.7").header("X-User", upper));
        assertThat(hashed).isEqualTo(insensitiveKey("header:X-User",
                FakeRequest.from("203.0.113.7").header("X-User", upper.toLowerCase(java.util.Locale.ROOT))));
        assertThat(hashed.length()).as("a long value is still hashed").isLessThan(upper.length());
    }

    @Test
    void caseInsensitiveLeavesAddressesAndSessionIdsAlone() {
        assertThat(insensitiveKey("ip", FakeRequest.from("2001:DB8:1:2::99")))
                .as("IPv6 is canonical lower case already").isEqualTo("ip=2001:db8:1:2::/64")
                .isEqualTo(key("ip", FakeRequest.from("2001:db8:1:2::99")));
        assertThat(insensitiveKey("session", FakeRequest.from("203.0.113.7").session("AbC")))
                .as("a session id is a credential: its case matters")
                .isNotEqualTo(insensitiveKey("session", FakeRequest.from("203.0.113.7").session("abc")));
    }

    /** A {@code class:} source returning the X-User header as it is. */
    public static final class UserFromHeader implements KeySource {
        @Override
        public String resolve(HttpServletRequest request) {
            return request.getHeader("X-User");
        }
    }

    @Test
    void compositeJoinsAllPartsInOrder() {
        FakeRequest request = FakeRequest.from("203.0.113.7").user("alice").header("X-Api-Key", "k-42");
        assertThat(key("ip+header:X-Api-Key", request)).isEqualTo("ip=203.0.113.7+h=k-42");
        assertThat(key("user + ip", request)).isEqualTo("u=alice+ip=203.0.113.7");
    }

    @Test
    void compositeWithAnAbsentPartIsAbsent() {
        FakeRequest anonymous = FakeRequest.from("203.0.113.7").header("X-Api-Key", "k-42");
        assertThat(key("ip+user", anonymous)).isNull();
        assertThat(key("ip+user|header:X-Api-Key", anonymous)).isEqualTo("h=k-42");
    }

    @Test
    void firstPresentAlternativeWins() {
        assertThat(key("header:X-Api-Key|ip", FakeRequest.from("203.0.113.7").header("X-Api-Key", "k-42")))
                .isEqualTo("h=k-42");
        assertThat(key("header:X-Api-Key|ip", FakeRequest.from("203.0.113.7"))).isEqualTo("ip=203.0.113.7");
        assertThat(key("header:X-Api-Key|ip+user", FakeRequest.from("203.0.113.7"))).isNull();
    }

    @Test
    void emptyOrBlankValuesAreAbsent() {
        FakeRequest request = FakeRequest.from("203.0.113.7").header("X-Api-Key", "  ").query("api_key=")
                .attribute("tenant", "").user("");
        assertThat(key("header:X-Api-Key|query:api_key|attr:tenant|user|ip", request)).isEqualTo("ip=203.0.113.7");
    }

    @Test
    void headerValueCannotCollideWithIpKey() {
        String viaHeader = key("header:X-Api-Key|ip", FakeRequest.from("198.51.100.1").header("X-Api-Key", "203.0.113.7"));
        String viaIp = key("header:X-Api-Key|ip", FakeRequest.from("203.0.113.7"));
        assertThat(viaHeader).isEqualTo("h=203.0.113.7");
        assertThat(viaIp).isEqualTo("ip=203.0.113.7");
    }

    @Test
    void twoHeadersOfOneExpressionNeverShareACounter() {
        String expression = "header:X-Api-Key|header:X-Client-Id";
        String apiKey = key(expression, FakeRequest.from("192.0.2.1").header("X-Api-Key", "same"));
        String clientId = key(expression, FakeRequest.from("192.0.2.1").header("X-Client-Id", "same"));
        assertThat(apiKey).isEqualTo("h:x-api-key=same");
        assertThat(clientId).isEqualTo("h:x-client-id=same");
    }

    @Test
    void compositeSeparatorInAValueCannotForgeAnotherComposite() {
        // h:a = "x+h:b=y" must not read as h:a=x plus h:b=y
        String forged = key("header:A+header:B|header:A", FakeRequest.from("192.0.2.1").header("A", "x+h:b=y"));
        String real = key("header:A+header:B|header:A", FakeRequest.from("192.0.2.1").header("A", "x").header("B", "y"));
        assertThat(real).isEqualTo("h:a=x+h:b=y");
        assertThat(forged).startsWith("h:a=#").isNotEqualTo(real);
    }

    @Test
    void hostileHeaderValueIsHashedAndBounded() {
        for (String hostile : List.of("x".repeat(1 << 20), "a}b{c", "tab\there", "new\nline", "sp ace", "ümlaut",
                "#not-a-hash", "x".repeat(ClientKey.MAX_PLAIN_VALUE + 1), "\u0000")) {
            String key = key("header:X-Api-Key", FakeRequest.from("192.0.2.1").header("X-Api-Key", hostile));
            assertThat(key).as(hostile.length() > 80 ? "long value" : hostile)
                    .matches("h=#[A-Za-z0-9_-]{22}");
        }
        String atTheLimit = "x".repeat(ClientKey.MAX_PLAIN_VALUE);
        assertThat(key("header:X-Api-Key", FakeRequest.from("192.0.2.1").header("X-Api-Key", atTheLimit)))
                .isEqualTo("h=" + atTheLimit);
    }

    @Test
    void hashedValuesAreStableAndDistinct() {
        String a = key("header:X-Api-Key", FakeRequest.from("192.0.2.1").header("X-Api-Key", "a b"));
        String again = key("header:X-Api-Key", FakeRequest.from("198.51.100.1").header("X-Api-Key", "a b"));
        String b = key("header:X-Api-Key", FakeRequest.from("192.0.2.1").header("X-Api-Key", "a c"));
        assertThat(a).isEqualTo(again).isNotEqualTo(b);
    }

    @Test
    void longCompositeIsHashedAsAWhole() {
        String v = "v".repeat(ClientKey.MAX_PLAIN_VALUE);
        FakeRequest request = FakeRequest.from("192.0.2.1").header("A", v).header("B", v);
        String key = key("header:A+header:B", request);
        assertThat(key).matches("#[A-Za-z0-9_-]{22}");
    }

    @Test
    void everyKeyIsSafeForTheRedisLayout() {
        String[] hostile = {"{rule}", "a b", "x".repeat(5000), "a\r\nb", "+", "ip=1.2.3.4", "}{", "x\u2028y"};
        for (String h : hostile) {
            for (String q : hostile) {
                FakeRequest request = FakeRequest.from("2001:db8::1").header("X-Api-Key", h).header("X-Other", h)
                        .query("k=" + java.net.URLEncoder.encode(q, java.nio.charset.StandardCharsets.UTF_8)).user(h);
                String key = key("header:X-Api-Key+header:X-Other+query:k+user+ip", request);
                assertThat(key).hasSizeLessThanOrEqualTo(ClientKey.MAX_KEY).doesNotContainPattern("[{}\\s\\p{Cntrl}]");
            }
        }
    }

    @Test
    void queryKeyIsUrlDecodedFromTheQueryString() {
        assertThat(ClientKeyResolver.queryParameter("a=1&api_key=k%2D42&api_key=second", "api_key")).isEqualTo("k-42");
        assertThat(ClientKeyResolver.queryParameter("api%5Fkey=x", "api_key")).isEqualTo("x");
        assertThat(ClientKeyResolver.queryParameter("api_key=a+b", "api_key")).isEqualTo("a b");
        assertThat(ClientKeyResolver.queryParameter("api_key=%zz", "api_key")).as("malformed stays as is").isEqualTo("%zz");
        assertThat(ClientKeyResolver.queryParameter("api_key", "api_key")).isEmpty();
        assertThat(ClientKeyResolver.queryParameter("xapi_key=1&api_keyx=2", "api_key")).isNull();
        assertThat(ClientKeyResolver.queryParameter("&&", "api_key")).isNull();
        assertThat(ClientKeyResolver.queryParameter(null, "api_key")).isNull();
    }

    @Test
    void queryKeyNeverReadsTheBody() {
        FakeRequest post = FakeRequest.from("192.0.2.1").query("api_key=k-42");
        assertThat(key("query:api_key", post)).isEqualTo("q=k-42");
        assertThat(post.calls()).containsExactly("getQueryString()");
        // FakeRequest fails any getParameter/getInputStream/getReader call, so reaching here proves none happened
        FakeRequest withoutQuery = FakeRequest.from("192.0.2.1");
        assertThat(key("query:api_key|ip", withoutQuery)).isEqualTo("ip=192.0.2.1");
    }

    @Test
    void sessionKeyNeverCreatesASession() {
        FakeRequest noSession = FakeRequest.from("192.0.2.1");
        assertThat(key("session|ip", noSession)).isEqualTo("ip=192.0.2.1");
        assertThat(noSession.calls()).contains("getSession(false)");
    }

    @Test
    void sessionIdIsAlwaysHashedBecauseItIsACredential() {
        String key = key("session", FakeRequest.from("192.0.2.1").session("ABC123"));
        assertThat(key).matches("s=#[A-Za-z0-9_-]{22}").doesNotContain("ABC123");
        assertThat(key("session", FakeRequest.from("198.51.100.1").session("ABC123"))).isEqualTo(key);
    }

    @Test
    void ipIsReadOnlyWhenAnAlternativeNeedsIt() {
        FakeRequest request = FakeRequest.from("192.0.2.1").header("X-Api-Key", "k");
        key("header:X-Api-Key|ip", request);
        assertThat(request.calls()).containsExactly("getHeader(x-api-key)");
    }

    @Test
    void keySourceClassIsInstantiatedOnceAtBuildTime() {
        int before = TenantFromHeader.instances.get();
        ClientKeyResolver resolver = resolver("class:" + TenantFromHeader.class.getName() + "|ip+class:"
                + TenantFromHeader.class.getName());
        assertThat(TenantFromHeader.instances.get()).isEqualTo(before + 1);
        HttpServletRequest request = FakeRequest.from("192.0.2.1").header("X-Api-Key", "k").build();
        resolver.resolve(request);
        resolver.resolve(request);
        assertThat(TenantFromHeader.instances.get()).isEqualTo(before + 1);
    }

    @Test
    void keySourceReturningNullIsAbsent() {
        assertThat(key("class:" + TenantFromHeader.class.getName() + "|ip", FakeRequest.from("192.0.2.1")))
                .isEqualTo("ip=192.0.2.1");
    }

    @Test
    void badKeySourceClassesAreRejectedAtBuildTime() {
        assertThatThrownBy(() -> resolver("class:com.example.Missing"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("com.example.Missing").hasMessageContaining("not found");
        assertThatThrownBy(() -> resolver("class:java.lang.String"))
                .hasMessageContaining("does not implement dev.sluice.key.KeySource");
        assertThatThrownBy(() -> resolver("class:" + NoDefaultConstructor.class.getName()))
                .hasMessageContaining("public no-arg constructor");
        assertThatThrownBy(() -> resolver("class:" + ThrowingConstructor.class.getName()))
                .hasMessageContaining("constructor threw").hasMessageContaining("no config");
    }

    /** A user's key source: the tenant derived from the API key. */
    public static final class TenantFromHeader implements KeySource {
        static final java.util.concurrent.atomic.AtomicInteger instances = new java.util.concurrent.atomic.AtomicInteger();

        public TenantFromHeader() {
            instances.incrementAndGet();
        }

        @Override
        public String resolve(HttpServletRequest request) {
            String apiKey = request.getHeader("X-Api-Key");
            return apiKey == null ? null : "tenant-" + apiKey;
        }
    }

    public static final class NoDefaultConstructor implements KeySource {
        public NoDefaultConstructor(String unused) {
        }

        @Override
        public String resolve(HttpServletRequest request) {
            return null;
        }
    }

    public static final class ThrowingConstructor implements KeySource {
        public ThrowingConstructor() {
            throw new IllegalStateException("no config");
        }

        @Override
        public String resolve(HttpServletRequest request) {
            return null;
        }
    }
}
