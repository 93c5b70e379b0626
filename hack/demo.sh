#!/usr/bin/env bash
# make demo: the local bench (a control plane and 3 real nodes: kubelet, containerd, CNI,
# kube-proxy, CoreDNS), the operator installed as a user installs it
# (`kustomize build config/default | kubectl apply`, its image pulled from the bench's
# registry), a 3-member EtcdCluster from config/samples, and then what a user would try:
# etcdctl inside a member, its logs, and a put/get from a client pod through the client
# Service by DNS. Stays up until Ctrl-C (or `make demo-down` from another terminal), then
# stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-$PWD/.bench}
CACHE=$(hack/tools.sh path)
KUBECTL="$CACHE/k8s-v1.37.2/kubectl --kubeconfig $DIR/kubeconfig"
NAME=example-etcd-cluster
ETCD_IMAGE=quay.io/coreos/etcd:v3.6.16

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

if [[ -f $DIR/pid ]] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
  echo "a bench is already running from $DIR (pid $(cat "$DIR/pid")); run 'make demo-down' first" >&2
  exit 1
fi
rm -rf "$DIR"; mkdir -p "$DIR"

pids=()
cleanup() {
  say "stopping"
  bin/bench down --dir "$DIR" >/dev/null 2>&1 || true
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting the local bench (control plane + 3 real nodes) in $DIR"
bin/bench up --dir "$DIR" >"$DIR/bench.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  [[ -s $DIR/pid ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$DIR/bench.out"; echo "bench failed to start" >&2; exit 1; }
  sleep 0.5
done
[[ -s $DIR/pid ]] || { cat "$DIR/bench.out"; echo "bench did not become ready" >&2; exit 1; }
run $KUBECTL get nodes -o wide -L topology.kubernetes.io/zone

say "installing the operator: kustomize build config/default | kubectl apply"
"$CACHE/bin/kustomize-v5.8.2" build config/default | $KUBECTL apply --server-side -f - >/dev/null
run $KUBECTL -n etcd-operator-system rollout status deployment/etcd-operator-controller-manager --timeout=180s
run $KUBECTL -n etcd-operator-system get pods -o wide

say "applying config/samples/etcd_v1beta2_etcdcluster.yaml (v1beta2) and reading it back as v1 (conversion webhook)"
# The API server reaches the conversion and admission webhooks through their Service once
# the operator has issued its certificate; retry until it answers.
for i in $(seq 1 60); do
  $KUBECTL apply -f config/samples/etcd_v1beta2_etcdcluster.yaml 2>"$DIR/apply.err" && break
  [[ $i == 60 ]] && { cat "$DIR/apply.err"; exit 1; }
  sleep 1
done
# kube-proxy programs the webhook Service's endpoint a moment after the pod is Ready.
for i in $(seq 1 60); do
  $KUBECTL get etcdclusters.v1.etcd.database.coreos.com $NAME >/dev/null 2>"$DIR/get.err" && break
  [[ $i == 60 ]] && { cat "$DIR/get.err"; exit 1; }
  sleep 1
done
if ! $KUBECTL wait --for=condition=Available --timeout=300s etcdcluster/$NAME; then
  $KUBECTL get etcd,pods -o wide; $KUBECTL -n etcd-operator-system logs deployment/etcd-operator-controller-manager --tail 50; exit 1
fi
run $KUBECTL get etcd,pods -o wide
run $KUBECTL get etcdclusters.v1.etcd.database.coreos.com $NAME -o jsonpath='{.apiVersion} {.spec.size} {.status.phase}{"\n"}'

MEMBER=$($KUBECTL get pods -l etcd_cluster=$NAME -o jsonpath='{.items[0].metadata.name}')
say "etcdctl inside a member (its default endpoint, 127.0.0.1:2379)"
run $KUBECTL exec "$MEMBER" -c etcd -- etcdctl endpoint health
run $KUBECTL exec "$MEMBER" -c etcd -- etcdctl member list -w table

say "the member's log"
run $KUBECTL logs "$MEMBER" -c etcd --tail 3

say "a put and a get from a client pod through the client Service ($NAME-client:2379, by DNS)"
# etcd's image has etcdctl and no shell: one client pod per command. The pod is Pod
# Security "restricted", like the members.
client() {
  local name=$1; shift
  local args; args=$(printf '"%s",' "$@")
  run $KUBECTL run "$name" --image "$ETCD_IMAGE" --restart=Never --rm -i --quiet --overrides='{"spec":{
    "securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}},
    "containers":[{"name":"'"$name"'","image":"'"$ETCD_IMAGE"'",
      "securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}},
      "command":["etcdctl","--endpoints","http://'"$NAME"'-client:2379",'"${args%,}"']}]}}'
}
client demo-put put demo-key "hello from the etcd operator"
client demo-get get demo-key

cat <<MSG

The demo is running. Try, from another terminal:
  $KUBECTL get etcd,pods -o wide
  $KUBECTL patch etcd $NAME --type merge -p '{"spec":{"size":5}}'
  $KUBECTL exec $MEMBER -c etcd -- etcdctl endpoint status -w table
  bin/bench fault --dir $DIR kill-pod default/$MEMBER
Operator log: $KUBECTL -n etcd-operator-system logs deployment/etcd-operator-controller-manager
Ctrl-C here or 'make demo-down' stops everything.
MSG
wait "${pids[0]}"
