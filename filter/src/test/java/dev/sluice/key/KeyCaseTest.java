package dev.sluice.key;

import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;

class KeyCaseTest {

    private static String fold(String value) {
        return KeyCase.INSENSITIVE.apply(value);
    }

    @Test
    void sensitiveKeepsEveryValueAsItIs() {
        assertThat(KeyCase.SENSITIVE.apply("Alice")).isEqualTo("Alice");
    }

    @Test
    void everyCaseVariantOfAnAsciiValueFoldsToOne() {
        assertThat(fold("Alice")).isEqualTo("alice");
        assertThat(fold("ALICE")).isEqualTo("alice");
        assertThat(fold("alice@Example.COM")).isEqualTo("alice@example.com");
        String plain = "already-folded-42";
        assertThat(fold(plain)).as("no copy when nothing changes").isSameAs(plain);
    }

    @Test
    void germanSharpSFoldsWithItsCapitalSpelling() {
        assertThat(fold("Straße")).isEqualTo("strasse");
        assertThat(fold("STRASSE")).isEqualTo("strasse");
        assertThat(fold("straẞe")).as("capital sharp s").isEqualTo("strasse");
    }

    @Test
    void turkishLettersFoldTheSameWhateverTheServersLocale() {
        Locale before = Locale.getDefault();
        try {
            Locale.setDefault(Locale.forLanguageTag("tr-TR"));
            assertThat(fold("ILKER")).as("I is i, not dotless ı, on a Turkish server").isEqualTo("ilker");
            assertThat(fold("ılker")).as("dotless ı folds with I and i").isEqualTo("ilker");
            assertThat(fold("İlker")).as("dotted capital İ: i and a combining dot, not plain i")
                    .isEqualTo("i\u0307lker").isNotEqualTo(fold("ilker"));
        } finally {
            Locale.setDefault(before);
        }
    }

    @Test
    void otherVariantsFoldToTheLetterTheyStandFor() {
        assertThat(fold("\u212Aelvin")).as("Kelvin sign").isEqualTo("kelvin");
        assertThat(fold("ΟΔΟΣ")).isEqualTo(fold("οδος")).isEqualTo(fold("οδοσ"));
        assertThat(fold("é")).as("no normalization: composed and decomposed stay two").isNotEqualTo(fold("e\u0301"));
    }
}
