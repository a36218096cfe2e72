#!/usr/bin/env bash
# peer-hami.sh - build HAMi's scheduler extender (the anchor of docs/performance.md "Peer: HAMi's
# scheduler extender") from the Go module proxy, by module path, at a pinned release, into the
# cache scripts/peers.sh uses, outside the work tree:
#
#   $GS_PEERS_CACHE/hami-<version>/bin/hami-scheduler
#   $GS_PEERS_CACHE/hami-<version>/src/go.mod     the helper module (recreated each build)
#   $GS_PEERS_CACHE/go/{build,mod}                 GOCACHE and GOMODCACHE, shared with peers.sh
#
# NOT part of the default CI dependencies: building HAMi (its scheduler links client-go,
# controller-runtime and every vendor's device package) takes minutes; only the HAMi side by
# side (bench/hami_peer.py --smoke) needs it. Nothing of HAMi is vendored or committed.
#
# Version: HAMi tags its releases v2.X.Y, but its go.mod says `module github.com/Project-HAMi/HAMi`
# (no /v2 suffix), so the Go toolchain cannot use the tag itself: the release is required by
# its pseudo-version (v0.0.0-<commit time>-<commit>), the same commit as the tag.
#
# Usage: scripts/peer-hami.sh [--check | --version]
#   (no argument)  build when missing, then print the binary's path (one line on stdout)
#   --check        build nothing: print the path and exit 0 when built, else exit 1
#   --version      print the pinned release, its pseudo-version and the module path
# Environment: GS_PEERS_CACHE (cache root), GS_GO (the go command), GS_HAMI_PSEUDO (another
# pseudo-version of the module), GS_GO_BUILD_P (go build -p, default 2).
# Exit status: 0 built (or already built); 1 --check and not built; 2 usage error;
# 77 cannot be built here (no Go, the proxy does not serve the module, a build failure): one
# line `peer-hami.sh: cannot build HAMi ...: <why>` on stderr, then the last lines of the log.
set -euo pipefail

HAMI_MODULE=github.com/Project-HAMi/HAMi
HAMI_RELEASE=v2.10.0
# The commit of tag v2.10.0 (2026-08-21T06:20:39Z, 4707fb02c91c545bc7343ce26dba4c32919f9a3e).
HAMI_PSEUDO=${GS_HAMI_PSEUDO:-v0.0.0-20260821062039-4707fb02c91c}
if [[ ! $HAMI_PSEUDO =~ ^v[0-9]+\.[0-9]+\.[0-9]+-[0-9.]*[0-9]{14}-[0-9a-f]{12}$ ]]; then
  echo "peer-hami.sh: GS_HAMI_PSEUDO must be a Go pseudo-version, got '$HAMI_PSEUDO'" >&2
  exit 2
fi
BUILD_P=${GS_GO_BUILD_P:-2}

cache=${GS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpusched-peers}
if [[ $HAMI_PSEUDO == v0.0.0-20260821062039-4707fb02c91c ]]; then
  dir=$cache/hami-$HAMI_RELEASE
else
  dir=$cache/hami-$HAMI_PSEUDO
fi
bin=$dir/bin/hami-scheduler

mode=build
for arg in "$@"; do
  case $arg in
    --check | --version) mode=${arg#--} ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "peer-hami.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

case $mode in
  version)
    echo "hami $HAMI_RELEASE $HAMI_MODULE@$HAMI_PSEUDO"
    exit 0
    ;;
  check)
    if [[ -x $bin ]]; then
      echo "$bin"
      exit 0
    fi
    echo "HAMi scheduler not built ($bin missing): run scripts/peer-hami.sh" >&2
    exit 1
    ;;
esac

log() { printf 'peer-hami.sh: %s\n' "$*" >&2; }
logfile=
cannot() {
  printf 'peer-hami.sh: cannot build HAMi %s (%s@%s): %s\n' "$HAMI_RELEASE" "$HAMI_MODULE" \
    "$HAMI_PSEUDO" "$*" >&2
  if [[ -n $logfile && -s $logfile ]]; then
    echo "peer-hami.sh: last lines of $logfile:" >&2
    tail -n 15 "$logfile" >&2
  fi
  exit 77
}

