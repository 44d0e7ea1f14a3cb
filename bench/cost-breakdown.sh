#!/usr/bin/env bash
# Where a batched decision's Redis instructions go, found by taking parts away (issue 17, item 3):
# bench/batch-cost.sh counts the batch script (16 token-bucket decisions per call, as there) as
# shipped, then copies of the Lua resources with one more part of the decision replaced by
# constants each time, and the floor (TIME once, GET + SET PX per key, one call). Each step's
# difference is what that part costs. The copies are not Sluice (their decisions are wrong); they
# exist only to be counted. Counted apart: the reply as it was before a take's was the state just
# written (the figures worked out and packed by the script, struct.pack of 8), what that change saves.
# Usage: bench/cost-breakdown.sh     DECISIONS=2048 (per count)   REDIS_SERVER=redis-server
# Takes about 15 s (valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
LUA=filter/src/main/resources/dev/sluice/internal/redis
export DECISIONS=${DECISIONS:-2048}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

# copy NAME FROM: $WORK/NAME, a copy of FROM's resources
copy() { rm -rf "${WORK:?}/$1"; cp -r "$2" "$WORK/$1"; }
# variant NAME FROM FILE: a copy of FROM's resources with FILE's text between the two lines of stdin
# replaced: line 1 the exact text taken away (one line), line 2 what stands in its place ('\n' for
# a line break). A text not found stops the script: the resources changed, this must follow them.
variant() {
  copy "$1" "$2"
  perl -e '
    my ($file) = @ARGV; chomp(my $old = <STDIN>); chomp(my $new = <STDIN>); $new =~ s/\\n/\n/g;
    open(my $f, "<", $file) or die "$file: $!"; local $/; my $text = <$f>; close $f;
    my $at = index($text, $old); die "cost-breakdown: not in $file: $old\n" if $at < 0;
    substr($text, $at, length $old) = $new;
    open($f, ">", $file) or die; print $f $text; close $f;' "$WORK/$1/$3"
}
# cut_decision NAME FROM STAND-IN: a copy of FROM's resources whose token-bucket decision (from its
# first line to its give-back section) is STAND-IN, a block that sets what the decision sets
cut_decision() {
  copy "$1" "$2"
  STAND_IN=$3 perl -0pi -e '
    s/^local cap = burst \* window\n.*?(?=^--\[\[ #give-back \]\])/$ENV{STAND_IN}\n/sm
      or die "cost-breakdown: token-bucket.lua has no decision block to cut\n"' "$WORK/$1/token-bucket.lua"
}
count() { # DIR [CASES] -> "floor batch" figures of the last line
  CASES=${2:-batch} BATCHES=16 bench/batch-cost.sh "$1" | tail -1 | awk -F'|' '{gsub(/ /, ""); print $5, $7}'
}

# the reply of figures, as before a take was answered with its state (token-bucket.lua computes them all)
variant reply-figures "$LUA" token-bucket.lua <<'EOF'
  state_answers = skew == 0 -- the state holds the time decided at: it can be the reply, the figures the client's
  state_answers = false
EOF
# the state read and written, no arithmetic: every figure a constant; the reply the state, as shipped
cut_decision no-arithmetic "$LUA" "local stored = pcall('GET', key)
local tag, units, stamp, scale, refunded = 4, burst * window, now, window, 0
if stored and #stored == 28 then
  tag, units, stamp, scale, refunded = decode('<Bi7I6I7I7', stored)
end
admits, remaining_now, reset_now, next_now, reset_after, delay = true, 1, 1, 1, 1, 0
state, ttl = encode('<Bi7I6I7I7', 4, units, now, window, refunded), 2000
state_answers = not several"
# and the state read but neither decoded nor encoded: what was read is written back, and is the reply
cut_decision no-state "$LUA" "local stored = pcall('GET', key)
admits, remaining_now, reset_now, next_now, reset_after, delay = true, 1, 1, 1, 1, 0
state, ttl = stored or 'x', 2000
state_answers = not several"
variant no-request "$WORK/no-state" decide.lua <<'EOF'
local now, algorithm, mode, limit, window, burst, max_delay, cost, pos = decode(TIME_AND_RULE, request, at)
local now, algorithm, mode, limit, window, burst, max_delay, cost, pos = -1, 4, 0, 1e9, 1e6, 1e9, 0, 1, 43
EOF

# and decide.lua's own flow gone (its branches, locals, loops): per request GET and PSETEX, in the
# batch script's loop (a pcall per request, the layout, one TIME)
copy no-flow "$WORK/no-request"
printf "local key = KEYS[base + 1]\nlocal stored = pcall('GET', key)\ncall('PSETEX', key, '2000', stored or 'x')\nreturn 'x'\n" \
  >"$WORK/no-flow/decide.lua"

read -r floor shipped < <(count "$LUA" "minimal-batch batch")
row() { # LABEL FIGURE BEFORE
  printf '| %s | %s | %s | %.2fx |\n' "$1" "$2" "$([ -n "$3" ] && echo $(( $2 - $3 )) || echo)" "$(awk -v a="$2" -v b="$floor" 'BEGIN { print a / b }')"
}
echo "Redis instructions per decision, 16 token-bucket decisions per call ($(date -u '+%F %H:%M UTC'), $(git rev-parse --short HEAD), ${REDIS_SERVER:-redis-server} $("${REDIS_SERVER:-redis-server}" --version | grep -o 'v=[^ ]*'))"
echo
echo "| the batch script | instructions per decision | difference | / the floor |"
echo "|---|---:|---:|---:|"
row "as shipped" "$shipped" ""
last=$shipped
for step in "no-arithmetic:less the decision's arithmetic (its figures constants)" \
            "no-state:less the state's decode and encode (struct.unpack, struct.pack)" \
            "no-request:less the request's decoding (struct.unpack of 9 values)" \
            "no-flow:less decide.lua's own flow: GET and PSETEX per request, in the batch's loop"; do
  read -r _ figure < <(count "$WORK/${step%%:*}")
  row "${step#*:}" "$figure" "$last"
  last=$figure
done
row "the floor: TIME once, GET + SET PX per key" "$floor" ""
echo
read -r _ figures < <(count "$WORK/reply-figures")
echo "| the reply | instructions per decision | difference | / the floor |"
echo "|---|---:|---:|---:|"
row "a take's figures, worked out and packed by the script (before)" "$figures" ""
row "the state just written (as shipped)" "$shipped" "$figures"
