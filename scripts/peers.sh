#!/usr/bin/env bash
# peers.sh - build the real Kubernetes control plane used as a test peer (see docs/building.md
# "Control-plane peers" and docs/live-tests.md): etcd, kube-apiserver, kube-scheduler, kubectl
# and kwok, from the Go module proxy at pinned versions, into a cache outside the work tree:
#
#   $GS_PEERS_CACHE/                      default ${XDG_CACHE_HOME:-$HOME/.cache}/gpusched-peers
#     kubernetes-<version>/bin/{kube-apiserver,kube-scheduler,kubectl}
#     etcd-<version>/bin/etcd
#     kwok-<version>/bin/kwok
#     go/{build,mod}                      GOCACHE and GOMODCACHE (reused by the next build)
#
# A machine builds each version once: when the binaries of a version are there, nothing is
# rebuilt. Go is used for these test peers only; gpusched itself stays C17.
#
# Usage: scripts/peers.sh [MODE] [--no-kwok]
#   (no mode)     build what is missing, then print where the binaries are
#   --check       build nothing; exit 0 when the control-plane binaries (etcd, kube-apiserver,
#                 kube-scheduler, kubectl) are built, else 1 with one line saying why
#   --print-env   build nothing; print GS_PEER_*=path lines (shell syntax) for what is built,
#                 exit 1 (printing nothing) when a control-plane binary is missing
#   --versions    print the pinned versions
#   --no-kwok     skip kwok (fake kubelets) when building
# Environment: GS_PEERS_CACHE (cache root), GS_KUBERNETES_VERSION (default: the pinned one),
# GS_GO (the go command; else `go` on PATH, else
# /usr/local/go/bin/go).
# Exit status: 0 done (kwok failing to build is only a warning); 1 a control-plane build
# failed or (--check) not built; 2 usage error or no Go.
set -euo pipefail

# Pinned versions. Kubernetes: the newest minor the module proxy serves that builds here.
# GS_KUBERNETES_VERSION=v1.X.Y selects another release (a version matrix: the live tests use
# whatever version this variable names, for peers.sh and ctest alike).
KUBERNETES_VERSION=${GS_KUBERNETES_VERSION:-v1.37.2}
if [[ ! $KUBERNETES_VERSION =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
  echo "peers.sh: GS_KUBERNETES_VERSION must look like v1.37.2, got '$KUBERNETES_VERSION'" >&2
  exit 2
fi
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

cache=${GS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpusched-peers}
k8s_dir=$cache/kubernetes-$KUBERNETES_VERSION
etcd_dir=$cache/etcd-$ETCD_VERSION
kwok_dir=$cache/kwok-$KWOK_VERSION

mode=build
with_kwok=1
for arg in "$@"; do
  case $arg in
    --check | --print-env | --versions) mode=${arg#--} ;;
    --no-kwok) with_kwok=0 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "peers.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

core_bins=("$etcd_dir/bin/etcd" "$k8s_dir/bin/kube-apiserver" "$k8s_dir/bin/kube-scheduler"
  "$k8s_dir/bin/kubectl")

missing_core() {
  local b
  for b in "${core_bins[@]}"; do
    if [[ ! -x $b ]]; then
      echo "$b"
      return 0
    fi
  done
  return 1
}

print_env() {
  echo "GS_PEER_ETCD=$etcd_dir/bin/etcd"
  echo "GS_PEER_KUBE_APISERVER=$k8s_dir/bin/kube-apiserver"
  echo "GS_PEER_KUBE_SCHEDULER=$k8s_dir/bin/kube-scheduler"
  echo "GS_PEER_KUBECTL=$k8s_dir/bin/kubectl"
  if [[ -x $kwok_dir/bin/kwok ]]; then
    echo "GS_PEER_KWOK=$kwok_dir/bin/kwok"
  fi
  echo "GS_PEER_KUBERNETES_VERSION=$KUBERNETES_VERSION"
  echo "GS_PEER_ETCD_VERSION=$ETCD_VERSION"
}

case $mode in
  versions)
    echo "kubernetes $KUBERNETES_VERSION"
    echo "etcd $ETCD_VERSION"
    echo "kwok $KWOK_VERSION"
    exit 0
    ;;
  check)
    if m=$(missing_core); then
      echo "control plane peers not built ($m missing): run scripts/peers.sh"
      exit 1
    fi
    exit 0
    ;;
  print-env)
    if missing_core >/dev/null; then
      exit 1
    fi
    print_env
    exit 0
    ;;
esac

# ---- build mode ----
log() { printf 'peers.sh: %s\n' "$*"; }
die() {
  printf 'peers.sh: %s\n' "$*" >&2
  exit 1
}

all_built() {
  ! missing_core >/dev/null && { ((with_kwok == 0)) || [[ -x $kwok_dir/bin/kwok ]]; }
}
if all_built; then
  log "kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION$( ((with_kwok)) && echo ", kwok $KWOK_VERSION"): already built in $cache"
  print_env
  exit 0
fi

# shellcheck source=go-toolchain.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh"
find_go
if [[ -z $go_cmd ]]; then
  echo "peers.sh: no Go toolchain found (looked at \$GS_GO, \`go\` on PATH, /usr/local/go/bin/go)." >&2
  echo "peers.sh: install Go 1.25 or newer from https://go.dev/dl/ (Debian 12's golang-go 1.19 is too old)," >&2
  echo "peers.sh: or set GS_GO=/path/to/go. The live tests skip without these peers." >&2
  exit 2
fi

