#!/usr/bin/env bash
# Reproduces every figure of BENCHMARKS.md on this machine, from a clean clone:
#   installs what is missing (Debian packages: wrk, redis-server/redis-tools, maven, a JDK 17),
#   builds bench/ (Maven profile "bench"), starts its own redis-server on a free loopback port,
#   runs the JMH suite (limiter API on Redis: Sluice / Bucket4j / bare EVALSHA; local engine;
#   the filter's own overhead; Redis round trips and commands per decision; the denied flood),
#   redis-benchmark of the same EVALSHA, wrk against embedded Jetty (no filter / Sluice local /
#   Sluice on Redis), the approximate mode (its local path against the local engine; three instances
#   at 1,000 requests/s on one key: round trips per request, overshoot), and writes
#   bench/results/<timestamp>/RESULTS.md.
#
# Usage: bench/run.sh                 # the default matrix, ~10 minutes on 2 cores
#        ROUNDS=3 bench/run.sh        # every JMH trial 3 times round-robin (published figures)
#        FULL=1 bench/run.sh          # every algorithm at 1, 8 and 64 threads (longer)
#        PARTS=redis,commands bench/run.sh   # a subset: redis,local,filter,commands,flood (the JMH suite), approx
#        PARTS=approx SKIP_JMH=1 SKIP_HTTP=1 SKIP_REDIS_BENCHMARK=1 bench/run.sh   # the approximate mode alone (~2 min)
#        SKIP_JMH=1 / SKIP_HTTP=1 / SKIP_REDIS_BENCHMARK=1 / IMPLS=bucket4j,floor / VARIANTS="none redis" bench/run.sh
# Only 127.0.0.1 receives traffic. Everything started here is stopped by pid on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
ROUNDS=${ROUNDS:-1}
PARTS=${PARTS:-redis,local,filter,commands,flood,approx}
IMPLS=${IMPLS:-sluice,bucket4j,floor}
VARIANTS=${VARIANTS:-none local redis redis-denied}
HTTP_SECONDS=${HTTP_SECONDS:-5}
HTTP_RUNS=${HTTP_RUNS:-3}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP}
mkdir -p "$OUT"
started=$(date +%s)
log() { printf '[run.sh %4ds] %s\n' $(( $(date +%s) - started )) "$*"; }

# ---------------------------------------------------------------- tools
need=()
command -v java >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v wrk >/dev/null || need+=(wrk)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# ---------------------------------------------------------------- build
log "building bench/ (mvn -Pbench -pl bench -am package -DskipTests)"
mvn -q -B -Pbench -pl bench -am package -DskipTests
JAR=$ROOT/bench/target/benchmarks.jar

