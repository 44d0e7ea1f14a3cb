#!/usr/bin/env bash
# Issue 17's cost guard: fails when a decision costs more Redis round trips (at 64 threads), Redis
# commands or Redis instructions (valgrind's callgrind) than bench/cost-baseline.properties allows.
# Counted, not timed: the machine's speed and load do not change the verdict. Runs CostGuardTest
# through the reactor (builds filter/ and bench/, runs no other test); starts its own redis-server
# processes on free ports. About a minute and a half in all on 2 shared cores, of which the check
# ~55 s (measured 2026-12-02 with five sessions on the machine). .ci/run runs it before mvn verify.
# Usage: bench/guard.sh   (needs redis-server, valgrind: installed from Debian if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v valgrind >/dev/null || need+=(valgrind)
if ((${#need[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
exec mvn -B -ntp ${MVN_OFFLINE:+-o} -Pbench -pl bench -am test -Dtest=CostGuardTest -Dsurefire.failIfNoSpecifiedTests=false
