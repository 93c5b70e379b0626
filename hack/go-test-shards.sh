#!/usr/bin/env bash
# Runs `go test` with one package's top-level tests split into shards that run at the
# same time, each in its own test process, beside the other packages. The end-to-end
# tests spend most of their time waiting on pods and elections, each on a bench of its
# own, so two shards take about half the wall time on two cores.
#   hack/go-test-shards.sh SHARDS 'GO TEST FLAGS' SHARDED_PACKAGE [OTHER_PACKAGES...]
# Every top-level test of SHARDED_PACKAGE (as `go test -list` names them) runs in
# exactly one shard; output lines are prefixed with their shard; the exit status is
# non-zero if any shard or the other packages failed.
set -euo pipefail
cd "$(dirname "$0")/.."

(($# >= 3)) || { echo "usage: $0 SHARDS 'GO TEST FLAGS' SHARDED_PACKAGE [OTHER_PACKAGES...]" >&2; exit 2; }
shards=$1 flags=$2 sharded=$3
shift 3
((shards >= 1)) || { echo "$0: SHARDS must be at least 1" >&2; exit 2; }

# The test binary lists its own tests (whatever their parameter is called); a package
# that does not compile fails here.
listed=$(go test -list '^Test' "$sharded")
mapfile -t tests < <(grep -E '^Test[A-Za-z0-9_]*$' <<<"$listed" | sort -u)
((${#tests[@]})) || { echo "$0: no tests found in $sharded" >&2; exit 2; }

# Each job's output is prefixed so interleaved lines stay attributable.
pids=()
run() { # run PREFIX ARGS...: go test ARGS with its output prefixed, in the background
  local prefix=$1
  shift
  # shellcheck disable=SC2086 # flags are words
  (set -o pipefail; go test $flags "$@" 2>&1 | sed -u "s|^|[$prefix] |") &
  pids+=($!)
}
# The other packages run one at a time (-p 1): each end-to-end package brings up benches
# of its own, and every bench holds about 30 inotify instances (kubelets, containerd,
# kube-proxy), of the 128 a user gets by default; two shards plus two more benches would
# leave none to spare.
if (($#)); then run other -p 1 "$@"; fi
for ((i = 0; i < shards; i++)); do
  names=()
  for ((j = i; j < ${#tests[@]}; j += shards)); do names+=("${tests[j]}"); done
  ((${#names[@]})) || continue
  run "${sharded#./}#$((i + 1))" -run "^($(IFS='|'; echo "${names[*]}"))\$" "$sharded"
done

rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
