#!/usr/bin/env bash
# Runs one package's top-level tests, the other packages, and any commands given after
# `--`, in SHARDS worker processes at the same time. The end-to-end tests spend most of their time waiting on pods and
# elections, each on a bench of its own, so several workers share two cores well.
#   hack/go-test-shards.sh SHARDS 'GO TEST FLAGS' SHARDED_PACKAGE [OTHER_PACKAGES...] [-- COMMAND...]
# The package's test binary is built once; every top-level test (as `go test -list` names
# them) then runs in a process of its own, taken from one queue by whichever worker is
# free, so the workers finish within about one test of each other (a fixed split by name
# left one shard idle for 7 minutes while the other ran). The other packages are one
# entry of that queue, run first (`go test -p 1`), so no more than SHARDS benches ever
# run at once: each holds about 30 inotify instances (kubelets, containerd, kube-proxy)
# of the 128 a user gets by default. After them the queue holds the tests
# hack/e2e-durations.txt lists as slowest first (tests it does not know first of all), so
# a long test never starts last. Each entry's result and duration are printed as
# `=== shard result: NAME ok|FAIL SECONDS`; the COMMANDs (shell command lines, e.g. the
# unit and integration tiers, which start no bench) run one after another in a lane of
# their own beside the SHARDS workers, so `make test` does not wait for them before the
# first bench starts, and no more than SHARDS benches run at once; output lines are prefixed with their worker;
# the exit status is non-zero if any test or the other packages failed.
# SHARDS may be written N+L: L more workers join the N once the command lane has ended
# (at once when there are no COMMANDs). The command lane's tiers start envtest and etcd
# processes and compile most of the tree; when they are done, their share of the machine
# and of the inotify instances can carry one more bench.
set -euo pipefail
cd "$(dirname "$0")/.."

(($# >= 3)) || { echo "usage: $0 SHARDS 'GO TEST FLAGS' SHARDED_PACKAGE [OTHER_PACKAGES...] [-- COMMAND...]" >&2; exit 2; }
shards=${1%%+*} late=0 flags=$2 sharded=$3
[[ $1 != *+* ]] || late=${1#*+}
shift 3
[[ $shards =~ ^[0-9]+$ && $late =~ ^[0-9]+$ ]] || { echo "$0: SHARDS must be N or N+L" >&2; exit 2; }
((shards >= 1)) || { echo "$0: SHARDS must be at least 1" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Interrupted: the workers' test processes stop their benches (they handle SIGTERM)
# before the scratch directory goes.
trap 'trap - INT TERM; kill -TERM 0 2>/dev/null; wait; exit 130' INT TERM
# Every test process pushes the bench's images to a registry of its own: their
# compressed layers are made once and shared (test/bench/images.LayerCacheEnv).
export ETCD_OPERATOR_BENCH_LAYER_CACHE=$work/layers

# `go test` flags: build flags (-race, -cover, -tags=..., -gcflags=..., -ldflags=...)
# build the test binary, the others become its own (-timeout 45m -> -test.timeout 45m);
# each test's process gets the whole timeout.
buildflags=() binflags=()
for f in $flags; do
  case $f in
    -race | -cover | -msan | -asan | -trimpath | -tags=* | -gcflags=* | -ldflags=* | -mod=* | -covermode=*) buildflags+=("$f") ;;
    -test.* | [!-]*) binflags+=("$f") ;;
    *) binflags+=("-test.${f#-}") ;;
  esac
done

# Build the test binary once (a package that does not compile fails here); it lists its
# own tests, whatever their parameter is called.
go test -c "${buildflags[@]}" -o "$work/pkg.test" "$sharded"
mapfile -t tests < <("$work/pkg.test" -test.list '^Test' | grep -E '^Test[A-Za-z0-9_]*$' | sort -u)
((${#tests[@]})) || { echo "$0: no tests found in $sharded" >&2; exit 2; }

# Slowest first: known durations (seconds, name per line) sort the queue; unknown tests
# count as slowest.
durations=hack/e2e-durations.txt
[[ -f $durations ]] || durations=/dev/null
for t in "${tests[@]}"; do
  d=$(awk -v t="$t" '$2 == t {s = $1} END {print s}' "$durations")
  echo "${d:-999999} $t"
done | sort -k1,1nr -k2 | awk '{print $2}' >"$work/queue.tests"
others=() commands=()
while (($#)) && [[ $1 != -- ]]; do others+=("$1"); shift; done
(($# == 0)) || { shift; commands=("$@"); }
{
  ((${#others[@]} == 0)) || echo "@other"
  cat "$work/queue.tests"
} >"$work/queue"
echo 0 >"$work/next"

pkgdir=$(go list -f '{{.Dir}}' "$sharded")
take() { # prints the next queued test, or nothing when the queue is empty
  (
    flock 9
    n=$(<"$work/next")
    name=$(sed -n "$((n + 1))p" "$work/queue")
    [[ -z $name ]] || echo $((n + 1)) >"$work/next"
    echo "$name"
  ) 9>"$work/lock"
}
worker() { # worker PREFIX: runs queued tests until none is left; fails if any failed
  local prefix=$1
  {
    local rc=0 name start status
    while name=$(take) && [[ -n $name ]]; do
      start=$SECONDS
      if [[ $name == @other ]]; then
        # shellcheck disable=SC2086 # flags are words
        if go test $flags -p 1 "${others[@]}"; then status=ok; else status=FAIL rc=1; fi
      # go test runs a package's tests in its directory; so does this.
      elif (cd "$pkgdir" && "$work/pkg.test" "${binflags[@]}" -test.run "^${name}\$"); then
        status=ok
      else
        status=FAIL rc=1
      fi
      echo "=== shard result: $name $status $((SECONDS - start))"
    done
    exit $rc
  } 2>&1 | sed -u "s|^|[$prefix] |"
  return "${PIPESTATUS[0]}"
}

commandlane() { # runs the COMMANDs in order; fails if any failed
  {
    local rc=0 c start status
    for c in "${commands[@]}"; do
      start=$SECONDS
      if bash -c "$c"; then status=ok; else status=FAIL rc=1; fi
      echo "=== shard result: $c $status $((SECONDS - start))"
    done
    exit $rc
  } 2>&1 | sed -u "s|^|[commands] |"
  return "${PIPESTATUS[0]}"
}

latelane() { # the command lane (if any), then L more workers; fails if any part failed
  local rc=0 p lp=()
  if ((${#commands[@]})); then commandlane || rc=1; fi
  for ((i = shards + 1; i <= shards + late; i++)); do
    worker "${sharded#./}#$i" &
    lp+=($!)
  done
  for p in "${lp[@]}"; do wait "$p" || rc=1; done
  return $rc
}

pids=()
if ((${#commands[@]} || late)); then
  latelane &
  pids+=($!)
fi
for ((i = 1; i <= shards; i++)); do
  worker "${sharded#./}#$i" &
  pids+=($!)
done

rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
