package dev.sluice.it;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/** What is written to {@code System.err} while an action runs (it still reaches the console). */
final class Stderr {

    private Stderr() {
    }

    record Captured<T>(T value, String text) {
    }

    static <T> Captured<T> during(Callable<T> action) throws Exception {
        PrintStream console = System.err;
        ByteArrayOutputStream copy = new ByteArrayOutputStream();
        System.setErr(new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                console.write(b);
                synchronized (copy) {
                    copy.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                console.write(b, off, len);
                synchronized (copy) {
                    copy.write(b, off, len);
                }
            }
        }, true, StandardCharsets.UTF_8));
        try {
            T value = action.call();
            synchronized (copy) {
                return new Captured<>(value, copy.toString(StandardCharsets.UTF_8));
            }
        } finally {
            System.setErr(console);
        }
    }
}
