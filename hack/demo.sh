#!/usr/bin/env bash
# make demo: the local bench, the CRDs, the operator, and a 3-member EtcdCluster from
# config/samples; then a put/get through the cluster's client Service. Stays up until
# Ctrl-C (or `make demo-down` from another terminal), then stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-$PWD/.bench}
CACHE=$(hack/tools.sh path)
KUBECTL="$CACHE/k8s-v1.37.2/kubectl --kubeconfig $DIR/kubeconfig"
ETCDCTL=$CACHE/etcd-v3.7.3/etcdctl
NAME=example-etcd-cluster

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if [[ -f $DIR/pid ]] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
  echo "a bench is already running from $DIR (pid $(cat "$DIR/pid")); run 'make demo-down' first" >&2
  exit 1
fi
rm -rf "$DIR"; mkdir -p "$DIR"

pids=()
cleanup() {
  say "stopping"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  bin/bench down --dir "$DIR" >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting the local bench (control plane + 3 emulated nodes) in $DIR"
bin/bench up --dir "$DIR" >"$DIR/bench.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 240); do
  [[ -s $DIR/pid ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$DIR/bench.out"; echo "bench failed to start" >&2; exit 1; }
  sleep 0.5
done
[[ -s $DIR/pid ]] || { echo "bench did not become ready" >&2; exit 1; }
$KUBECTL get nodes -L topology.kubernetes.io/zone

say "installing the CRDs (v1beta2 only: the bench cannot route to the conversion webhook)"
"$CACHE/bin/kustomize-v5.8.2" build hack/demo-crds | $KUBECTL apply --server-side -f -
$KUBECTL wait --for=condition=Established --timeout=60s crd/etcdclusters.etcd.database.coreos.com

say "starting the operator (inside the bench network, like an in-cluster pod)"
bin/bench exec --dir "$DIR" -- "$PWD/bin/etcd-operator" \
  --metrics-bind-address=0 --health-probe-bind-address=0 --webhook-port=0 >"$DIR/operator.log" 2>&1 &
pids+=($!)

say "applying config/samples/etcd_v1beta2_etcdcluster.yaml"
$KUBECTL apply -f config/samples/etcd_v1beta2_etcdcluster.yaml
if ! $KUBECTL wait --for=condition=Available --timeout=180s etcdcluster/$NAME; then
  $KUBECTL get etcd,pods -o wide; tail -50 "$DIR/operator.log"; exit 1
fi
$KUBECTL get etcd,pods -o wide

say "a put and a get through the client Service ($NAME-client.default.svc:2379)"
EP=http://$NAME-client.default.svc:2379
# The client Service's DNS record follows pod readiness; etcdctl's resolver re-reads the
# bench hosts file every few seconds, so the first attempts may not resolve yet.
for i in $(seq 1 30); do
  bin/bench exec --dir "$DIR" -- "$ETCDCTL" --endpoints "$EP" --command-timeout 3s put demo-key "hello from the etcd operator" 2>/dev/null && break
  [[ $i == 30 ]] && { echo "put through $EP failed" >&2; exit 1; }
  sleep 1
done
bin/bench exec --dir "$DIR" -- "$ETCDCTL" --endpoints "$EP" get demo-key
bin/bench exec --dir "$DIR" -- "$ETCDCTL" --endpoints "$EP" member list -w table

cat <<MSG

The demo is running. Try, from another terminal:
  $KUBECTL get etcd,pods -o wide
  $KUBECTL patch etcd $NAME --type merge -p '{"spec":{"size":5}}'
  bin/bench exec --dir $DIR -- $ETCDCTL --endpoints $EP endpoint status -w table
Operator log: $DIR/operator.log. Ctrl-C here or 'make demo-down' stops everything.
MSG
wait "${pids[0]}"
