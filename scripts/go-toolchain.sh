# go-toolchain.sh - sourced by scripts/peers.sh and scripts/peer-hami.sh (not run): find_go
# sets go_cmd to a Go toolchain that answers `go version`, looked for as $GS_GO, `go` on
# PATH, then /usr/local/go/bin/go; go_cmd is empty when none works.
find_go() {
  go_cmd=${GS_GO:-}
  if [[ -z $go_cmd ]]; then
    if command -v go >/dev/null 2>&1; then
      go_cmd=$(command -v go)
    elif [[ -x /usr/local/go/bin/go ]]; then
      go_cmd=/usr/local/go/bin/go
    fi
  fi
  if [[ -n $go_cmd ]] && ! "$go_cmd" version >/dev/null 2>&1; then
    go_cmd=
  fi
}
