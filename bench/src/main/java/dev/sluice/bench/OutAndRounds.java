package dev.sluice.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The arguments of a bench main that writes its results to a directory and repeats its trials:
 * {@code --out DIR [--rounds N]}. The directory is created.
 *
 * @param out    where the results go
 * @param rounds how many times each trial runs, round-robin
 */
record OutAndRounds(Path out, int rounds) {

    static OutAndRounds parse(String[] args, int defaultRounds) throws IOException {
        Path out = null;
        int rounds = defaultRounds;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + "; usage: --out DIR [--rounds N]");
            }
        }
        if (out == null) throw new IllegalArgumentException("--out DIR is required");
        Files.createDirectories(out);
        return new OutAndRounds(out, rounds);
    }
}
