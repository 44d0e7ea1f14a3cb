package dev.sluice.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The project's README.md, which tests hold to its promises (the configuration keys, the ACL). */
public final class Readme {

    private Readme() {
    }

    /** The README's text, found in the first directory above the working one that holds it and {@code filter/}. */
    public static String text() throws IOException {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path doc = dir.resolve("README.md");
            if (Files.exists(doc) && Files.exists(dir.resolve("filter"))) return Files.readString(doc);
        }
        throw new AssertionError("README.md not found above " + Path.of("").toAbsolutePath());
    }
}
