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
# (at once when there are no COMMANDs); 0+L runs the command lane first, alone. The command lane's tiers start envtest and etcd
# processes and compile most of the tree; when they are done, their share of the machine
# and of the inotify instances can carry one more bench.
set -euo pipefail
cd "$(dirname "$0")/.."

(($# >= 3)) || { echo "usage: $0 SHARDS 'GO TEST FLAGS' SHARDED_PACKAGE [OTHER_PACKAGES...] [-- COMMAND...]" >&2; exit 2; }
shards=${1%%+*} late=0 flags=$2 sharded=$3
[[ $1 != *+* ]] || late=${1#*+}
shift 3
[[ $shards =~ ^[0-9]+$ && $late =~ ^[0-9]+$ ]] || { echo "$0: SHARDS must be N or N+L" >&2; exit 2; }
((shards + late >= 1)) || { echo "$0: SHARDS must be at least 1 (N+L: N + L)" >&2; exit 2; }

work=$(mktemp -d)
sampler=
trap '[[ -z $sampler ]] || kill "$sampler" 2>/dev/null; rm -rf "$work"' EXIT
# Interrupted: the workers' test processes stop their benches (they handle SIGTERM)
# before the scratch directory goes.
trap 'trap - INT TERM; kill -TERM 0 2>/dev/null; wait; exit 130' INT TERM
# Every test process pushes the bench's images to a registry of its own: their
# compressed layers are made once and shared (test/bench/images.LayerCacheEnv).
export ETCD_OPERATOR_BENCH_LAYER_CACHE=$work/layers
# ... and the binaries in those images (the operator, pause) are built once, by the first
# test process, for the whole run (test/bench/images.BinaryCacheEnv).
export ETCD_OPERATOR_BENCH_BINARY_CACHE=$work/bin

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

# Admission. A bench starting (control plane, nodes, images, an etcd cluster) takes a core
# for a minute; on a machine the running benches and the command lane already keep busy,
# it starved them: on 2 cores, kubelets missed their node leases and etcd its heartbeats,
# and tests that pass alone failed (CI of 2026-12-06). So a worker takes its next entry
# only when the CPUs were at least ADMIT_IDLE_PCT% idle over the last 10 s (sampled
# every 2 s from /proc/stat), or when no other worker is running an entry, or after
# waiting ADMIT_MAX_WAIT seconds (a busy machine slows the run down, never stops it). On
# a machine with room to spare nobody waits.
#
# A test hack/e2e-alone.txt names runs with no other entry beside it: it is admitted only
# when nothing else runs, nothing else is admitted while it runs or waits, and it never
# stops waiting. Those tests drive write loads that must lose no write, and two of them
# at once on 2 cores stalled etcd writes past the clients' 15 s retries (CI of
# 2026-12-06: each failed beside the other, each passed alone).
admit_idle=${ADMIT_IDLE_PCT:-30} admit_max_wait=${ADMIT_MAX_WAIT:-120}
mkdir -p "$work/running" "$work/waiting-alone"
alone_list=hack/e2e-alone.txt
[[ -f $alone_list ]] || alone_list=/dev/null
sed -e 's/#.*//' "$alone_list" | awk 'NF {print $1}' >"$work/alone"
cpusampler() { # writes the CPUs' idle percentage over the last 10 s to $work/cpuidle
  local -a busy=() total=()
  local u n s i w q sq st b
  while :; do
    read -r _ u n s i w q sq st _ </proc/stat
    b=$((u + n + s + q + sq + st))
    busy+=("$b") total+=($((b + i + w)))
    if ((${#busy[@]} > 6)); then busy=("${busy[@]:1}") total=("${total[@]:1}"); fi
    if ((total[-1] > total[0])); then
      echo $((100 - 100 * (busy[-1] - busy[0]) / (total[-1] - total[0]))) >"$work/cpuidle.tmp"
      mv "$work/cpuidle.tmp" "$work/cpuidle"
    fi
    sleep 2
  done
}
admit() { # admit SLOT NAME: waits until this worker may start entry NAME, then marks it running
  local slot=$1 name=$2 waited=0 verdict alone=
  ! grep -qxF -- "$name" "$work/alone" || alone=1
  # Deciding and marking under one lock: two workers asking at once (the run's start) must
  # not both see the other idle.
  while :; do
    verdict=$({
      flock 8
      others=$(find "$work/running" -type f ! -name "$slot" | wc -l)
      idle=$(cat "$work/cpuidle" 2>/dev/null || echo 0) # no sample yet: the run is starting
      if [[ -n $alone ]]; then
        if ((others == 0)); then
          echo alone >"$work/running/$slot"
          rm -f "$work/waiting-alone/$slot"
          echo "admitted alone"
        else
          touch "$work/waiting-alone/$slot"
        fi
      elif [[ -n $(ls -A "$work/waiting-alone") ]] || grep -qsx alone "$work/running"/*; then
        : # an entry that needs the machine to itself runs or is waiting for it
      elif ((others == 0 || idle >= admit_idle || waited >= admit_max_wait)); then
        : >"$work/running/$slot"
        echo "admitted: CPUs ${idle}% idle over 10 s, $others other entries running"
      fi
    } 8>"$work/admit.lock")
    [[ -z $verdict ]] || break
    sleep 2
    waited=$((waited + 2))
  done
  ((waited == 0)) || echo "=== admission: waited ${waited}s, $verdict"
}
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
  local prefix=$1 slot=${1//\//_}
  {
    local rc=0 name start status
    while name=$(take) && [[ -n $name ]]; do
      admit "$slot" "$name"
      start=$SECONDS
      # Each entry's output is also kept apart, for the failure summary at the end.
      if [[ $name == @other ]]; then
        # shellcheck disable=SC2086 # flags are words
        if go test $flags -p 1 "${others[@]}" 2>&1 | tee "$work/out/$name"; then status=ok; else status=FAIL rc=1; fi
      # go test runs a package's tests in its directory; so does this.
      elif (cd "$pkgdir" && "$work/pkg.test" "${binflags[@]}" -test.run "^${name}\$") 2>&1 | tee "$work/out/$name"; then
        status=ok
      else
        status=FAIL rc=1
      fi
      [[ $status == ok ]] || echo "$name" >>"$work/failed"
      rm -f "$work/running/$slot"
      echo "=== shard result: $name $status $((SECONDS - start))"
    done
    exit $rc
  } 2>&1 | sed -u "s|^|[$prefix] |"
  return "${PIPESTATUS[0]}"
}

commandlane() { # runs the COMMANDs in order; fails if any failed
  {
    local rc=0 c start status n=0
    for c in "${commands[@]}"; do
      start=$SECONDS n=$((n + 1))
      if bash -c "$c" 2>&1 | tee "$work/out/command-$n"; then status=ok; else
        status=FAIL rc=1
        echo "command-$n" >>"$work/failed"
      fi
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

mkdir -p "$work/out"
cpusampler &
sampler=$!
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

# A CI log is often read from its tail: the failures come last, a few lines each (a
# test's own output lines, not its bench's logs: the last ones, since t.Log and t.Error
# lines look alike and a test's failures mostly come at its end, after its logging), and
# the whole output of each failed entry is kept where the summary says.
if [[ -s $work/failed ]]; then
  kept=$(mktemp -d "${TMPDIR:-/tmp}/go-test-shards-failed-XXXX")
  echo "=== failures ($(wc -l <"$work/failed")); whole outputs in $kept"
  while read -r name; do
    cp "$work/out/$name" "$kept/$name.log"
    echo "--- $name"
    lines=$(grep -E -e '--- FAIL|^\s+[A-Za-z0-9_]+\.go:[0-9]+: |^panic: ' "$work/out/$name" || true)
    [[ -n $lines ]] || lines=$(tail -n 4 "$work/out/$name") # not a Go test's output
    tail -n 8 <<<"$lines" | cut -c1-240
  done <"$work/failed"
fi
exit $rc
