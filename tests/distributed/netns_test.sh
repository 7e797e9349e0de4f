#!/usr/bin/env bash
# Multi-host test: two network namespaces joined by a veth pair stand in for two hosts, with
# one pf-server task in each and tc netem adding 5 ms to every packet that leaves either end.
# pf_netns_client (in namespace A) runs steps that move a tensor from worker:0 (A) to
# worker:1 (B), checks the result and, with netem, that steps pay for the delayed link.
#
#   netns_test.sh BUILD_DIR [PF_SERVER PF_NETNS_CLIENT]   (binaries default to BUILD_DIR's)
#
# Needs root, ip and tc. Where namespaces or veths cannot be made (no root, a container
# without CAP_SYS_ADMIN/NET_ADMIN) it prints "SKIPPED: <reason>" and exits 4, ctest's skip
# code for this test. PF_NETNS_FORCE_SKIP=1 takes that path on purpose (to test it).
# Without the netem qdisc (kernels built without sch_netem) it runs undelayed and says so.
set -euo pipefail

build=${1:?usage: netns_test.sh BUILD_DIR [PF_SERVER PF_NETNS_CLIENT]}
server=${2:-$build/tools/pf-server}
client=${3:-$build/tests/pf_netns_client}
skip() {
  echo "SKIPPED: $*"
  exit 4
}

[[ -z ${PF_NETNS_FORCE_SKIP:-} ]] || skip "PF_NETNS_FORCE_SKIP is set"
[[ $(id -u) == 0 ]] || skip "creating network namespaces needs root"
command -v ip > /dev/null || skip "no 'ip' command (Debian: apt-get install iproute2)"
command -v tc > /dev/null || skip "no 'tc' command (Debian: apt-get install iproute2)"
for f in "$server" "$client"; do
  [[ -x $f ]] || { echo "FAIL: $f is not built"; exit 1; }
done

# Names carry the PID so concurrent runs never share a namespace. The namespaces hold only lo
# and the veth, so the subnet cannot clash with the host's routes.
ns_a=pfnetA$$ ns_b=pfnetB$$ veth_a=pfvA$$ veth_b=pfvB$$
ip_a=10.213.77.1 ip_b=10.213.77.2 port=2222
work=$(mktemp -d)
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  # Anything else still in our namespaces was started by this script; a namespace with a
  # process left in it outlives `ip netns del`.
  for ns in "$ns_a" "$ns_b"; do
    ip netns pids "$ns" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
  done
  wait 2> /dev/null || true
  ip netns del "$ns_a" 2> /dev/null || true  # deleting a namespace deletes its veth end
  ip netns del "$ns_b" 2> /dev/null || true
  if [[ $rc != 0 && $rc != 4 ]]; then
    for log in "$work"/*.log; do [[ -f $log ]] && { echo "--- $log"; cat "$log"; }; done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$ns_a" 2> "$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$ns_b" 2> "$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" 2> "$work/err" ||
  skip "cannot create a veth pair: $(cat "$work/err")"
ip -n "$ns_a" addr add "$ip_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$ip_b/24" dev "$veth_b"
for end in "$ns_a:$veth_a" "$ns_b:$veth_b"; do
  ip -n "${end%%:*}" link set lo up
  ip -n "${end%%:*}" link set "${end##*:}" up
done

# netem delays only what leaves the device it sits on, so with both ends delayed a request and
# its reply each wait 5 ms: a round trip takes >= 5 ms per delayed end.
delayed_ends=0
for end in "$ns_a:$veth_a" "$ns_b:$veth_b"; do
  if ip netns exec "${end%%:*}" tc qdisc add dev "${end##*:}" root netem delay 5ms \
    2> "$work/err"; then
    delayed_ends=$((delayed_ends + 1))
  else
    echo "netem unavailable on ${end##*:} ($(cat "$work/err")): that end is not delayed"
  fi
done

cluster="worker=$ip_a:$port,$ip_b:$port"
# The timeouts are a backstop for a run killed before its trap can stop the servers.
timeout 170 ip netns exec "$ns_a" "$server" --cluster "$cluster" --job worker --task 0 \
  > "$work/worker0.log" 2>&1 &
pids+=($!)
timeout 170 ip netns exec "$ns_b" "$server" --cluster "$cluster" --job worker --task 1 \
  > "$work/worker1.log" 2>&1 &
pids+=($!)
for i in $(seq 300); do
  grep -q '^ready' "$work/worker0.log" && grep -q '^ready' "$work/worker1.log" && break
  for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null || { echo "FAIL: a server exited"; exit 1; }; done
  ((i < 300)) || { echo "FAIL: servers not ready after 30 s"; exit 1; }
  sleep 0.1
done

# In the background: bash runs a signal's trap only once a foreground command returns, but
# interrupts `wait` at once.
timeout 60 ip netns exec "$ns_a" "$client" "grpc://$ip_a:$port" > "$work/client.log" 2>&1 &
pids+=($!)
wait $! || { echo "FAIL: pf_netns_client failed"; exit 1; }
cat "$work/client.log"
median=$(awk '$1 == "median_step_ms" {print $2}' "$work/client.log")
# A step cannot finish in less than one round trip over the link: worker:1 (B) computes only
# after ns A tells it to, and its result must come back to A.
bound=$((5 * delayed_ends))
if ((delayed_ends == 0)); then
  echo "PASSED (no netem: median step ${median} ms over an undelayed veth, bound not checked)"
elif awk -v m="$median" -v b="$bound" 'BEGIN { exit !(m >= b) }'; then
  echo "PASSED (median step ${median} ms >= ${bound} ms, one round trip with netem on $delayed_ends end(s))"
else
  echo "FAIL: median step ${median} ms < ${bound} ms: a step did not cross the delayed link"
  exit 1
fi
