#!/usr/bin/env bash
# Redis work per decision in CPU instructions (valgrind/callgrind: deterministic, independent of
# machine load): the floor's script, the least a Redis-clock limiter must run (TIME + GET +
# SET PX), and Sluice's one-request script for each algorithm, as RedisEngine assembles it from the
# resources (decide-one.lua, decide.lua in it, the fragments in that) and with the packed
# argument it sends (perl's pack: '<d' now, -1 for clock=redis, then per rule 'C' algorithm, 'C' mode
# (0: enforcing) and 5 '<d').
# Each figure is (instructions after 3000 calls - after 1000 calls) / 2000, so start-up and
# connection costs cancel. Calls are sent one at a time by redis-cli -r (the last argument read
# from stdin, binary-safe); bench/batch-cost.sh counts several decisions per round trip. Takes a minute or two; not part of run.sh.
# Usage: bench/script-cost.sh [SCRIPT_DIR]   (SCRIPT_DIR: where the .lua resources are, default the tree's; needs valgrind, perl, redis-server, redis-cli; apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/free-port.sh # free_port
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
LUA=${1:-filter/src/main/resources/dev/sluice/internal/redis} # or an older tree's resources, to count them
# decide-one.lua as RedisEngine assembles it (bench/assemble.awk)
SCRIPT=$(awk -v dir="$LUA" -v main=decide-one.lua -f bench/assemble.awk)
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

instructions() { # calls script argfile keys... -> total instructions of a redis-server that ran the script `calls` times (argfile -: no ARGV)
  local calls=$1 script=$2 argfile=$3; shift 3
  local port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$WORK/out.$port" redis-server --port "$port" --bind 127.0.0.1 \
    --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  local sha; sha=$(redis-cli -p "$port" script load "$script")
  if [ "$argfile" = - ]; then
    redis-cli -p "$port" -r "$calls" evalsha "$sha" "$@" >/dev/null 2>&1
  else
    redis-cli -p "$port" -r "$calls" -x evalsha "$sha" "$@" < "$argfile" >/dev/null 2>&1
  fi
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  grep -E '^(summary|totals):' "$WORK/out.$port" | head -1 | awk '{print $2}'
}
per_call() { local a b; a=$(instructions 1000 "$@"); b=$(instructions 3000 "$@"); echo $(( (b - a) / 2000 )); }
# ARGV[1] for clock=redis: rules as "algorithm limit window burst max-delay cost ..."
request() { perl -e 'my $s = pack("d<", -1); while (@ARGV) { $s .= pack("CC", shift @ARGV, 0) . pack("d<5", splice(@ARGV, 0, 5)) } print $s' "$@" > "$WORK/arg"; echo "$WORK/arg"; }
BIG="1000000000 1000000 1000000000 1000000 1" # limit, window ms, burst, max delay ms, cost: never denied in 3000 calls

echo "| script | instructions per call |"
echo "|---|---:|"
echo "| \`return 1\` | $(per_call 'return 1' - 1 k) |"
echo "| the floor: \`return redis.call('INCR', KEYS[1])\` | $(per_call "return redis.call('INCR', KEYS[1])" - 1 k) |"
echo "| least a limiter with clock=redis runs: TIME + GET + SET PX | $(per_call "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], 'T123456789:1764500000000', 'PX', 2000) return 1" - 1 'k:{a:b}') |"
id=1
for alg in fixed-window sliding-window-counter sliding-window-log token-bucket leaky-bucket gcra; do
  echo "| Sluice, $alg, admitted | $(per_call "$SCRIPT" "$(request $id $BIG)" 1 "k:{api:$alg}") |"
  id=$((id + 1))
done
echo "| Sluice, token-bucket, denied (exhausted) | $(per_call "$SCRIPT" "$(request 4 1 3600000 1 0 1)" 1 'k:{api:x}') |"
echo "| Sluice, 3 rules (token-bucket, fixed-window, sliding-window-counter), admitted | $(per_call "$SCRIPT" "$(request 4 $BIG 1 $BIG 2 $BIG)" 3 'k:{a:x}' 'k:{b:x}' 'k:{c:x}') |"
