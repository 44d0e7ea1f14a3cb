#!/usr/bin/env bash
# The sliding-window log's Redis instructions per decision (valgrind/callgrind: counted, not timed) as a
# function of its limit: a set of up to 128 entries is a listpack (Redis's default
# zset-max-listpack-entries), whose commands walk it entry by entry, and a larger one a skiplist.
# Per limit L: decide-one.lua as RedisEngine assembles it, its own redis-server under callgrind
# (--hz 1), one key, one request per call on the instance's clock, the clock advancing STEP ms per
# call over a window of 0.8 x L x STEP ms: every request admitted, 0.8 x L entries in the window, one
# leaving it per request (a client steadily at 80% of its limit). W calls to warm up, then the
# instructions under processCommand (the script, its commands, its reply) over N calls, divided by N.
# LIMITS=10000 runs the log as bench/guard.sh's case does (an hour's window: nothing leaves).
# Usage: bench/log-cost.sh [SCRIPT_DIR]   (an older tree's: git archive COMMIT filter/src/main/resources
#        | tar -x -C DIR, then DIR/dev/sluice/internal/redis)   LIMITS="10 20 50 100 128 1000" STEP=10
#        N=2000 W=500; about 10 s per limit (needs valgrind, perl, redis-server, redis-cli)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/free-port.sh # free_port
. bench/counted-redis.sh # counted_redis, under_process_command
LUA=${1:-filter/src/main/resources/dev/sluice/internal/redis}
LIMITS=${LIMITS:-10 20 50 100 128 1000}; STEP=${STEP:-10}; N=${N:-2000}; W=${W:-500}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
script=$(awk -v dir="$LUA" -v main=decide-one.lua -f bench/assemble.awk)

# drive PORT SHA FROM COUNT LIMIT WINDOW: calls FROM .. FROM+COUNT-1, pipelined 50 at a time; fails on an error or a denial
drive() {
  perl -e '
    use strict; use warnings; use IO::Socket::INET;
    my ($port, $sha, $from, $count, $limit, $window, $step) = @ARGV;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp") or die "connect: $!";
    binmode $s; my $buf = "";
    sub need { my $n = shift; while (length($buf) < $n) { sysread($s, $buf, 65536, length $buf) or die "closed" } }
    sub line { my $i; while (($i = index($buf, "\r\n")) < 0) { need(length($buf) + 1) } my $l = substr($buf, 0, $i); substr($buf, 0, $i + 2) = ""; $l }
    sub reply { my $l = line(); my $t = substr($l, 0, 1); my $v = substr($l, 1);
      die "error reply: $v\n" if $t eq "-"; return "" unless $t eq "\$" && $v >= 0;
      need($v + 2); my $r = substr($buf, 0, $v); substr($buf, 0, $v + 2) = ""; $r }
    sub bulk { my $a = shift; "\$" . length($a) . "\r\n$a\r\n" }
    my $t0 = 1_800_000_000_000;
    for (my $i = $from; $i < $from + $count; $i += 50) {
      my $out = ""; my $n = 0;
      for (my $j = $i; $j < $i + 50 && $j < $from + $count; $j++, $n++) {
        my $req = pack("d<", $t0 + $j * $step) . pack("CC", 3, 0) . pack("d<5", $limit, $window, $limit, 0, 1);
        $out .= "*5\r\n" . bulk("EVALSHA") . bulk($sha) . bulk("1") . bulk("k:{log}") . bulk($req);
      }
      syswrite($s, $out) == length($out) or die "short write";
      for (1 .. $n) { my $r = reply(); die "denied: the run must admit every request\n" unless unpack("d<", $r) == 2 }
    }' "$@"
}

echo "| limit | entries in the window | instructions per decision |"
echo "|---:|---:|---:|"
for limit in $LIMITS; do
  window=$(( limit * STEP * 8 / 10 ))
  [ "$limit" -ge 10000 ] && window=3600000 # as bench/guard.sh counts the log: nothing leaves the window
  counted_redis "$WORK" "$script"
  drive "$port" "$sha" 0 "$W" "$limit" "$window" "$STEP" || { kill "$pid"; exit 1; }
  under_process_command "$WORK" >/dev/null
  drive "$port" "$sha" "$W" "$N" "$limit" "$window" "$STEP" || { kill "$pid"; exit 1; }
  c=$(under_process_command "$WORK")
  entries=$(redis-cli -p "$port" zcard 'k:{log}')
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  echo "| $limit | $entries | $(( c / N )) |"
done
