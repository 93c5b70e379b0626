#!/usr/bin/env bash
# Builds every external binary the bench, the tests and the code generators need,
# from the Go module proxy, into a cache outside the clone keyed by version.
# A warm cache makes this a no-op: each tool directory carries a .done stamp.
#
#   hack/tools.sh [all|k8s|node|coredns|packages|busybox|etcd|minio|olm|helm|gen|promtool|prometheus]
#                                             (default: all)
#   hack/tools.sh path                        print the cache root
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSIONS=${ETCD_VERSIONS:-"v3.5.36 v3.6.16 v3.7.3"}
MINIO_VERSION=${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}
CONTROLLER_GEN_VERSION=${CONTROLLER_GEN_VERSION:-v0.23.0}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.2}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.4}
OLM_VERSION=${OLM_VERSION:-v0.36.0}
OPM_VERSION=${OPM_VERSION:-v1.60.0}
UROOT_VERSION=${UROOT_VERSION:-v0.16.0}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}

CACHE=${ETCD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcd-operator}
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# scratch_module DIR NAME: an empty module to `go get` a tool's dependencies into, so
# the tool's own replace directives never meet ours.
scratch_module() {
  rm -rf "$1"; mkdir -p "$1"
  (cd "$1" && go mod init "$2" >/dev/null 2>&1)
}

# k8s_module DIR CMD...: a scratch module that requires k8s.io/kubernetes and replaces
# its staging modules with the published releases, ready to build the given commands.
k8s_module() {
  local work=$1; shift
  scratch_module "$work" k8stools
  (
    cd "$work"
    go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    local gomod; gomod=$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
    local staging=${K8S_VERSION/v1./v0.}
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
    # ./staging paths; a consumer must replace each with the published release.
    go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
    grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | awk '{print $1}' | sort -u |
      while read -r m; do go mod edit -replace="$m=$m@$staging"; done
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
      printf ')\n'
    } > tools.go
    go mod tidy -e >/dev/null 2>&1 || true
    go get "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
  )
}

# k8s_ldflags: the version stamp a release build carries; without it the binaries report
# v0.0.0-master and the kubelet registers its node with that version.
k8s_ldflags() {
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  printf -- '-s -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=%s' "$K8S_VERSION" "$minor"
}