if [[ -x $bin ]]; then
  log "HAMi $HAMI_RELEASE: already built"
  echo "$bin"
  exit 0
fi

# shellcheck source=go-toolchain.sh
source "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh"
find_go
if [[ -z $go_cmd ]]; then
  cannot "no Go toolchain (looked at \$GS_GO, \`go\` on PATH, /usr/local/go/bin/go)"
fi

mkdir -p "$cache/go/build" "$cache/go/mod" "$cache/tmp" "$dir"
export GOCACHE=$cache/go/build GOMODCACHE=$cache/go/mod GOFLAGS=-mod=mod CGO_ENABLED=0
export GOTMPDIR=$cache/tmp
unset GOPATH
export GOWORK=off
# HAMi's go.mod asks for a newer patch of Go than this toolchain may be: let Go say so
# instead of silently downloading another toolchain.
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

# One build at a time per cache (shared with peers.sh's lock file).
exec 9>"$cache/.lock-hami"
if command -v flock >/dev/null 2>&1; then
  if ! flock -n 9; then
    log "another peer-hami.sh is building in $cache; waiting for it"
    flock 9
  fi
fi
if [[ -x $bin ]]; then
  echo "$bin"
  exit 0
fi

logfile=$dir/build.log
: >"$logfile"
log "go: $("$go_cmd" version) ($go_cmd)"
log "building $HAMI_MODULE@$HAMI_PSEUDO (release $HAMI_RELEASE) into $dir/bin (log: $logfile)"
start=$SECONDS

# The module's own go.mod: its go line and replace directives (replace directives of a
# dependency are ignored, so the helper module repeats those that point at other modules).
if ! modjson=$("$go_cmd" mod download -json "$HAMI_MODULE@$HAMI_PSEUDO" 2>>"$logfile"); then
  printf '%s\n' "$modjson" >>"$logfile"
  why=$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$modjson" | head -1)
  why=${why//\\n\\t/ }
  logfile=
  cannot "the module proxy ($("$go_cmd" env GOPROXY)) does not serve it: ${why:-see the log}"
fi
modfile=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$modjson")
[[ -n $modfile && -f $modfile ]] || cannot "go mod download gave no go.mod"
gover=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$modfile" | head -1)

rm -rf "$dir/src" "$dir/bin.tmp"
mkdir -p "$dir/src" "$dir/bin.tmp"
{
  printf 'module gpusched.test/peers-hami\n\ngo %s\n\nrequire %s %s\n' "${gover:-1.25}" \
    "$HAMI_MODULE" "$HAMI_PSEUDO"
  # replace lines that name a module version (not ./local paths, which are HAMi's own folders)
  awk '/^replace \(/{r=1;next} r&&/^\)/{r=0} r&&$0!~/=> \.\.?\//{print "replace " $0}
       /^replace [^(]/ && $0!~/=> \.\.?\//{print}' "$modfile"
} >"$dir/src/go.mod"

if ! (cd "$dir/src" && "$go_cmd" mod download "$HAMI_MODULE" >>"$logfile" 2>&1 &&
  "$go_cmd" get "$HAMI_MODULE/cmd/scheduler@$HAMI_PSEUDO" >>"$logfile" 2>&1); then
  cannot "resolving its dependencies failed"
fi
ldflags="-s -w -X $HAMI_MODULE/pkg/version.version=$HAMI_RELEASE"
if ! (cd "$dir/src" && "$go_cmd" build -p "$BUILD_P" -trimpath -ldflags "$ldflags" \
  -o "$dir/bin.tmp/hami-scheduler" "$HAMI_MODULE/cmd/scheduler" >>"$logfile" 2>&1); then
  cannot "go build $HAMI_MODULE/cmd/scheduler failed"
fi
rm -rf "$dir/bin"
mv "$dir/bin.tmp" "$dir/bin"
log "built in $((SECONDS - start))s"
echo "$bin"
