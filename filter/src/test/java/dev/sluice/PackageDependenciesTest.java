package dev.sluice;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The layout shows the architecture: one-way dependencies between the library's packages, read from
 * the sources' imports. The public API never depends on the internals (only {@code dev.sluice}, the
 * filter and {@code Sluice}, composes them), and no two packages depend on each other.
 */
class PackageDependenciesTest {

    private static final Pattern PACKAGE = Pattern.compile("^package (dev\\.sluice[\\w.]*);", Pattern.MULTILINE);
    private static final Pattern IMPORT = Pattern.compile("^import (?:static )?(dev\\.sluice(?:\\.[a-z]\\w*)*)\\.[A-Z]",
            Pattern.MULTILINE);

    private static Map<String, Set<String>> dependencies() throws IOException {
        Map<String, Set<String>> deps = new TreeMap<>();
        Path root = Path.of("src/main/java");
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                String source = Files.readString(file);
                Matcher p = PACKAGE.matcher(source);
                if (!p.find()) continue;
                Set<String> out = deps.computeIfAbsent(p.group(1), k -> new TreeSet<>());
                Matcher i = IMPORT.matcher(source);
                while (i.find()) {
                    if (!i.group(1).equals(p.group(1))) out.add(i.group(1));
                }
            }
        }
        return deps;
    }

    @Test
    void noTwoPackagesDependOnEachOther() throws IOException {
        Map<String, Set<String>> deps = dependencies();
        List<String> cycles = new ArrayList<>();
        for (String from : deps.keySet()) {
            for (String to : deps.get(from)) {
                if (reaches(deps, to, from, new TreeSet<>())) cycles.add(from + " <-> " + to);
            }
        }
        assertThat(cycles).as("package cycles").isEmpty();
    }

    @Test
    void theApiPackagesNeverUseTheInternals() throws IOException {
        Map<String, Set<String>> deps = dependencies();
        List<String> leaks = new ArrayList<>();
        deps.forEach((from, to) -> {
            if (from.equals("dev.sluice") || from.startsWith("dev.sluice.internal")) return;
            to.stream().filter(p -> p.startsWith("dev.sluice.internal")).forEach(p -> leaks.add(from + " -> " + p));
        });
        assertThat(leaks).isEmpty();
        assertThat(deps).containsKeys("dev.sluice.limiter", "dev.sluice.config", "dev.sluice.key", "dev.sluice.http",
                "dev.sluice.internal.redis", "dev.sluice.internal.local");
    }

    private static boolean reaches(Map<String, Set<String>> deps, String from, String target, Set<String> seen) {
        if (from.equals(target)) return true;
        if (!seen.add(from)) return false;
        for (String next : deps.getOrDefault(from, Set.of())) {
            if (reaches(deps, next, target, seen)) return true;
        }
        return false;
    }
}
