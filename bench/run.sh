#!/usr/bin/env bash
# Reproduces every figure of BENCHMARKS.md on this machine, from a clean clone:
#   installs what is missing (Debian packages: wrk, redis-server/redis-tools, maven, a JDK 17, valgrind),
#   builds bench/ (Maven profile "bench": the benchmarks jar, the Apache Tomcat 11 distribution from
#   Maven Central unpacked, the web application's jars), starts its own redis-server on a free
#   loopback port, and runs, each a part that can be named on the command line:
#   jmh     the JMH suite (limiter API on Redis: Sluice with and without shared round trips / Bucket4j /
#           bare EVALSHA; local engine; the filter's own overhead; Redis round trips and commands per
#           decision; the denied flood; pipelined calls vs one batch script)
#   approx  the approximate mode (its local path against the local engine; three instances at 1,000
#           requests/s on one key: round trips per request, overshoot)
#   redis-benchmark   redis-benchmark of the floor's EVALSHA
#   http    wrk against one embedded Tomcat (no filter / Sluice local, with and without its rate-limit
#           fields / one bare EVALSHA per request / Sluice on Redis / Sluice denying)
#   alloc   (only when named) bytes allocated per request on the Tomcat 11 distribution, one request at a time on a
#           kept-alive connection (no wrk: the figures hold on a busy machine), per variant; with
#           PROFILE=1 also async-profiler's allocation profile of each under that load (where the
#           bytes go: the filter's own code, Tomcat encoding the headers, the rest)
#   tomcat  wrk -t2 at -c32 and -c64 against the Tomcat 11 distribution (issue 17: no filter / Sluice
#           with no matching rule / Sluice local / Sluice on Redis / the raw-socket EVALSHA floor
#           filter), 3 rounds round-robin, CPU per request of Tomcat and Redis, bytes allocated per
#           request; with PROFILE=1 also async-profiler's CPU and allocation profiles of each filter
#   anchor  Redis CPU per decision of Sluice (every algorithm, 64 threads, 10,000 keys) against
#           redis-benchmark -c 64 -r 10000 -P 16 of a minimal limiter script and of `return 1`
#   guard   round trips, Redis commands and Redis instructions (callgrind) per decision, per request
#           that settles (concurrency slot taken and released, actual cost charged or partly given
#           back) and per concurrency slot renewed, against bench/cost-baseline.properties (the check
#           bench/guard.sh runs as a test); and bench/cost-breakdown.sh: a batched decision's Redis
#           instructions, part by part (about 15 s)
#   settle  issue 16: Redis CPU per operation (INFO cpu) of those requests and renewals, next to a
#           token-bucket decision measured in the same run (64 threads, 10,000 keys), 5 rounds
#           round-robin (SETTLE_ROUNDS, 3), with round trips and commands per operation (20 to 30 s)
#   and writes bench/results/<timestamp>/RESULTS.md.
#
# Usage: bench/run.sh                 # every part but alloc, under 15 minutes on 2 cores (ROUNDS=1; 14 min 38 s from a clean clone in BENCHMARKS.md's run R4)
#        bench/run.sh tomcat          # one part (or several: bench/run.sh tomcat anchor)
#        PROFILE=1 bench/run.sh tomcat   # and the profiles on the distribution (~3 minutes more)
#        PROFILE=1 bench/run.sh alloc    # bytes per request and where they go, on a busy machine too (~3 minutes)
#        PROFILE=1 TOMCAT_ROUNDS=0 bench/run.sh tomcat   # the CPU and allocation profiles under wrk alone (shares)
#        ROUNDS=3 bench/run.sh jmh    # every JMH trial 3 times round-robin (published figures)
#        FULL=1 bench/run.sh          # every algorithm at 1, 8 and 64 threads (longer)
#        PROFILE=1 bench/run.sh http  # profile the embedded Tomcat's filter (async-profiler; ~1 minute more)
#        PARTS=redis,commands bench/run.sh jmh   # a subset of the JMH suite: redis,local,filter,commands,flood,shapes
#        ROUNDS=3 PARTS=redis THREADS=64 IMPLS=sluice,bucket4j,floor,batched-floor bench/run.sh jmh   # issue 17's two ratios and the ceiling of sharing round trips, 3 rounds (~7 min)
#        TOMCAT_ROUNDS=5 TOMCAT_SECONDS=10 TOMCAT_VARIANTS="none redis floor" bench/run.sh tomcat
#        TOMCAT_VARIANTS="none empty empty-wrapping unmatched" bench/run.sh tomcat   # beside Sluice, a filter that only passes the request on (and one that wraps it)
#        TOMCAT_WARMUP=3 TOMCAT_WARMUP_ROUNDS=3   # the distribution's warm-up: rounds round-robin until every rate is within 10% of its last
#        bench/run.sh guard settle    # issue 16: a slot's and a settlement's cost, counted and timed (79 s)
#        ALLOC_REQUESTS=20000 ALLOC_ROUNDS=3 ALLOC_WARMUP=60000 bench/run.sh alloc   # its defaults
#        SKIP_JMH=1 / SKIP_HTTP=1 / SKIP_REDIS_BENCHMARK=1 / SKIP_ALLOC=1 / SKIP_TOMCAT=1 / SKIP_ANCHOR=1 / SKIP_GUARD=1 / SKIP_SETTLE=1
#        IMPLS=bucket4j,floor / VARIANTS="none redis" bench/run.sh
#        QUIET_WAIT=60 QUIET_BUSY=15   # first, up to 60 s for the cores to be under 15% busy (a run just before winding down)
#        REDIS_SESSION=own|shared   # the redis-server in a session of its own (default: a service's share of the CPU) or in this script's (runs before AV)
# Only 127.0.0.1 receives traffic. Everything started here is stopped by pid on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
# the parts named on the command line, or all
KNOWN_PARTS="jmh approx redis-benchmark http alloc tomcat anchor guard settle"
for p in "$@"; do [[ " $KNOWN_PARTS " == *" $p "* ]] || { echo "unknown part '$p': one of $KNOWN_PARTS" >&2; exit 2; }; done
# alloc only when named: the distribution's bytes per request are in tomcat's report too (under wrk)
SELECTED=" ${*:-${KNOWN_PARTS/ alloc/}} "
part() { [[ "$SELECTED" == *" $1 "* ]]; }
ROUNDS=${ROUNDS:-1}
PARTS=${PARTS:-redis,local,filter,commands,flood,shapes,approx}
IMPLS=${IMPLS:-sluice,sluice-unshared,bucket4j,floor}
VARIANTS=${VARIANTS:-none local local-no-headers evalsha redis redis-denied}
HTTP_SECONDS=${HTTP_SECONDS:-4}
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
if part guard && [ -z "${SKIP_GUARD:-}" ]; then command -v valgrind >/dev/null || need+=(valgrind); fi
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
. bench/free-port.sh # free_port
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "${REDIS_DIR:-/nonexistent-sluice}"
}
trap cleanup EXIT

