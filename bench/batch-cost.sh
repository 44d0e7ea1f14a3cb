#!/usr/bin/env bash
# Redis instructions per decision (valgrind/callgrind: counted, not timed) when decisions share a
# round trip: B decisions per round trip, B = 1, 8, 16, 64, as
#   - B pipelined EVALSHA of `return 1` (the cost of a script call itself),
#   - B pipelined EVALSHA of the least a limiter with clock=redis runs (TIME + GET + SET PX),
#   - one EVALSHA of that least, batched: one TIME, then GET + SET PX for each of B keys (the floor
#     of any script that reads and writes a key per decision, one call per round trip),
#   - B pipelined EVALSHA of Sluice's one-request script (decide-one.lua: what 0.3.0 sends),
#   - one EVALSHA of Sluice's batch script (decide-batch.lua) deciding B requests (B = 1: the
#     one-request script, as the engine sends a call alone),
# each request a token-bucket rule (ALGORITHM=4: decide.lua's number of another) that always admits,
# on Redis's clock, B distinct keys.
# Per case: its own redis-server under callgrind (--hz 1: the timer's work is not the decisions');
# 128 decisions to warm up, then the server's instructions (the whole server: reading, parsing,
# running, replying, writing) over DECISIONS decisions, sent by bench/resp-batches.pl one round
# trip at a time, divided by DECISIONS.
# Usage: bench/batch-cost.sh [SCRIPT_DIR]   (SCRIPT_DIR: where the .lua resources are; default the
#        tree's; pass an older tree's to count it)   DECISIONS=1024 BATCHES="1 8 16 64"
#        CASES="return1 minimal minimal-batch one batch" (the columns counted; the others print -)
#        ALGORITHM=4 (Sluice's rule: 1 fixed-window, 2 sliding-window-counter, 4 token-bucket,
#        5 leaky-bucket, 6 gcra; limit, burst 10^9 per 10^6 ms, 10^6 ms of delay allowed)
#        REDIS_SERVER=redis-server (the binary counted)   PROFILE_DIR=dir: keep each case's callgrind
#        output there, as <case>-<B>.callgrind, for `callgrind_annotate --inclusive=yes`; function
#        names need a redis-server with symbols (Debian's is stripped: build the same version from
#        `apt-get source redis`, then REDIS_SERVER=.../src/redis-server)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/free-port.sh # free_port
ROOT=$(pwd)
LUA=${1:-filter/src/main/resources/dev/sluice/internal/redis}
DECISIONS=${DECISIONS:-1024}
BATCHES=${BATCHES:-1 8 16 64}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
# a resource as RedisEngine assembles it (bench/assemble.awk)
assemble() { awk -v dir="$LUA" -v main="$1" -f "$ROOT/bench/assemble.awk"; }
if [ -f "$LUA/decide-one.lua" ]; then
  assemble decide-one.lua >"$WORK/one.lua"; assemble decide-batch.lua >"$WORK/batch.lua"
  # an older tree's batch script reads each request from an argument of its own
  grep -q 'ARGV\[3' "$WORK/batch.lua" || export OLD_LAYOUT=1
else
  assemble decide.lua >"$WORK/one.lua"; : >"$WORK/batch.lua" # before the batch script
fi
printf 'return 1' >"$WORK/return1.lua"
printf "local t = redis.call('TIME') local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], 'T123456789:1764500000000', 'PX', 2000) return 1" >"$WORK/minimal.lua"
printf "local t = redis.call('TIME') for i = 1, #KEYS do local v = redis.call('GET', KEYS[i]) redis.call('SET', KEYS[i], 'T123456789:1764500000000', 'PX', 2000) end return 1" >"$WORK/minimal-batch.lua"

