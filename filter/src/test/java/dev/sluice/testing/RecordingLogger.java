package dev.sluice.testing;

import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.AbstractLogger;
import org.slf4j.helpers.MessageFormatter;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** An slf4j logger that keeps what is logged (all levels enabled), for tests that assert on log lines. */
public final class RecordingLogger extends AbstractLogger {

    private static final long serialVersionUID = 1L;

    /** One formatted log line. */
    public record Line(Level level, String message, Throwable throwable) {
        @Override
        public String toString() {
            return level + " " + message + (throwable == null ? "" : " [" + throwable + "]");
        }
    }

    private final transient List<Line> lines = new CopyOnWriteArrayList<>();

    public RecordingLogger(String name) {
        this.name = name;
    }

    public List<Line> lines() {
        return List.copyOf(lines);
    }

    public List<Line> at(Level level) {
        return lines.stream().filter(l -> l.level() == level).toList();
    }

    public void clear() {
        lines.clear();
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] args, Throwable t) {
        lines.add(new Line(level, MessageFormatter.basicArrayFormat(pattern, args), t));
    }

    @Override public boolean isTraceEnabled() { return true; }
    @Override public boolean isTraceEnabled(Marker marker) { return true; }
    @Override public boolean isDebugEnabled() { return true; }
    @Override public boolean isDebugEnabled(Marker marker) { return true; }
    @Override public boolean isInfoEnabled() { return true; }
    @Override public boolean isInfoEnabled(Marker marker) { return true; }
    @Override public boolean isWarnEnabled() { return true; }
    @Override public boolean isWarnEnabled(Marker marker) { return true; }
    @Override public boolean isErrorEnabled() { return true; }
    @Override public boolean isErrorEnabled(Marker marker) { return true; }
}