# Redis runs as a service does, in a session of its own (REDIS_SESSION=own, the default since run AV):
# with the kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled), the CPU is shared
# fairly between sessions first, so a redis-server started in this script's session gets one thread's
# share among the client's 64 busy ones, which no deployment gives it (Redis on its own host, or a
# systemd service in its own cgroup). REDIS_SESSION=shared keeps it in this session (every run before AV).
REDIS_PORT=$(free_port)
REDIS_DIR=$(mktemp -d)
REDIS_SESSION=${REDIS_SESSION:-own}
case $REDIS_SESSION in
  own) redis_launcher=(setsid) ;; # not a process group leader here, so setsid execs in place: $! is redis-server's pid
  shared) redis_launcher=() ;;
  *) echo "REDIS_SESSION must be own or shared, not '$REDIS_SESSION'" >&2; exit 2 ;;
esac
set +m # no job control here, whatever the caller's shell options: the launch must not be a process group leader
${redis_launcher[@]+"${redis_launcher[@]}"} redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$REDIS_DIR" \
  --daemonize no --protected-mode no --loglevel warning >"$OUT/redis-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
if [ "$(cat "/proc/${pids[0]}/comm" 2>/dev/null)" != redis-server ]; then
  # setsid forked after all: stop the server it started by the pid the server gives, then give up
  rpid=$(redis-cli -p "$REDIS_PORT" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')
  [ -n "$rpid" ] && kill "$rpid" 2>/dev/null
  echo "redis-server did not start as pid ${pids[0]}" >&2; exit 1
fi
log "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $REDIS_URL (pid ${pids[0]}, $REDIS_SESSION session; scheduler autogroup $(sed 's/ .*//' "/proc/${pids[0]}/autogroup" 2>/dev/null || echo -))"

# ---------------------------------------------------------------- a quiet machine first
# A run started right after another (its JVMs still stopping, compiling, collecting) would share the cores with its
# first measurements (run AD1 of BENCHMARKS.md): wait until the cores are mostly idle over a second, at most
# QUIET_WAIT seconds (60; 0: no wait), QUIET_BUSY the share of all cores that counts as busy (15%).
busy_share() {
  local a b c d e f g t1 i1
  read -r _ a b c d e f g _ </proc/stat
  t1=$((a + b + c + d + e + f + g)) i1=$((d + e))
  sleep 1
  read -r _ a b c d e f g _ </proc/stat
  t1=$((a + b + c + d + e + f + g - t1)) i1=$((d + e - i1))
  echo $((t1 > 0 ? 100 - 100 * i1 / t1 : 0))
}
quiet_from=$(date +%s)
busy=$(busy_share)
while [ "$busy" -gt "${QUIET_BUSY:-15}" ] && [ $(($(date +%s) - quiet_from)) -lt "${QUIET_WAIT:-60}" ]; do
  busy=$(busy_share)
done
quiet="waited $(($(date +%s) - quiet_from)) s for a quiet machine: ${busy}% of the cores busy over the last second"
log "$quiet"

# ---------------------------------------------------------------- the machine
{
  echo "date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
  echo "load before the run: $(uptime | sed 's/.*load average: //'); $quiet"
  lscpu | grep -E '^(Model name|Architecture|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|L3 cache|CPU max MHz)' || true
  echo "memory: $(free -h | awk '/^Mem:/ {print $2}')"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "redis: $(redis-server --version)"
  echo "wrk: $(wrk -v 2>&1 | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "redis-server session: $REDIS_SESSION (scheduler autogroup: $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo -); redis-server $(sed 's/ .*//' "/proc/${pids[0]}/autogroup" 2>/dev/null || echo -), this script $(sed 's/ .*//' /proc/$$/autogroup 2>/dev/null || echo -))"
} >"$OUT/machine.txt"

