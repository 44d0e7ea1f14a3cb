#!/usr/bin/env bash
# Redis instructions per decision of two trees' scripts, side by side (valgrind/callgrind: counted,
# not timed): decide-one.lua as RedisEngine assembles it from each tree's resources, sent the same
# request (perl's pack, decide.lua's request layout: '<d' -1 for clock=redis, then per rule 'CC' and
# 5 '<d') by redis-cli one call at a time. Per case, in one redis-server under callgrind (--hz 1) per
# tree and round: W calls to warm up, then the instructions under processCommand (the script, the
# commands it calls, its reply; as bench/guard.sh counts them) over N calls, divided by N. Rounds
# alternate between the trees; each figure is the median of the rounds, with its min..max.
# Cases: each rate algorithm admitted alone, the token bucket denied, two rules of which one
# denies (the other's figures sent untaken), three rules admitted.
# Usage: bench/compare-scripts.sh BEFORE_DIR [AFTER_DIR]   (dirs holding the .lua resources; AFTER_DIR
#        defaults to this tree's; an older commit's: git archive COMMIT filter/src/main/resources | tar -x -C DIR)
#        ROUNDS=3 N=5000 W=500; about 5 minutes for 3 rounds on 2 cores (needs valgrind, perl, redis-server, redis-cli)
set -eu
cd "$(dirname "$0")/.."
. bench/free-port.sh # free_port
. bench/counted-redis.sh # counted_redis, under_process_command
BEFORE=$1
AFTER=${2:-filter/src/main/resources/dev/sluice/internal/redis}
ROUNDS=${ROUNDS:-3}; N=${N:-5000}; W=${W:-500}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
CASES="token-bucket fixed-window sliding-window-counter leaky-bucket gcra token-bucket-denied two-rules-one-denies three-rules"

# decide-one.lua as RedisEngine assembles it from DIR (bench/assemble.awk)
assemble() { awk -v dir="$1" -v main=decide-one.lua -f bench/assemble.awk; }

# count DIR OUT: one server, every case; "case instructions-per-call" lines into OUT
count() {
  local script port pid sha out=$2 big="1000000000 1000000 1000000000 1000000 1" # big: never denied
  script=$(assemble "$1")
  counted_redis "$WORK" "$script"
  request() { perl -e 'my $s = pack("d<", -1); while (@ARGV) { $s .= pack("CC", shift @ARGV, shift @ARGV) . pack("d<5", splice(@ARGV, 0, 5)) } print $s' "$@" > "$WORK/arg"; }
  measure() { # name keys... (the request in $WORK/arg)
    local name=$1 c; shift
    redis-cli -p "$port" -r "$W" -x evalsha "$sha" $# "$@" < "$WORK/arg" >/dev/null 2>&1
    under_process_command "$WORK" >/dev/null
    redis-cli -p "$port" -r "$N" -x evalsha "$sha" $# "$@" < "$WORK/arg" >/dev/null 2>&1
    c=$(under_process_command "$WORK")
    echo "$name $(( c / N ))" >> "$out"
  }
  request 4 0 $big; measure token-bucket 'k:{tb}'
  request 1 0 $big; measure fixed-window 'k:{fw}'
  request 2 0 $big; measure sliding-window-counter 'k:{swc}'
  request 5 0 $big; measure leaky-bucket 'k:{lb}'
  request 6 0 $big; measure gcra 'k:{gcra}'
  request 4 0 1 3600000 1 0 1; measure token-bucket-denied 'k:{den}'
  request 4 0 $big 4 0 1 3600000 1 0 1; measure two-rules-one-denies 'k:{a1}' 'k:{den}'
  request 4 0 $big 1 0 $big 2 0 $big; measure three-rules 'k:{r1}' 'k:{r2}' 'k:{r3}'
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
}

for r in $(seq "$ROUNDS"); do
  count "$BEFORE" "$WORK/before.$r"
  count "$AFTER" "$WORK/after.$r"
done

figures() { # side case -> "median (min..max)" over the rounds
  cat "$WORK/$1".* | awk -v c="$2" '$1 == c {print $2}' | sort -n \
    | awk '{a[NR] = $1} END {printf "%d (%d..%d)", a[int((NR + 1) / 2)], a[1], a[NR]}'
}
median() { cat "$WORK/$1".* | awk -v c="$2" '$1 == c {print $2}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "| case | before: instructions per decision under processCommand, median of $ROUNDS (min..max) | after | change of the medians |"
echo "|---|---:|---:|---:|"
for c in $CASES; do
  printf '| %s | %s | %s | %s |\n' "$c" "$(figures before "$c")" "$(figures after "$c")" \
    "$(awk -v b="$(median before "$c")" -v a="$(median after "$c")" 'BEGIN {printf "%+.2f%%", (a - b) * 100 / b}')"
done
