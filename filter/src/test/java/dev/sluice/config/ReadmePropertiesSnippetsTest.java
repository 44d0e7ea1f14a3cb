package dev.sluice.config;

import dev.sluice.testing.Readme;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@code properties} block of the README loads as a configuration file, as a user pasting it
 * would load it ({@code config=file:...}): a key it names exists, a value it gives validates. A block
 * that shows some rules without the {@code rules} list gets that list from the rules it names, since
 * the README shows the list once. {@link java.util.Properties} has no end-of-line comments, so a
 * {@code # note} after a value becomes part of it; this test is what keeps such a note out of the
 * snippets.
 */
class ReadmePropertiesSnippetsTest {

    private static final Pattern BLOCK = Pattern.compile("```properties\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern RULE_KEY = Pattern.compile("^rule\\.([^.]+)\\.");

    @TempDir
    Path dir;

    /** No system properties, no environment: {@code ${REDIS_URL:...}} takes its default. */
    private final ConfigLoader loader = new ConfigLoader(new Placeholders(k -> null, k -> null));

    /** The README's properties blocks, each with the line it starts on. */
    static List<Snippet> snippets() throws IOException {
        String doc = Readme.text();
        List<Snippet> snippets = new ArrayList<>();
        Matcher m = BLOCK.matcher(doc);
        while (m.find()) {
            int line = doc.substring(0, m.start()).split("\n", -1).length;
            snippets.add(new Snippet(line, m.group(1)));
        }
        assertThat(snippets).as("the README's properties blocks").hasSizeGreaterThanOrEqualTo(7);
        return snippets;
    }

    @ParameterizedTest
    @MethodSource("snippets")
    void loadsAsWritten(Snippet snippet) throws IOException {
        Properties parsed = new Properties();
        parsed.load(new StringReader(snippet.text));
        String text = snippet.text;
        if (!parsed.containsKey(ConfigKeys.RULES)) {
            Set<String> names = new LinkedHashSet<>();
            for (String key : parsed.stringPropertyNames()) {
                Matcher r = RULE_KEY.matcher(key);
                if (r.find()) names.add(r.group(1));
            }
            assertThat(names).as("rules named in the block at line %d", snippet.line).isNotEmpty();
            text = ConfigKeys.RULES + " = " + String.join(", ", names) + "\n" + text;
        }
        Path file = dir.resolve("sluice.properties");
        Files.writeString(file, text, StandardCharsets.UTF_8);

        SluiceConfig config = loader.parseInitParams(Map.of(ConfigKeys.CONFIG, "file:" + file.toAbsolutePath()), null);

        assertThat(config.rules()).as("the block at README line %d", snippet.line).isNotEmpty();
    }

    record Snippet(int line, String text) {
        @Override
        public String toString() {
            return "README.md line " + line;
        }
    }
}