# build_k8s_cmds OUT WHAT CMD...: go build k8s.io/kubernetes/cmd/CMD for each CMD into OUT,
# version-stamped, once (OUT/.done).
build_k8s_cmds() {
  local out=$1 what=$2; shift 2
  # A cache from before the version stamp reports v0.0.0-master (OLM then refuses every
  # CSV's minKubeVersion): rebuild it.
  if [[ -f $out/.done ]] && "$out/$1" --version 2>/dev/null | grep -q -- "$K8S_VERSION"; then
    return 0
  fi
  log "building $* $K8S_VERSION ($what)"
  local work; work=$(mktemp -d "$CACHE/.k8s-build.XXXX")
  k8s_module "$work" "$@"
  (
    cd "$work"
    mkdir -p bin
    for c in "$@"; do
      log "  go build $c"
      go build -trimpath -ldflags="$(k8s_ldflags)" -o "bin/$c" "k8s.io/kubernetes/cmd/$c"
    done
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

build_k8s() {
  build_k8s_cmds "$CACHE/k8s-$K8S_VERSION" "control plane and kubectl, cold: ~15 min" \
    kube-apiserver kube-controller-manager kube-scheduler kubectl
}

# build_node: the node agents of the bench's real nodes (containerd, runc and the CNI
# plugins come from Debian packages, see node_packages).
build_node() {
  build_k8s_cmds "$CACHE/k8s-node-$K8S_VERSION" "the nodes' agents, cold: ~5 min" kubelet kube-proxy
}

build_coredns() {
  build_go_binary "$CACHE/coredns-$COREDNS_VERSION" coredns github.com/coredns/coredns "$COREDNS_VERSION" "cold: ~4 min"
}

# module_replaces MODULE@VERSION: copies the module's own replace directives that point
# at other modules (not local paths) into the scratch module in the working directory, so
# that it resolves the dependencies the module was released with.
module_replaces() {
  local gomod; gomod=$(go mod download -json "$1" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
  [[ -f $gomod ]] || { log "no go.mod for $1"; return 1; }
  awk '/^replace \($/ {inblock=1; next} inblock && /^\)/ {inblock=0; next}
       /^replace / {sub(/^replace /, ""); print; next} inblock {print}' "$gomod" |
    sed 's|//.*||' | awk 'NF == 4 && $2 == "=>" {print $1 "=" $3 "@" $4} NF == 5 && $3 == "=>" {print $1 "@" $2 "=" $4 "@" $5}' |
    while read -r r; do go mod edit -replace="$r"; done
}

# module_dir MODULE@VERSION: the module's source in the module cache (read-only).
module_dir() {
  go mod download -json "$1" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p'
}

# build_olm: OLM v0's olm-operator and catalog-operator, the helpers upstream's OLM image
# carries for bundle unpack Jobs and catalog pods (cpb, copy-content), and a cp for the
# unpack Job's `/bin/cp -Rv /bin/cpb /util/cpb` (upstream's image has busybox's; u-root's
# is Go, static, and takes the same flags). OLM pins k8s 0.34 and operator-registry
# v1.59, so it gets a scratch module of its own. Upstream's install chart and release
# values are copied beside the binaries: test/bench/olm renders them as upstream's release
# does (helm template), so nothing of OLM is copied into this repository.
build_olm() {
  local out=$CACHE/olm-$OLM_VERSION
  [[ -f $out/.done ]] && return 0
  local olm=github.com/operator-framework/operator-lifecycle-manager
  local cmds=(cmd/olm cmd/catalog util/cpb cmd/copy-content)
  log "building OLM $OLM_VERSION (olm, catalog, cpb, copy-content) and cp (cold: ~5 min)"
  local work; work=$(mktemp -d "$CACHE/.olm-build.XXXX")
  mkdir -p "$work/bin"
  scratch_module "$work/olm" olmtools
  (
    cd "$work/olm"
    module_replaces "$olm@$OLM_VERSION"
    local pkgs=() c
    for c in "${cmds[@]}"; do pkgs+=("$olm/$c@$OLM_VERSION"); done
    go get "${pkgs[@]}" >/dev/null 2>&1 || go get "${pkgs[@]}"
    for c in "${cmds[@]}"; do
      log "  go build $c"
      go build -trimpath -tags json1 -ldflags="-s -w -X $olm/pkg/version.OLMVersion=${OLM_VERSION#v}" \
        -o "$work/bin/${c##*/}" "$olm/$c"
    done
    local src; src=$(module_dir "$olm@$OLM_VERSION")
    cp -R "$src/deploy/chart" "$work/bin/chart"
    cp "$src/deploy/upstream/values.yaml" "$work/bin/upstream-values.yaml"
    chmod -R u+w "$work/bin/chart" "$work/bin/upstream-values.yaml"
  )
  scratch_module "$work/cp" cptools
  (
    cd "$work/cp"
    go get "github.com/u-root/u-root/cmds/core/cp@$UROOT_VERSION" >/dev/null 2>&1 ||
      go get "github.com/u-root/u-root/cmds/core/cp@$UROOT_VERSION"
    log "  go build cp (u-root $UROOT_VERSION)"
    go build -trimpath -ldflags=-s -o "$work/bin/cp" github.com/u-root/u-root/cmds/core/cp
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

# build_opm: operator-registry's opm and the grpc_health_probe its go.mod pins, which is
# what upstream's opm image holds (catalog pods are probed with `grpc_health_probe
# -addr=:50051`). Static: with CGO_ENABLED=0 the sqlite driver compiles to a stub that
# fails only the deprecated sqlite-index commands; file-based catalogs (opm serve,
# opm render) and the unpack Job's `opm alpha bundle extract` need no sqlite. The tag
# containers_image_openpgp (upstream's too) replaces gpgme, which needs cgo.
build_opm() {
  local out=$CACHE/opm-$OPM_VERSION
  [[ -f $out/.done ]] && return 0
  local reg=github.com/operator-framework/operator-registry
  log "building opm $OPM_VERSION and grpc_health_probe (cold: ~4 min)"
  local work; work=$(mktemp -d "$CACHE/.opm-build.XXXX")
  mkdir -p "$work/bin"
  scratch_module "$work/opm" opmtools
  (
    cd "$work/opm"
    module_replaces "$reg@$OPM_VERSION"
    local gomod; gomod=$(go mod download -json "$reg@$OPM_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
    local probe; probe=$(awk '$1 == "github.com/grpc-ecosystem/grpc-health-probe" {print $2}' "$gomod")
    [[ -n $probe ]] || { log "no grpc-health-probe in $gomod"; exit 1; }
    local pkgs=("$reg/cmd/opm@$OPM_VERSION" "github.com/grpc-ecosystem/grpc-health-probe@$probe")
    go get "${pkgs[@]}" >/dev/null 2>&1 || go get "${pkgs[@]}"
    log "  go build opm"
    go build -trimpath -tags json1,containers_image_openpgp \
      -ldflags="-s -w -X $reg/cmd/opm/version.opmVersion=$OPM_VERSION" -o "$work/bin/opm" "$reg/cmd/opm"
    log "  go build grpc_health_probe $probe"
    go build -trimpath -ldflags=-s -o "$work/bin/grpc_health_probe" github.com/grpc-ecosystem/grpc-health-probe
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

build_etcd() {
  local v=$1 out=$CACHE/etcd-$1
  [[ -f $out/.done ]] && return 0
  log "building etcd, etcdctl, etcdutl $v"
  local work; work=$(mktemp -d "$CACHE/.etcd-build.XXXX")
  scratch_module "$work" etcdtools
  (
    cd "$work"
    go get "go.etcd.io/etcd/server/v3@$v" "go.etcd.io/etcd/etcdctl/v3@$v" "go.etcd.io/etcd/etcdutl/v3@$v" >/dev/null 2>&1
    mkdir -p bin
    go build -trimpath -ldflags=-s -o bin/etcd go.etcd.io/etcd/server/v3
    go build -trimpath -ldflags=-s -o bin/etcdctl go.etcd.io/etcd/etcdctl/v3
    go build -trimpath -ldflags=-s -o bin/etcdutl go.etcd.io/etcd/etcdutl/v3
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

# build_go_binary OUT NAME MODULE VERSION WHAT: `go build MODULE` at VERSION in a scratch
# module of its own into OUT/NAME, once (OUT/.done).
build_go_binary() {
  local out=$1 name=$2 module=$3 version=$4 what=$5
  [[ -f $out/.done ]] && return 0
  log "building $name $version ($what)"
  local work; work=$(mktemp -d "$CACHE/.$name-build.XXXX")
  scratch_module "$work" "${name}tools"
  (
    cd "$work"
    go get "$module@$version" >/dev/null 2>&1
    go build -trimpath -ldflags=-s -o "bin/$name" "$module"
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

# build_helm: the helm CLI, at the helm.sh/helm/v3 version this repository's go.mod pins
# (the library that renders the member chart), for the e2e test that installs the
# operator chart as users do. Built in this module, not a scratch one, so its
# dependencies resolve as the operator's do; -modfile keeps the extra requirements
# cmd/helm brings (kubectl, oras, sql drivers) in a copy of go.mod, off the operator's.
build_helm() {
  local repo; repo=$(cd "$(dirname "$0")/.." && pwd)
  local v; v=$(cd "$repo" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
  local out=$CACHE/helm-$v
  [[ -f $out/.done ]] && return 0
  log "building helm $v (this module's helm.sh/helm/v3; cold: ~3 min)"
  local work; work=$(mktemp -d "$CACHE/.helm-build.XXXX")
  cp "$repo/go.mod" "$work/go.mod"
  cp "$repo/go.sum" "$work/go.sum"
  (
    cd "$repo"
    go get -modfile="$work/go.mod" "helm.sh/helm/v3/cmd/helm@$v" >/dev/null 2>&1 ||
      go get -modfile="$work/go.mod" "helm.sh/helm/v3/cmd/helm@$v"
    go build -modfile="$work/go.mod" -trimpath \
      -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$v" -o "$work/helm" helm.sh/helm/v3/cmd/helm
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work/helm" "$out/helm"
  rm -rf "$work"
  touch "$out/.done"
}

# build_prometheus_cmd NAME WHAT: Prometheus' cmd/NAME (prometheus or promtool) at
# PROMETHEUS_VERSION into its own cache directory, once. Built with only the file, HTTP and
# Kubernetes service discovery (remove_all_sd + enable_kubernetes_sd: the bench scrapes
# pods the way the shipped PodMonitors select them, and nothing else) and without the web
# UI's assets (the HTTP API the tests query needs none): fewer packages to fetch and compile. promtool
# (rule checks and rule unit tests, integration tier) and prometheus (the bench's server,
# e2e tier) are separate so a tier builds only what it runs.
# (Module v0.3XX.Y is Prometheus 3.XX.Y.)
build_prometheus_cmd() {
  local name=$1 what=$2 out=$CACHE/$1-$PROMETHEUS_VERSION
  [[ -f $out/.done ]] && return 0
  local mod=github.com/prometheus/prometheus
  log "building $name $PROMETHEUS_VERSION ($what)"
  local work; work=$(mktemp -d "$CACHE/.$name-build.XXXX")
  scratch_module "$work" "${name}tools"
  (
    cd "$work"
    go get "$mod/cmd/$name@$PROMETHEUS_VERSION" >/dev/null 2>&1 || go get "$mod/cmd/$name@$PROMETHEUS_VERSION"
    go build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
      -ldflags="-s -w -X github.com/prometheus/common/version.Version=3.${PROMETHEUS_VERSION#v0.3}" \
      -o "bin/$name" "$mod/cmd/$name"
  )
  rm -rf "$out"; mkdir -p "$out"
  mv "$work"/bin/* "$out"/
  rm -rf "$work"
  touch "$out/.done"
}

# Measured cold on 2 cores shared with other builds (load ~20): promtool 9 min (3 min of
# CPU: mostly module downloads), then prometheus 8.5 min (under 2 min of CPU).
build_promtool() { build_prometheus_cmd promtool "rule checks and rule tests, cold: ~9 min"; }
build_prometheus() { build_prometheus_cmd prometheus "the bench's monitoring, cold after promtool: ~9 min"; }

build_minio() {
  build_go_binary "$CACHE/minio-$MINIO_VERSION" minio github.com/minio/minio "$MINIO_VERSION" "cold: ~4 min"
}

build_gen() {
  local out=$CACHE/bin
  mkdir -p "$out"
  if [[ ! -x $out/controller-gen-$CONTROLLER_GEN_VERSION ]]; then
    log "installing controller-gen $CONTROLLER_GEN_VERSION"
    GOBIN=$out go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
    mv "$out/controller-gen" "$out/controller-gen-$CONTROLLER_GEN_VERSION"
  fi
  if [[ ! -x $out/kustomize-$KUSTOMIZE_VERSION ]]; then
    log "installing kustomize $KUSTOMIZE_VERSION"
    GOBIN=$out go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
    mv "$out/kustomize" "$out/kustomize-$KUSTOMIZE_VERSION"
  fi
}

# envtest_assets: the layout controller-runtime's envtest expects in KUBEBUILDER_ASSETS.
envtest_assets() {
  local out=$CACHE/envtest-$K8S_VERSION
  mkdir -p "$out"
  local newest_etcd; newest_etcd=$(echo "$ETCD_VERSIONS" | tr ' ' '\n' | tail -1)
  ln -sf "$CACHE/k8s-$K8S_VERSION/kube-apiserver" "$out/kube-apiserver"
  ln -sf "$CACHE/k8s-$K8S_VERSION/kubectl" "$out/kubectl"
  ln -sf "$CACHE/etcd-$newest_etcd/etcd" "$out/etcd"
}

# node_packages: what the bench's real nodes run from Debian packages (containerd, runc,
# the CNI plugins, iptables, conntrack). No service is started: the bench runs its own
# containerd per node. Installed when missing (root and apt-get needed, as on CI).
node_packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap ]] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null || need+=(iptables)
  command -v conntrack >/dev/null || need+=(conntrack)
  ((${#need[@]})) || return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    log "missing Debian packages for the bench's nodes: ${need[*]} (install them as root)"
    return 1
  fi
  log "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# fetch_busybox: the static busybox of Debian's busybox-static package, unpacked from the
# downloaded package (never installed), for the busybox image of the e2e test that makes
# clusters the way CoreOS etcd-operator did (its check-dns init container). Keyed by the
# package version.
fetch_busybox() {
  compgen -G "$CACHE/busybox-static-*/.done" >/dev/null && return 0
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    # Only TestTakeoverOfCoreOSClusters needs it, and it says so: not a reason to stop.
    log "busybox-static needs apt-get and dpkg-deb (Debian); skipped"
    return 0
  fi
  local tmp version dir
  tmp=$(mktemp -d)
  chmod 755 "$tmp" # apt's download user writes here
  (cd "$tmp" && apt-get download -qq busybox-static >/dev/null)
  version=$(dpkg-deb -f "$tmp"/busybox-static_*.deb Version | tr -c 'A-Za-z0-9.+\n-' _)
  dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/root"
  dir="$CACHE/busybox-static-$version"
  mkdir -p "$dir"
  install -m 0755 "$tmp/root/bin/busybox" "$dir/busybox"
  touch "$dir/.done"
  rm -rf "$tmp"
  log "busybox-static $version in $dir"
}

mkdir -p "$CACHE"
what=${1:-all}
case $what in
  path) echo "$CACHE"; exit 0 ;;
  k8s) build_k8s ;;
  node) build_node ;;
  coredns) build_coredns ;;
  packages) node_packages ;;
  busybox) fetch_busybox ;;
  etcd) for v in $ETCD_VERSIONS; do build_etcd "$v"; done ;;
  minio) build_minio ;;
  olm) build_olm; build_opm ;;
  helm) build_helm ;;
  gen) build_gen ;;
  promtool) build_promtool ;;
  prometheus) build_promtool; build_prometheus ;;
  all)
    node_packages
    build_gen
    # Two lanes at once: each go build is parallel inside, but its downloads and its
    # link (one core) leave the other core idle, which the second lane fills.
    ( for v in $ETCD_VERSIONS; do build_etcd "$v"; done; build_coredns; build_minio ) &
    lane=$!
    # A third lane for Prometheus: promtool first (the integration tier's rule tests),
    # then the server (the e2e tier's alerts test). Mostly module downloads: it overlaps
    # the other lanes' compiles rather than adding to them. The helm CLI (the e2e tier's
    # chart install test) last, in the same lane.
    ( build_promtool; build_prometheus; build_helm ) &
    promlane=$!
    build_k8s
    build_node
    fetch_busybox
    build_olm
    build_opm
    wait "$lane" || { log "etcd, CoreDNS or MinIO failed to build (see above)"; exit 1; }
    wait "$promlane" || { log "promtool, prometheus or helm failed to build (see above)"; exit 1; }
    envtest_assets
    ;;
  *) echo "usage: $0 [all|k8s|node|coredns|packages|busybox|etcd|minio|olm|helm|gen|promtool|prometheus|path]" >&2; exit 2 ;;
esac
log "ready in $CACHE"
