package dev.sluice.config;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** The README's configuration reference documents exactly the keys the loader accepts. */
class ConfigKeysDocumentationTest {

    private static final Pattern ROW_KEY = Pattern.compile("^\\| `([^`]+)` \\|", Pattern.MULTILINE);

    private static String section(String doc, String heading) {
        int start = doc.indexOf(heading);
        assertThat(start).as("heading %s", heading).isNotNegative();
        int end = doc.indexOf("\n#", start + heading.length());
        return doc.substring(start, end < 0 ? doc.length() : end);
    }

    private static List<String> tableKeys(String section) {
        List<String> keys = new ArrayList<>();
        Matcher m = ROW_KEY.matcher(section);
        while (m.find()) keys.add(m.group(1));
        return keys;
    }

    private static String doc() throws IOException {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path doc = dir.resolve("README.md");
            if (Files.exists(doc) && Files.exists(dir.resolve("filter"))) return Files.readString(doc);
        }
        throw new AssertionError("README.md not found above " + Path.of("").toAbsolutePath());
    }

    @Test
    void everyGlobalKeyIsDocumentedInOrderAndNothingElse() throws IOException {
        List<String> expected = new ArrayList<>();
        expected.add(ConfigKeys.CONFIG);
        expected.addAll(ConfigKeys.GLOBAL);
        assertThat(tableKeys(section(doc(), "### Global keys"))).containsExactlyElementsOf(expected);
    }

    @Test
    void everyRuleKeyIsDocumentedInOrderAndNothingElse() throws IOException {
        assertThat(tableKeys(section(doc(), "### Rule keys"))).containsExactlyElementsOf(ConfigKeys.RULE_DOCUMENTED);
    }
}
