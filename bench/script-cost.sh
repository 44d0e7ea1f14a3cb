#!/usr/bin/env bash
# Redis work per decision in CPU instructions (valgrind/callgrind: deterministic, independent of
# machine load): the floor's script, the least a Redis-clock limiter must run (TIME + GET +
# SET PX), and Sluice's script for each algorithm, as assembled by RedisEngine from the
# resources. Each figure is (instructions after 3000 calls - after 1000 calls) / 2000, so
# start-up and connection costs cancel. Takes a few minutes; not part of run.sh.
# Usage: bench/script-cost.sh   (needs valgrind, redis-server, redis-benchmark; apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
LUA=filter/src/main/resources/dev/sluice/internal/redis
SCRIPT=$(for f in common fixed-window token-bucket sliding-window-counter sliding-window-log leaky-bucket gcra decide; do
  [ -f "$LUA/$f.lua" ] && { cat "$LUA/$f.lua"; echo; }; done)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

instructions() { # calls script args... -> total instructions of a redis-server that ran the script `calls` times
  local calls=$1 script=$2; shift 2
  local port=$(( 30000 + RANDOM % 20000 ))
  valgrind --tool=callgrind --callgrind-out-file="$WORK/out.$port" redis-server --port "$port" --bind 127.0.0.1 \
    --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  local sha; sha=$(redis-cli -p "$port" script load "$script")
  redis-benchmark -p "$port" -c 1 -n "$calls" -q evalsha "$sha" "$@" >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  grep -E '^(summary|totals):' "$WORK/out.$port" | head -1 | awk '{print $2}'
}
per_call() { local a b; a=$(instructions 1000 "$@"); b=$(instructions 3000 "$@"); echo $(( (b - a) / 2000 )); }

echo "| script | instructions per call |"
echo "|---|---:|"
echo "| \`return 1\` | $(per_call 'return 1' 1 k) |"
echo "| the floor: \`return redis.call('INCR', KEYS[1])\` | $(per_call "return redis.call('INCR', KEYS[1])" 1 k) |"
echo "| least a limiter with clock=redis runs: TIME + GET + SET PX | $(per_call "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], 'T123456789:1764500000000', 'PX', 2000) return 1" 1 'k:{a:b}') |"
for alg in token-bucket fixed-window sliding-window-counter gcra leaky-bucket; do
  echo "| Sluice, $alg, admitted | $(per_call "$SCRIPT" 1 "k:{api:$alg}" redis "$alg" 1000000000 1000000 1000000000 1000000 1) |"
done
echo "| Sluice, token-bucket, denied (exhausted) | $(per_call "$SCRIPT" 1 'k:{api:x}' redis token-bucket 1 3600000 1 0 1) |"