# ---------------------------------------------------------------- our own redis-server
free_port() {
  local p
  while :; do
    p=$(( 20000 + RANDOM % 30000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "${REDIS_DIR:-/nonexistent-sluice}"
}
trap cleanup EXIT

REDIS_PORT=$(free_port)
REDIS_DIR=$(mktemp -d)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$REDIS_DIR" \
  --daemonize no --protected-mode no --loglevel warning >"$OUT/redis-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
log "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $REDIS_URL (pid ${pids[0]})"

# ---------------------------------------------------------------- the machine
{
  echo "date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
  echo "load before the run: $(uptime | sed 's/.*load average: //')"
  lscpu | grep -E '^(Model name|Architecture|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|L3 cache|CPU max MHz)' || true
  echo "memory: $(free -h | awk '/^Mem:/ {print $2}')"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "redis: $(redis-server --version)"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >"$OUT/machine.txt"

# ---------------------------------------------------------------- JMH suite
if [ -z "${SKIP_JMH:-}" ]; then
  log "JMH suite: parts=$PARTS rounds=$ROUNDS${FULL:+ full}"
  java -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.Suite --out "$OUT" \
    --rounds "$ROUNDS" --parts "$PARTS" --impls "$IMPLS" ${FULL:+--full} | tee "$OUT/suite.log"
fi

# ---------------------------------------------------------------- the approximate mode (rule.<name>.sync)
if [[ ",$PARTS," == *,approx,* ]]; then
  log "approximate mode: its local path against the local engine (JMH), then three instances at 1,000 requests/s on one key"
  java -Dsluice.bench.redis="$REDIS_URL" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$JAR" \
    dev.sluice.bench.ApproximateSuite --out "$OUT" --rounds "$ROUNDS" | tee "$OUT/approx.log"
fi

# ---------------------------------------------------------------- redis-benchmark of the floor's EVALSHA
if [ -z "${SKIP_REDIS_BENCHMARK:-}" ]; then
  log "redis-benchmark: EVALSHA of the floor's script at 1, 8, 64 connections"
  SCRIPT="return redis.call('INCR', KEYS[1])"
  SHA=$(redis-cli -p "$REDIS_PORT" script load "$SCRIPT")
  {
    echo "### redis-benchmark: the same EVALSHA (\`$SCRIPT\`), median of 3 runs (min..max)"
    echo
    echo "| keys | connections | requests/s | p50 (ms) |"
    echo "|---|---:|---:|---:|"
    for keys in hot 10k; do
      for c in 1 8 64; do
        rps=(); p50=()
        for _ in 1 2 3; do
          if [ "$keys" = hot ]; then
            line=$(redis-benchmark -p "$REDIS_PORT" -c "$c" -n 40000 -q evalsha "$SHA" 1 rb:hot 2>/dev/null | tr '\r' '\n' | grep -a 'requests per second' | tail -1)
          else
            line=$(redis-benchmark -p "$REDIS_PORT" -c "$c" -n 40000 -r 10000 -q evalsha "$SHA" 1 rb:__rand_int__ 2>/dev/null | tr '\r' '\n' | grep -a 'requests per second' | tail -1)
          fi
          rps+=("$(sed -E 's/.*: ([0-9.]+) requests per second.*/\1/' <<<"$line")")
          p50+=("$(sed -E 's/.*p50=([0-9.]+) msec.*/\1/' <<<"$line")")
        done
        med=$(printf '%s\n' "${rps[@]}" | sort -g | sed -n 2p)
        lo=$(printf '%s\n' "${rps[@]}" | sort -g | head -1)
        hi=$(printf '%s\n' "${rps[@]}" | sort -g | tail -1)
        echo "| $keys | $c | $(printf '%.0f (%.0f..%.0f)' "$med" "$lo" "$hi") | $(printf '%s\n' "${p50[@]}" | sort -g | sed -n 2p) |"
      done
    done
    echo
  } >"$OUT/redis-benchmark.md"
  cat "$OUT/redis-benchmark.md"
fi

# ---------------------------------------------------------------- HTTP: wrk against embedded Jetty
if [ -z "${SKIP_HTTP:-}" ]; then
  {
    echo "### HTTP: wrk -t2 -c64 -d${HTTP_SECONDS}s against embedded Jetty 12 (ee10), trivial servlet; median of $HTTP_RUNS runs (min..max)"
    echo
    echo "| variant | requests/s | p50 (µs) | p90 (µs) | p99 (µs) | p99.9 (µs) | non-2xx | Sluice decisions (fallbacks, Redis timeouts) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|"
  } >"$OUT/http.md"
  for variant in $VARIANTS; do
    port=$(free_port)
    log "HTTP: $variant on 127.0.0.1:$port"
    java -Xms512m -Xmx512m -XX:+UseParallelGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
      -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.HttpHarness "$variant" "$port" \
      >"$OUT/http-$variant.log" 2>&1 &
    hpid=$!
    pids+=($hpid)
    for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
    wrk -t2 -c64 -d3s "http://127.0.0.1:$port/" >/dev/null # warm-up: JIT, pool connections
    : >"$OUT/http-$variant.txt"
    for _ in $(seq "$HTTP_RUNS"); do
      wrk -t2 -c64 -d"${HTTP_SECONDS}s" --latency -s bench/wrk/report.lua "http://127.0.0.1:$port/" >>"$OUT/http-$variant.txt"
    done
    kill "$hpid"; wait "$hpid" 2>/dev/null || true
    median_of() { grep '^RESULT' "$OUT/http-$variant.txt" | sed -E "s/.* $1=([0-9.]+).*/\1/" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    range_of() { grep '^RESULT' "$OUT/http-$variant.txt" | sed -E "s/.* $1=([0-9.]+).*/\1/" | sort -g | awk '{a[NR]=$1} END {printf "%.0f..%.0f", a[1], a[NR]}'; }
    sluice=$(grep -m1 '^SLUICE .*decisions=' "$OUT/http-$variant.log" | sed -E 's/.*decisions=([0-9]+) fallback=([0-9]+) timeouts=([0-9]+).*/\1 (\2, \3)/' || true)
    printf '| %s | %.0f (%s) | %s | %s | %s | %s | %s | %s |\n' "$variant" "$(median_of rps)" "$(range_of rps)" \
      "$(median_of p50)" "$(median_of p90)" "$(median_of p99)" "$(median_of p999)" "$(median_of non2xx)" "${sluice:--}" >>"$OUT/http.md"
  done
  echo >>"$OUT/http.md"
  cat "$OUT/http.md"
fi

# ---------------------------------------------------------------- one file with everything
{
  echo "## Results $STAMP"
  echo
  echo '```'
  cat "$OUT/machine.txt"
  echo "load after the run: $(uptime | sed 's/.*load average: //')"
  echo "command: ${ROUNDS:+ROUNDS=$ROUNDS }${FULL:+FULL=1 }PARTS=$PARTS bench/run.sh ($(( $(date +%s) - started ))s)"
  echo '```'
  echo
  [ -f "$OUT/summary.md" ] && cat "$OUT/summary.md"
  [ -f "$OUT/redis-benchmark.md" ] && cat "$OUT/redis-benchmark.md"
  [ -f "$OUT/http.md" ] && cat "$OUT/http.md"
  if [ -f "$OUT/approx.md" ]; then cat "$OUT/approx.md"; fi
} >"$OUT/RESULTS.md"
log "done: $OUT/RESULTS.md"
