package dev.sluice.testing;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Captures what the code under test writes to System.err (slf4j-simple's log, in tests). */
public final class StandardError {

    private StandardError() {
    }

    /** Everything written to System.err while {@code action} runs (also passed through). */
    public static String capture(Runnable action) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                captured.write(b);
                original.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                captured.write(b, off, len);
                original.write(b, off, len);
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.err.flush();
            System.setErr(original);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
