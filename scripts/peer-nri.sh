#!/usr/bin/env bash
# peer-nri.sh - build the NRI test peer (tests/nri/runtime: the container runtime's side of
# NRI, with containerd/nri's own adaptation package at a pinned version) once, into a cache
# outside the work tree, and print the binary's path (one line).
#
#   $GS_PEERS_CACHE/                 default ${XDG_CACHE_HOME:-$HOME/.cache}/gpusched-peers
#     nri-runtime-<nri version>-<source hash>/nri-runtime
#     go/{build,mod}                 GOCACHE and GOMODCACHE (shared with scripts/peers.sh)
#
# A changed tests/nri/runtime (main.go, go.mod) builds a new binary; an unchanged one is reused.
# Environment: GS_PEERS_CACHE, GS_GO (the go command; else `go` on PATH, else
# /usr/local/go/bin/go).
# Exit status: 0 built or cached (the path on stdout); 77 Go or the module proxy is not
# available (one line on stderr saying why: the tests that need the peer skip).
set -euo pipefail

NRI_VERSION=v0.12.5
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/tests/nri/runtime
cache=${GS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpusched-peers}

go_cmd=${GS_GO:-}
if [[ -z $go_cmd ]]; then
  if command -v go >/dev/null 2>&1; then go_cmd=$(command -v go)
  elif [[ -x /usr/local/go/bin/go ]]; then go_cmd=/usr/local/go/bin/go
  fi
fi
if [[ -z $go_cmd ]]; then
  echo "peer-nri.sh: no Go toolchain (\$GS_GO, go on PATH, /usr/local/go/bin/go): the NRI peer cannot be built" >&2
  exit 77
fi
if ! grep -q "github.com/containerd/nri $NRI_VERSION" "$src/go.mod"; then
  echo "peer-nri.sh: $src/go.mod does not pin github.com/containerd/nri $NRI_VERSION" >&2
  exit 2
fi
hash=$(cat "$src/main.go" "$src/go.mod" | sha256sum | cut -c1-12)
dir=$cache/nri-runtime-$NRI_VERSION-$hash
bin=$dir/nri-runtime
if [[ -x $bin ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir" "$cache/go"
export GOCACHE=$cache/go/build GOMODCACHE=$cache/go/mod GOFLAGS=-mod=mod CGO_ENABLED=0
# build from a copy: -mod=mod may write go.sum, and the work tree stays as it is
work=$(mktemp -d "$dir/src.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$src/main.go" "$src/go.mod" "$work/"
[[ -f $src/go.sum ]] && cp "$src/go.sum" "$work/"
if ! out=$(cd "$work" && "$go_cmd" build -trimpath -o "$bin.tmp" . 2>&1); then
  echo "peer-nri.sh: cannot build the NRI peer with github.com/containerd/nri $NRI_VERSION (module proxy unavailable? GOPROXY=$("$go_cmd" env GOPROXY)): $(echo "$out" | tail -1)" >&2
  exit 77
fi
mv "$bin.tmp" "$bin"
echo "$bin"
