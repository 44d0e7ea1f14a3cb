package dev.sluice.config;

import dev.sluice.testing.Readme;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's configuration reference documents exactly the keys the loader accepts, each with
 * its default, and each documented default is the loader's: a literal default ({@code `50`}) set
 * explicitly changes nothing, and a default that follows another key ({@code = `limit`},
 * {@code the global `mode`}) equals that key's value when it is set to something else.
 */
class ConfigKeysDocumentationTest {

    /** A row's key and its default cell ({@code \|} is a pipe inside a cell). */
    private static final Pattern ROW = Pattern.compile("^\\| `([^`]+)` \\| ((?:[^|\\\\]|\\\\.)*?) \\|", Pattern.MULTILINE);
    private static final Pattern LITERAL = Pattern.compile("^`([^`]+)`");
    private static final Pattern FOLLOWS = Pattern.compile("^(?:= |the global |the rule's )`([^`]+)`");
    /** Defaults that name no value: nothing, a required value, or a value read from another key. */
    private static final Pattern NO_VALUE = Pattern.compile("^(\\(none(: [^)]+)?\\)|\\(required\\)|\\(required per plan\\)"
            + "|\\(every response\\)|from `[^`]+`)$");

    /** A value other than the default, for each key another key's default follows. */
    private static final Map<String, String> OTHER_VALUES = Map.of(
            "redis.pool.max-total", "10", "redis.timeout", "80ms", "failure-policy", "closed", "mode", "dry-run",
            "limit", "7", "window", "2m", "burst", "9", "fallback-limit", "3");

    private final ConfigLoader loader = new ConfigLoader(new Placeholders(k -> null, k -> null));

    private static String section(String doc, String heading) {
        int start = doc.indexOf(heading);
        assertThat(start).as("heading %s", heading).isNotNegative();
        int end = doc.indexOf("\n#", start + heading.length());
        return doc.substring(start, end < 0 ? doc.length() : end);
    }

    /** Each row's key and default cell, in order. */
    private static Map<String, String> rows(String section) {
        Map<String, String> rows = new LinkedHashMap<>();
        Matcher m = ROW.matcher(section);
        while (m.find()) rows.put(m.group(1), m.group(2).strip());
        return rows;
    }

    @Test
    void everyGlobalKeyIsDocumentedInOrderAndNothingElse() throws IOException {
        List<String> expected = new ArrayList<>();
        expected.add(ConfigKeys.CONFIG);
        expected.addAll(ConfigKeys.GLOBAL);
        assertThat(rows(section(Readme.text(), "### Global keys")).keySet()).containsExactlyElementsOf(expected);
    }

    @Test
    void everyRuleKeyIsDocumentedInOrderAndNothingElse() throws IOException {
        assertThat(rows(section(Readme.text(), "### Rule keys")).keySet()).containsExactlyElementsOf(ConfigKeys.RULE_DOCUMENTED);
    }

    @Test
    void everyDocumentedGlobalDefaultIsTheLoadersDefault() throws IOException {
        List<String> wrong = new ArrayList<>();
        rows(section(Readme.text(), "### Global keys")).forEach((key, documented) -> {
            if (!key.equals(ConfigKeys.CONFIG)) wrong.addAll(problems(key, documented, key, this::globalKey));
        });
        assertThat(wrong).isEmpty();
    }

    @Test
    void everyDocumentedRuleDefaultIsTheLoadersDefault() throws IOException {
        List<String> wrong = new ArrayList<>();
        rows(section(Readme.text(), "### Rule keys")).forEach((key, documented) ->
                wrong.addAll(problems(key, documented, ruleKey(key), this::ruleKey)));
        assertThat(wrong).isEmpty();
    }

    @Test
    void aWrongDocumentedDefaultIsCaught() {
        assertThat(isDefault("max-held-requests", "51")).isFalse();
        assertThat(isDefault("rule.api.key-case", "insensitive")).isFalse();
        assertThat(isDefault("rule.api.burst", "11")).isFalse();
    }

    private String globalKey(String key) {
        return key;
    }

    /** {@code rule.api.<key>}; a plan's key is of the base configuration's plan {@code p}. */
    private String ruleKey(String key) {
        return "rule.api." + key.replace("plan.<p>.", "plan.p.");
    }

    /** What is wrong with {@code row}'s documented default, if anything. */
    private List<String> problems(String row, String documented, String key, UnaryOperator<String> sibling) {
        Matcher literal = LITERAL.matcher(documented);
        Matcher follows = FOLLOWS.matcher(documented);
        if (literal.find()) {
            return isDefault(key, literal.group(1)) ? List.of() : List.of(row + ": not the default: " + documented);
        }
        if (follows.find()) {
            String other = follows.group(1);
            String value = OTHER_VALUES.get(other);
            if (value == null) return List.of(row + ": add a value of " + other + " to OTHER_VALUES");
            String otherKey = documented.startsWith("the global ") ? other : sibling.apply(other);
            return isDefault(key, value, otherKey, value) ? List.of() : List.of(row + ": not the default: " + documented);
        }
        return NO_VALUE.matcher(documented).matches() ? List.of()
                : List.of(row + ": the default names no value, other key or none: '" + documented + "'");
    }

    /** Whether setting {@code key} to {@code value} (in the base configuration plus {@code more}) changes nothing. */
    private boolean isDefault(String key, String value, String... more) {
        Map<String, String> base = new LinkedHashMap<>(Map.of("rules", "api", "rule.api.limit", "10", "rule.api.window", "1m",
                "rule.api.plan", "attr:plan", "rule.api.plans", "p", "rule.api.plan.p.limit", "5"));
        if (key.equals("rule.api.lease")) { // a concurrency rule's key: it has no window
            base.remove("rule.api.window");
            base.put("rule.api.algorithm", "concurrency");
        }
        for (int i = 0; i < more.length; i += 2) base.put(more[i], more[i + 1]);
        Map<String, String> explicit = new LinkedHashMap<>(base);
        explicit.put(key, value);
        return loader.parse(base).equals(loader.parse(explicit));
    }
}