# RESP of one round trip: perl writes B commands (pipelined) or one batch command
# ARGV of a token-bucket request that always admits (decide.lua's format: '<d' -1, then '<BBddddd')
resp() { # kind script-file batch out
  perl -e '
    use Digest::SHA qw(sha1_hex);
    my ($kind, $file, $b) = @ARGV;
    open(my $f, "<:raw", $file) or die; local $/; my $sha = sha1_hex(<$f>);
    my $req = pack("d<", -1) . pack("CC", $ENV{ALGORITHM} || 4, 0) . pack("d<5", 1e9, 1e6, 1e9, 1e6, 1);
    sub cmd { my $s = "*" . scalar(@_) . "\r\n"; $s .= "\$" . length($_) . "\r\n$_\r\n" for @_; $s }
    my @keys = map { "k:{api:$_}" } 1 .. $b;
    if ($kind eq "keys") {
      print cmd("EVALSHA", $sha, $b, @keys); # the batched least: every key in one call
    } elsif ($kind eq "batch") {
      # decide-batch.lua: KEYS every request'"'"'s keys; ARGV[1] per request its key count and
      # argument count (a byte each) and its request'"'"'s length (two bytes), ARGV[2] every request
      # (before 0.3.0: ARGV[1] two bytes per request, then each request an argument of its own)
      if ($ENV{OLD_LAYOUT}) {
        print cmd("EVALSHA", $sha, $b, @keys, join("", map { pack("CC", 1, 1) } 1 .. $b), ($req) x $b);
      } else {
        print cmd("EVALSHA", $sha, $b, @keys, join("", map { pack("CCv", 1, 1, length($req)) } 1 .. $b), $req x $b);
      }
    } else {
      for my $k (@keys) { print $kind eq "sluice" ? cmd("EVALSHA", $sha, 1, $k, $req) : cmd("EVALSHA", $sha, 1, $k); }
    }' "$1" "$2" "$3" >"$4"
}

count() { # kind script-file batch -> instructions per decision
  local kind=$1 script=$2 b=$3 port=$(free_port)
  resp "$kind" "$script" "$b" "$WORK/rt"
  local replies=$b; [ "$kind" = batch ] || [ "$kind" = keys ] && replies=1
  # instrumented only while the counted decisions run: the one dump, at exit, holds them alone
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.$port" "${REDIS_SERVER:-redis-server}" \
    --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --hz 1 >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  redis-cli -p "$port" -x script load <"$script" >/dev/null
  # an error reply (a request the script cannot read) ends the count: its figure would mean nothing
  perl "$ROOT/bench/resp-batches.pl" "$port" "$WORK/rt" "$replies" $(( (128 + b - 1) / b )) || { kill "$pid"; exit 1; }
  callgrind_control -i on "$pid" >/dev/null 2>&1
  perl "$ROOT/bench/resp-batches.pl" "$port" "$WORK/rt" "$replies" $(( DECISIONS / b )) || { kill "$pid"; exit 1; }
  callgrind_control -i off "$pid" >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  local dump="$WORK/cg.$port"
  local total; total=$(grep -E '^(summary|totals):' "$dump" | tail -1 | awk '{print $2}')
  if [ -n "${PROFILE_DIR:-}" ]; then mkdir -p "$PROFILE_DIR"; cp "$dump" "$PROFILE_DIR/$(basename "$script" .lua)-$b.callgrind"; fi
  rm -f "$dump"
  echo $(( total / (DECISIONS / b * b) ))
}

echo "| decisions per round trip | \`return 1\`, pipelined | TIME + GET + SET PX, pipelined | TIME once, GET + SET PX per key, one call | Sluice's one-request script, pipelined | Sluice's batch script, one call |"
echo "|---:|---:|---:|---:|---:|---:|"
CASES=" ${CASES:-return1 minimal minimal-batch one batch} "
counted() { [[ $CASES == *" $1 "* ]]; } # counted CASE: whether CASE's column is counted
for b in $BATCHES; do
  r1=- mi=- mb=- one=- ba=-
  if counted return1; then r1=$(count plain "$WORK/return1.lua" "$b"); fi
  if counted minimal; then mi=$(count plain "$WORK/minimal.lua" "$b"); fi
  if counted minimal-batch; then mb=$(count keys "$WORK/minimal-batch.lua" "$b"); fi
  if counted one || { counted batch && [ "$b" = 1 ]; }; then one=$(count sluice "$WORK/one.lua" "$b"); fi
  if counted batch && [ -s "$WORK/batch.lua" ]; then
    if [ "$b" = 1 ]; then ba=$one; else ba=$(count batch "$WORK/batch.lua" "$b"); fi
  fi
  counted one || one=-
  echo "| $b | $r1 | $mi | $mb | $one | $ba |"
done
