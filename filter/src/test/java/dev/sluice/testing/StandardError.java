package dev.sluice.testing;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/** Captures what the code under test writes to System.err (slf4j-simple's log, in tests). */
public final class StandardError {

    private StandardError() {
    }

    /** Everything written to System.err while {@code action} runs (also passed through). */
    public static String capture(Runnable action) {
        try {
            return during(() -> {
                action.run();
                return null;
            }).text();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e); // a Runnable throws no checked exception
        }
    }

    /** What {@code action} returned, and what was written to System.err while it ran. */
    public record Captured<T>(T value, String text) {
    }

    /** {@link #capture} for an action that returns something and may throw. */
    public static <T> Captured<T> during(Callable<T> action) throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                synchronized (captured) {
                    captured.write(b);
                }
                original.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                synchronized (captured) {
                    captured.write(b, off, len);
                }
                original.write(b, off, len);
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
        T value;
        try {
            value = action.call();
        } finally {
            System.err.flush();
            System.setErr(original);
        }
        synchronized (captured) {
            return new Captured<>(value, captured.toString(StandardCharsets.UTF_8));
        }
    }
}
