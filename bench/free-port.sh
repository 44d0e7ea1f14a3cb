# Sourced by bench/'s scripts: free_port prints a loopback port nothing listens on, outside the
# kernel's ephemeral range (ip_local_port_range): a port there can be the local end of an outgoing
# connection (wrk's, a Redis client's), which a connect does not find but a bind fails on.
read -r EPHEMERAL_LO EPHEMERAL_HI </proc/sys/net/ipv4/ip_local_port_range
free_port() {
  local p
  while :; do
    if ((EPHEMERAL_LO > 12000)); then p=$(( 10000 + RANDOM % (EPHEMERAL_LO - 10000) )); else p=$(( EPHEMERAL_HI + 1 + RANDOM % (65535 - EPHEMERAL_HI) )); fi
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
