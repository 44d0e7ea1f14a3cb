package dev.sluice.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time from Linux's {@code /proc}: a process's (user + system of all its threads, field 14 and
 * 15 of {@code /proc/PID/stat}) and the whole machine's (the {@code cpu} line of {@code /proc/stat}),
 * in clock ticks, converted with {@code getconf CLK_TCK}.
 */
final class ProcCpu {

    /** Ticks per second ({@code getconf CLK_TCK}; 100 on every Linux this runs on, read anyway). */
    static final long TICKS_PER_SECOND = clockTicks();

    /** The machine's CPU time at one instant: busy (everything but idle and iowait) and idle, in ticks, all cores. */
    record Machine(long busy, long idle) {
        /** The share of the machine's CPU that was busy between {@code before} and this. */
        double busySince(Machine before) {
            long b = busy - before.busy;
            long i = idle - before.idle;
            return b + i == 0 ? 0 : (double) b / (b + i);
        }
    }

    private ProcCpu() {
    }

    /** CPU seconds a process has used so far (user + system, all threads). */
    static double processSeconds(long pid) {
        String stat = read(Path.of("/proc", Long.toString(pid), "stat"));
        // the command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
        // f[0] is field 3 (state): utime is field 14, stime field 15
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / (double) TICKS_PER_SECOND;
    }

    static Machine machine() {
        for (String line : read(Path.of("/proc/stat")).split("\n")) {
            if (!line.startsWith("cpu ")) continue;
            String[] f = line.trim().split("\\s+");
            long busy = 0;
            long idle = 0;
            // user nice system idle iowait irq softirq steal (guest time is already in user)
            for (int i = 1; i <= 8 && i < f.length; i++) {
                long v = Long.parseLong(f[i]);
                if (i == 4 || i == 5) idle += v;
                else busy += v;
            }
            return new Machine(busy, idle);
        }
        throw new IllegalStateException("/proc/stat has no cpu line");
    }

    /** The load averages, as {@code uptime} shows them: "0.12 0.34 0.56". */
    static String loadAverage() {
        String[] f = read(Path.of("/proc/loadavg")).trim().split("\\s+");
        return f[0] + " " + f[1] + " " + f[2];
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long clockTicks() {
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            p.waitFor();
            return Long.parseLong(out);
        } catch (IOException | NumberFormatException e) {
            return 100;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 100;
        }
    }
}
