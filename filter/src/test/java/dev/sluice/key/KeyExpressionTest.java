package dev.sluice.key;

import dev.sluice.key.KeyExpression.Kind;
import dev.sluice.key.KeyExpression.Source;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeyExpressionTest {

    @Test
    void everySourceParses() {
        KeyExpression all = KeyExpression.parse(
                "ip+user+header:X-Api-Key+query:api_key+session+attr:tenant+global+class:com.example.Tenant$Key");
        assertThat(all.alternatives()).containsExactly(List.of(
                new Source(Kind.IP, null), new Source(Kind.USER, null), new Source(Kind.HEADER, "x-api-key"),
                new Source(Kind.QUERY, "api_key"), new Source(Kind.SESSION, null), new Source(Kind.ATTR, "tenant"),
                new Source(Kind.GLOBAL, null), new Source(Kind.CLASS, "com.example.Tenant$Key")));
    }

    @Test
    void alternativeBindsLooserThanComposite() {
        KeyExpression e = KeyExpression.parse("header:X-Api-Key|ip+user");
        assertThat(e.alternatives()).containsExactly(
                List.of(new Source(Kind.HEADER, "x-api-key")),
                List.of(new Source(Kind.IP, null), new Source(Kind.USER, null)));
    }

    @Test
    void whitespaceAroundTokensAndCaseOfNamesDoNotMatter() {
        assertThat(KeyExpression.parse("  Header : x-api-KEY |  IP + user "))
                .isEqualTo(KeyExpression.parse("header:X-Api-Key|ip+user"));
    }

    @Test
    void usesTellsWhetherTheClientAddressIsNeeded() {
        assertThat(KeyExpression.parse("header:X-Api-Key|ip").uses(Kind.IP)).isTrue();
        assertThat(KeyExpression.parse("user").uses(Kind.IP)).isFalse();
    }

    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
            "'';it is empty",
            "'   ';it is empty",
            "ip|;an alternative around '|' is empty",
            "|ip;an alternative around '|' is empty",
            "ip+;a part around '+' is empty",
            "ip++user;a part around '+' is empty",
            "host;unknown source 'host'",
            "cookie:JSESSIONID;unknown source 'cookie:JSESSIONID'",
            "header;'header' needs a name",
            "header:;'header' needs a name",
            "query: ;'query' needs a name",
            "ip:4;'ip' takes no argument",
            "header:X Api;'X Api' is not a valid header name",
            "header:X@Key;'X@Key' is not a valid header name",
            "class:com..Foo;'com..Foo' is not a fully qualified class name",
            "class:1Foo;'1Foo' is not a fully qualified class name",
            "attr:a b;'a b' contains whitespace"})
    void badExpressionsAreRejectedWithTheProblemAndTheAcceptedForms(String text, String problem) {
        assertThatThrownBy(() -> KeyExpression.parse(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + text + "'")
                .hasMessageContaining(problem)
                .hasMessageContaining("accepted sources: ip, user, header:NAME, query:NAME, session, attr:NAME, global, class:FQCN");
    }
}
