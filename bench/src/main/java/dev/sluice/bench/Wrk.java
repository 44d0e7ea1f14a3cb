package dev.sluice.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One {@code wrk} run (Debian's wrk 4.1): {@code -t2 -cN -dSs --latency} with
 * {@code bench/wrk/report.lua}, whose one {@code RESULT} line is parsed here.
 */
final class Wrk {

    /** What report.lua prints: requests/s, latency percentiles in µs, counts. */
    record Result(double rps, long p50, long p90, long p99, long p999, long requests, long non2xx, long socketErrors) {
    }

    private Wrk() {
    }

    static Result run(Path script, String url, int connections, int seconds) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("wrk", "-t2", "-c" + connections, "-d" + seconds + "s", "--latency"));
        if (script != null) cmd.addAll(List.of("-s", script.toString()));
        cmd.add(url);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) throw new IOException("wrk failed (" + p.exitValue() + "): " + out);
        if (script == null) return null;
        for (String line : out.split("\n")) {
            if (!line.startsWith("RESULT ")) continue;
            Map<String, String> kv = new HashMap<>();
            for (String field : line.substring("RESULT ".length()).trim().split(" ")) {
                int eq = field.indexOf('=');
                kv.put(field.substring(0, eq), field.substring(eq + 1));
            }
            return new Result(Double.parseDouble(kv.get("rps")), Long.parseLong(kv.get("p50")), Long.parseLong(kv.get("p90")),
                    Long.parseLong(kv.get("p99")), Long.parseLong(kv.get("p999")), Long.parseLong(kv.get("requests")),
                    Long.parseLong(kv.get("non2xx")), Long.parseLong(kv.get("socket_errors")));
        }
        throw new IOException("wrk printed no RESULT line: " + out);
    }
}
