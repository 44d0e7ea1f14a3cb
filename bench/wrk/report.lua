-- wrk reporter: one machine-readable line per run, latencies in microseconds.
-- non2xx counts every response that is not 2xx/3xx (wrk's status errors): the 429s of a denied flood.
done = function(summary, latency, requests)
  io.write(string.format("RESULT rps=%.1f p50=%d p90=%d p99=%d p999=%d requests=%d non2xx=%d socket_errors=%d\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