mkdir -p "$cache/go/build" "$cache/go/mod" "$cache/tmp"
export GOCACHE=$cache/go/build GOMODCACHE=$cache/go/mod GOFLAGS=-mod=mod CGO_ENABLED=0
export GOTMPDIR=$cache/tmp
# Never let Go write into the work tree: every helper module lives under the cache.
unset GOPATH GOWORK
export GOWORK=off

# One build at a time per cache (two CI jobs on one machine share it).
exec 9>"$cache/.lock"
if command -v flock >/dev/null 2>&1; then
  if ! flock -n 9; then
    log "another peers.sh is building in $cache; waiting for it"
    flock 9
  fi
fi

log "go: $("$go_cmd" version) ($go_cmd)"
log "cache: $cache"

# new_module DIR NAME GO_VERSION: an empty helper module in DIR/src (recreated each build).
new_module() {
  local dir=$1 name=$2 gover=$3
  rm -rf "$dir/src" "$dir/bin.tmp"
  mkdir -p "$dir/src" "$dir/bin.tmp"
  printf 'module %s\n\ngo %s\n' "$name" "$gover" >"$dir/src/go.mod"
}

# timed LABEL CMD...: run CMD, log how long it took.
timed() {
  local label=$1 start=$SECONDS
  shift
  log "$label ..."
  if ! "$@"; then
    return 1
  fi
  log "$label: done in $((SECONDS - start))s"
}

build_kubernetes() {
  local dir=$k8s_dir v=$KUBERNETES_VERSION
  local minor=${v#v1.}
  minor=${minor%%.*}
  local patch=${v##*.}
  local staging=v0.$minor.$patch
  log "building kubernetes $v (kube-apiserver, kube-scheduler, kubectl) into $dir/bin"
  # The go.mod of k8s.io/kubernetes points every k8s.io/* staging module at ./staging/src;
  # a module that requires it must replace each by its published v0.X.Y.
  local modfile
  modfile=$("$go_cmd" mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p') ||
    die "could not download k8s.io/kubernetes@$v from the module proxy (GOPROXY=$("$go_cmd" env GOPROXY))"
  [[ -n $modfile && -f $modfile ]] || die "could not download k8s.io/kubernetes@$v from the module proxy"
  local gover
  gover=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$modfile" | head -1)
  new_module "$dir" gpusched.test/peers-kubernetes "${gover:-1.25}"
  {
    printf '\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$v"
    sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$modfile" |
      sort -u | while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
    printf ')\n'
  } >>"$dir/src/go.mod"
  local nrep
  nrep=$(grep -c ' => ' "$dir/src/go.mod" || true)
  ((nrep > 10)) || die "found only $nrep staging replacements in $modfile; its layout changed?"
  log "helper module $dir/src/go.mod: $nrep staging modules replaced by $staging"
  local ldflags="-s -w"
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$dir/src" && timed "go mod download (kubernetes)" "$go_cmd" mod download k8s.io/kubernetes) ||
    die "go mod download failed for kubernetes $v"
  local cmd
  for cmd in kube-apiserver kube-scheduler kubectl; do
    (cd "$dir/src" && timed "go build $cmd" "$go_cmd" build -trimpath -ldflags "$ldflags" \
      -o "$dir/bin.tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd") || die "building $cmd $v failed (see above)"
  done
  rm -rf "$dir/bin"
  mv "$dir/bin.tmp" "$dir/bin"
}

build_etcd() {
  local dir=$etcd_dir v=$ETCD_VERSION
  log "building etcd $v into $dir/bin"
  new_module "$dir" gpusched.test/peers-etcd 1.24
  printf '\nrequire go.etcd.io/etcd/server/v3 %s\n' "$v" >>"$dir/src/go.mod"
  (cd "$dir/src" && timed "go build etcd" "$go_cmd" build -trimpath -ldflags "-s -w" \
    -o "$dir/bin.tmp/etcd" go.etcd.io/etcd/server/v3) || die "building etcd $v failed (see above)"
  rm -rf "$dir/bin"
  mv "$dir/bin.tmp" "$dir/bin"
}

build_kwok() {
  local dir=$kwok_dir v=$KWOK_VERSION
  log "building kwok $v into $dir/bin"
  new_module "$dir" gpusched.test/peers-kwok 1.24
  printf '\nrequire sigs.k8s.io/kwok %s\n' "$v" >>"$dir/src/go.mod"
  (cd "$dir/src" && timed "go build kwok" "$go_cmd" build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$v" \
    -o "$dir/bin.tmp/kwok" sigs.k8s.io/kwok/cmd/kwok) || die "building kwok $v failed (see above)"
  rm -rf "$dir/bin"
  mv "$dir/bin.tmp" "$dir/bin"
}

start=$SECONDS
built=0
if [[ -x $etcd_dir/bin/etcd ]]; then
  log "etcd $ETCD_VERSION: already built"
else
  build_etcd
  built=1
fi
if [[ -x $k8s_dir/bin/kube-apiserver && -x $k8s_dir/bin/kube-scheduler && -x $k8s_dir/bin/kubectl ]]; then
  log "kubernetes $KUBERNETES_VERSION: already built"
else
  build_kubernetes
  built=1
fi
if ((with_kwok)); then
  if [[ -x $kwok_dir/bin/kwok ]]; then
    log "kwok $KWOK_VERSION: already built"
  else
    # kwok is optional (no live test needs it yet): a failed kwok build is a warning.
    if ! (build_kwok); then
      log "warning: kwok $KWOK_VERSION did not build; the control plane is still usable"
    fi
    built=1
  fi
fi
if ((built)); then
  log "built in $((SECONDS - start))s; cache uses $(du -sh "$cache" 2>/dev/null | cut -f1)"
fi
print_env