# ---------------------------------------------------------------- JMH suite
if part jmh && [ -z "${SKIP_JMH:-}" ]; then
  log "JMH suite: parts=$PARTS rounds=$ROUNDS${FULL:+ full}"
  java -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.Suite --out "$OUT" \
    --rounds "$ROUNDS" --parts "$PARTS" --impls "$IMPLS" ${FULL:+--full} ${THREADS:+--threads "$THREADS"} | tee "$OUT/suite.log"
fi

# ---------------------------------------------------------------- the approximate mode (rule.<name>.sync)
if part approx && [[ ",$PARTS," == *,approx,* ]]; then
  log "approximate mode: its local path against the local engine (JMH), then three instances at 1,000 requests/s on one key"
  java -Dsluice.bench.redis="$REDIS_URL" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$JAR" \
    dev.sluice.bench.ApproximateSuite --out "$OUT" --rounds "$ROUNDS" | tee "$OUT/approx.log"
fi

# ---------------------------------------------------------------- redis-benchmark of the floor's EVALSHA
if part redis-benchmark && [ -z "${SKIP_REDIS_BENCHMARK:-}" ]; then
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
        rps=(); p50=(); n=40000; [ "$c" = 1 ] && n=20000 # one connection: one call at a time, the slowest
        for _ in 1 2 3; do
          if [ "$keys" = hot ]; then
            line=$(redis-benchmark -p "$REDIS_PORT" -c "$c" -n "$n" -q evalsha "$SHA" 1 rb:hot 2>/dev/null | tr '\r' '\n' | grep -a 'requests per second' | tail -1)
          else
            line=$(redis-benchmark -p "$REDIS_PORT" -c "$c" -n "$n" -r 10000 -q evalsha "$SHA" 1 rb:__rand_int__ 2>/dev/null | tr '\r' '\n' | grep -a 'requests per second' | tail -1)
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

