# Sourced by bench/'s scripts that count a script's Redis instructions one call at a time (callgrind,
# not timed): counted_redis DIR SCRIPT starts a redis-server under callgrind on a free port (--hz 1:
# the timer's work is not the calls'; no persistence), its output files in DIR, and loads SCRIPT:
# sets port, pid and sha. under_process_command DIR dumps the counts since the last dump and prints
# the instructions under processCommand (the script, the commands it calls, its reply) since then.
# Needs bench/free-port.sh sourced first; installs valgrind from Debian when it is missing.
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
counted_redis() {
  port=$(free_port)
  valgrind --tool=callgrind --callgrind-out-file="$1/out.%p" redis-server --port "$port" --bind 127.0.0.1 \
    --save '' --appendonly no --hz 1 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  sha=$(redis-cli -p "$port" script load "$2")
}
under_process_command() {
  callgrind_control -d "$pid" >/dev/null 2>&1; sleep 0.5
  callgrind_annotate --inclusive=yes --threshold=100 "$(ls -t "$1"/out."$pid".* | head -1)" 2>/dev/null \
    | grep ':processCommand ' | head -1 | awk '{gsub(",", "", $1); print $1}'
}
