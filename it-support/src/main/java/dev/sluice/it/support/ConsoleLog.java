package dev.sluice.it.support;

import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The test JVM's standard error, where embedded containers log (Jetty's slf4j binding, Tomcat's and
 * Undertow's java.util.logging console handler, the WAR's slf4j-simple): passed through, and kept
 * while a {@link Recording} is open. Containers bind {@code System.err} once, when their logging
 * starts, so the tee is put in place when the JUnit session opens, before any test class runs:
 * {@link Installer} is a {@link LauncherSessionListener} (see {@code META-INF/services}).
 */
public final class ConsoleLog {

    private static final ByteArrayOutputStream KEPT = new ByteArrayOutputStream();
    private static int recordings; // guarded by KEPT
    private static long dropped; // bytes discarded while no recording was open; guarded by KEPT
    private static volatile boolean installed;

    private ConsoleLog() {
    }

    /** Tees {@code System.err}; idempotent. */
    public static synchronized void install() {
        if (installed) return;
        PrintStream original = System.err;
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[]{(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                synchronized (KEPT) {
                    if (recordings > 0) KEPT.write(b, off, len);
                }
                original.write(b, off, len);
            }

            @Override
            public void flush() {
                original.flush();
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
        installed = true;
    }

    /** Starts keeping what is written from now on, until the recording is closed. */
    public static Recording record() {
        if (!installed) {
            throw new IllegalStateException("the standard error is not teed: the JUnit session listener "
                    + Installer.class.getName() + " did not run (is sluice-it-support on the test class path?)");
        }
        synchronized (KEPT) {
            if (recordings++ == 0) {
                dropped += KEPT.size();
                KEPT.reset();
            }
            return new Recording(dropped + KEPT.size());
        }
    }

    /** What the JVM wrote to its standard error since the recording started; closing it stops keeping. */
    public static final class Recording implements AutoCloseable {
        private final long from;
        private boolean closed;

        private Recording(long from) {
            this.from = from;
        }

        public String text() {
            System.err.flush();
            synchronized (KEPT) {
                byte[] all = KEPT.toByteArray();
                int start = (int) (from - dropped);
                return new String(all, start, all.length - start, StandardCharsets.UTF_8);
            }
        }

        @Override
        public void close() {
            synchronized (KEPT) {
                if (closed) return;
                closed = true;
                recordings--;
            }
        }
    }

    /** Installs the tee when JUnit opens its session in a test JVM. */
    public static final class Installer implements LauncherSessionListener {
        @Override
        public void launcherSessionOpened(LauncherSession session) {
            install();
        }
    }
}