# ---------------------------------------------------------------- HTTP: wrk against one embedded Tomcat
# Every variant runs in its own Tomcat JVM, all started first; the wrk runs go round-robin over the
# variants (run 1 of each, then run 2 of each...) so a busy minute on the machine hits all of them.
# Per run: wrk's figures, and the CPU the Tomcat JVM and Redis spent per request (/proc/PID/stat).
if part http && [ -z "${SKIP_HTTP:-}" ]; then
  TCK=$(getconf CLK_TCK)
  cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  declare -A hport hpid
  for variant in $VARIANTS; do
    port=$(free_port)
    java -Xms512m -Xmx512m -XX:+UseParallelGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
      -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.HttpHarness "$variant" "$port" \
      >"$OUT/http-$variant.log" 2>&1 &
    hpid[$variant]=$!
    hport[$variant]=$port
    pids+=($!)
    : >"$OUT/http-$variant.txt"
  done
  for variant in $VARIANTS; do
    for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:${hport[$variant]}/" && break; sleep 0.1; done
    log "HTTP: $variant on 127.0.0.1:${hport[$variant]}, warming up"
    wrk -t2 -c64 -d2s "http://127.0.0.1:${hport[$variant]}/" >/dev/null # JIT, pool connections
  done
  http_load=$(uptime | sed 's/.*load average: //')
  for run in $(seq "$HTTP_RUNS"); do
    for variant in $VARIANTS; do
      log "HTTP: $variant, run $run of $HTTP_RUNS"
      s0=$(cpu_ticks "${hpid[$variant]}"); r0=$(cpu_ticks "${pids[0]}")
      line=$(wrk -t2 -c64 -d"${HTTP_SECONDS}s" --latency -s bench/wrk/report.lua "http://127.0.0.1:${hport[$variant]}/" | grep '^RESULT')
      s1=$(cpu_ticks "${hpid[$variant]}"); r1=$(cpu_ticks "${pids[0]}")
      n=$(sed -E 's/.* requests=([0-9]+).*/\1/' <<<"$line")
      echo "$line $(awk -v s=$((s1 - s0)) -v r=$((r1 - r0)) -v n="$n" -v t="$TCK" \
        'BEGIN {printf "server_cpu_us=%.1f redis_cpu_us=%.1f", s * 1e6 / t / n, r * 1e6 / t / n}')" >>"$OUT/http-$variant.txt"
    done
  done
  for variant in $VARIANTS; do kill "${hpid[$variant]}"; wait "${hpid[$variant]}" 2>/dev/null || true; done
  median_of() { grep '^RESULT' "$OUT/http-$1.txt" | sed -E "s/.* $2=([0-9.]+).*/\1/" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  range_of() { grep '^RESULT' "$OUT/http-$1.txt" | sed -E "s/.* $2=([0-9.]+).*/\1/" | sort -g | awk '{a[NR]=$1} END {printf "%.0f..%.0f", a[1], a[NR]}'; }
  {
    echo "### HTTP: wrk -t2 -c64 -d${HTTP_SECONDS}s against one embedded Tomcat 11 (NIO, 200 threads), trivial servlet; median of $HTTP_RUNS runs (min..max), round-robin over the variants"
    echo
    echo "Load average when the HTTP runs began: $http_load; when they ended: $(uptime | sed 's/.*load average: //')."
    echo
    echo "| variant | requests/s | p50 (µs) | p90 (µs) | p99 (µs) | p99.9 (µs) | non-2xx | Tomcat CPU per request (µs) | Redis CPU per request (µs) | Sluice decisions (fallbacks, Redis timeouts) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for variant in $VARIANTS; do
      sluice=$(grep -m1 '^SLUICE .*decisions=' "$OUT/http-$variant.log" | sed -E 's/.*decisions=([0-9]+) fallback=([0-9]+) timeouts=([0-9]+).*/\1 (\2, \3)/' || true)
      printf '| %s | %.0f (%s) | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$variant" "$(median_of "$variant" rps)" "$(range_of "$variant" rps)" \
        "$(median_of "$variant" p50)" "$(median_of "$variant" p90)" "$(median_of "$variant" p99)" "$(median_of "$variant" p999)" \
        "$(median_of "$variant" non2xx)" "$(median_of "$variant" server_cpu_us)" "$(median_of "$variant" redis_cpu_us)" "${sluice:--}"
    done
    echo
    # the HTTP targets of issue 10, from the medians above
    ratio() { [ -s "$OUT/http-$1.txt" ] && [ -s "$OUT/http-$2.txt" ] && awk -v a="$(median_of "$1" rps)" -v b="$(median_of "$2" rps)" -v t="$3" \
      'BEGIN {r = a / b; printf "**%.2fx** (%.0f vs %.0f per s) | %s", r, a, b, (r >= t ? "met" : "**not met**")}'; }
    echo "| HTTP target (issue 10) | measured | |"
    echo "|---|---|---|"
    r=$(ratio redis evalsha 1.0 || true); [ -n "$r" ] && echo "| Sluice on Redis >= 1.0x a filter doing one bare EVALSHA per request | $r |"
    r=$(ratio local none 0.9 || true); [ -n "$r" ] && echo "| Sluice's local engine >= 0.9x no filter | $r |"
    r=$(ratio local-no-headers none 0.9 || true); [ -n "$r" ] && echo "| the same, \`headers=none\` (what the five fields cost in Tomcat) | $r |"
    echo
  } >"$OUT/http.md"
  cat "$OUT/http.md"
fi

# ---------------------------------------------------------------- where the filter's HTTP time goes (PROFILE=1)
# async-profiler 3.0 (from Maven Central) samples the CPU of one Tomcat JVM per variant while wrk
# loads it; writes a flame graph (profile-VARIANT.html) and the table of ProfileSummary.
ASYNC_PROFILER=$ROOT/bench/target/dist/linux-x64/libasyncProfiler.so # unpacked by bench's build
if part http && [ -z "${SKIP_HTTP:-}" ] && [ -n "${PROFILE:-}" ]; then
  : >"$OUT/profile.md"
  for variant in ${PROFILE_VARIANTS:-local redis}; do
    for format in collapsed html; do
      port=$(free_port)
      log "profile: $variant ($format)"
      java -Xms512m -Xmx512m -XX:+UseParallelGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -agentpath:"$ASYNC_PROFILER=start,event=itimer,interval=1ms,file=$OUT/profile-$variant.$format,$format" \
        -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.HttpHarness "$variant" "$port" >"$OUT/profile-$variant.log" 2>&1 &
      ppid=$!
      pids+=($ppid)
      for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
      wrk -t2 -c64 -d10s "http://127.0.0.1:$port/" >/dev/null
      kill "$ppid"; wait "$ppid" 2>/dev/null || true
    done
    java -cp "$JAR" dev.sluice.bench.ProfileSummary "$variant" "$OUT/profile-$variant.collapsed" >>"$OUT/profile.md"
  done
  cat "$OUT/profile.md"
fi

# ---------------------------------------------------------------- bytes per request on the Tomcat 11 distribution
# TomcatDistribution --rounds 0 --allocation N: no wrk; SequentialClient's one request at a time.
if part alloc && [ -z "${SKIP_ALLOC:-}" ]; then
  TOMCAT_HOME=$(ls -d "$ROOT"/bench/target/dist/apache-tomcat-*/ | head -1)
  log "bytes per request on the distribution: $(basename "$TOMCAT_HOME"), ${ALLOC_ROUNDS:-3} x ${ALLOC_REQUESTS:-20000} requests one at a time${PROFILE:+, then profiles}"
  tv=${TOMCAT_VARIANTS:-none unmatched local redis floor}
  java -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.TomcatDistribution --home "$TOMCAT_HOME" \
    --lib "$ROOT/bench/target/tomcat-webapp-lib" --out "$OUT" --variants "${tv// /,}" --rounds 0 \
    --allocation "${ALLOC_REQUESTS:-20000}" --allocation-rounds "${ALLOC_ROUNDS:-3}" \
    --allocation-warmup "${ALLOC_WARMUP:-60000}" ${PROFILE:+--profile "$ASYNC_PROFILER"} | tee "$OUT/alloc.log"
  cat "$OUT/tomcat-alloc.md"
fi

# ---------------------------------------------------------------- HTTP: the Tomcat 11 distribution (issue 17)
# TomcatDistribution starts one Tomcat per variant with the distribution's own bin/catalina.sh and
# its stock conf/ (server.xml: the ports only), all first, then wrk -t2 at each concurrency round-robin.
if part tomcat && [ -z "${SKIP_TOMCAT:-}" ]; then
  TOMCAT_HOME=$(ls -d "$ROOT"/bench/target/dist/apache-tomcat-*/ | head -1)
  log "HTTP on the distribution: $(basename "$TOMCAT_HOME"), rounds=${TOMCAT_ROUNDS:-3} ${TOMCAT_SECONDS:-5}s${PROFILE:+, then profiles}"
  tv=${TOMCAT_VARIANTS:-none unmatched local redis floor}
  java -Dsluice.bench.redis="$REDIS_URL" -cp "$JAR" dev.sluice.bench.TomcatDistribution --home "$TOMCAT_HOME" \
    --lib "$ROOT/bench/target/tomcat-webapp-lib" --wrk-script "$ROOT/bench/wrk/report.lua" --out "$OUT" \
    --variants "${tv// /,}" --connections "${TOMCAT_CONNECTIONS:-32,64}" --rounds "${TOMCAT_ROUNDS:-3}" \
    --seconds "${TOMCAT_SECONDS:-5}" --warmup "${TOMCAT_WARMUP:-3}" --warmup-rounds "${TOMCAT_WARMUP_ROUNDS:-3}" ${PROFILE:+--profile "$ASYNC_PROFILER"} \
    ${PROFILE:+--profile-seconds "${PROFILE_SECONDS:-10}"} | tee "$OUT/tomcat.log"
  [ -f "$OUT/tomcat.md" ] && cat "$OUT/tomcat.md"
  [ -f "$OUT/tomcat-profile.md" ] && cat "$OUT/tomcat-profile.md"
fi

# ---------------------------------------------------------------- Redis CPU per decision vs the anchor (issue 17)
if part anchor && [ -z "${SKIP_ANCHOR:-}" ]; then
  log "Redis CPU per decision: Sluice, every algorithm, against redis-benchmark -P 16 of the minimal script; rounds=${ANCHOR_ROUNDS:-3}"
  java -Dsluice.bench.redis="$REDIS_URL" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$JAR" \
    dev.sluice.bench.RedisCpuAnchor --out "$OUT" --rounds "${ANCHOR_ROUNDS:-3}" | tee "$OUT/anchor.log"
  cat "$OUT/anchor.md"
fi

# ---------------------------------------------------------------- the counted guards (issue 17)
if part guard && [ -z "${SKIP_GUARD:-}" ]; then
  log "cost guard: round trips, commands and instructions per operation against bench/cost-baseline.properties"
  java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$JAR" dev.sluice.bench.CostGuard \
    --baseline "$ROOT/bench/cost-baseline.properties" --out "$OUT" | tee "$OUT/guard.log" \
    || log "cost guard: a figure is over bench/cost-baseline.properties (above)"
  log "where a batched decision's instructions go: bench/cost-breakdown.sh (parts taken away, counted)"
  bench/cost-breakdown.sh | tee "$OUT/cost-breakdown.md" \
    || log "cost breakdown failed (above): the Lua resources changed where it cuts them"
fi

# ---------------------------------------------------------------- what a concurrency slot and a settlement cost (issue 16)
if part settle && [ -z "${SKIP_SETTLE:-}" ]; then
  log "Redis CPU per request with a concurrency slot or a settled cost, per slot renewed, against a token-bucket decision; rounds=${SETTLE_ROUNDS:-3}"
  java -Dsluice.bench.redis="$REDIS_URL" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$JAR" \
    dev.sluice.bench.SettlementCpu --out "$OUT" --rounds "${SETTLE_ROUNDS:-3}" | tee "$OUT/settle.log"
  cat "$OUT/settle.md"
fi

# ---------------------------------------------------------------- one file with everything
{
  echo "## Results $STAMP"
  echo
  echo '```'
  cat "$OUT/machine.txt"
  echo "load after the run: $(uptime | sed 's/.*load average: //')"
  echo "command: ${ROUNDS:+ROUNDS=$ROUNDS }${FULL:+FULL=1 }${PROFILE:+PROFILE=1 }PARTS=$PARTS bench/run.sh $* ($(( $(date +%s) - started ))s)"
  echo '```'
  echo
  [ -f "$OUT/summary.md" ] && cat "$OUT/summary.md"
  [ -f "$OUT/redis-benchmark.md" ] && cat "$OUT/redis-benchmark.md"
  [ -f "$OUT/http.md" ] && cat "$OUT/http.md"
  if [ -f "$OUT/approx.md" ]; then cat "$OUT/approx.md"; fi
  [ -f "$OUT/profile.md" ] && cat "$OUT/profile.md"
  [ -f "$OUT/tomcat-alloc.md" ] && cat "$OUT/tomcat-alloc.md"
  [ -f "$OUT/tomcat.md" ] && cat "$OUT/tomcat.md"
  [ -f "$OUT/tomcat-profile.md" ] && cat "$OUT/tomcat-profile.md"
  [ -f "$OUT/anchor.md" ] && cat "$OUT/anchor.md"
  [ -f "$OUT/guard.md" ] && cat "$OUT/guard.md"
  [ -f "$OUT/cost-breakdown.md" ] && { echo; cat "$OUT/cost-breakdown.md"; }
  [ -f "$OUT/settle.md" ] && cat "$OUT/settle.md"
} >"$OUT/RESULTS.md"
log "done: $OUT/RESULTS.md"
