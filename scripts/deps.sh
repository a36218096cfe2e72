#!/usr/bin/env bash
# deps.sh - idempotent installer for gpusched's build and test dependencies (Debian 12).
#
# Usage: scripts/deps.sh [GROUP...]        (no GROUP means "core")
#
# Groups and their Debian packages are the PACKAGES table below; docs/building.md says why
# each package is needed. For every requested group a cheap probe (a command, a pkg-config
# module, a one-line libFuzzer link) decides whether it is already satisfied. When every
# group is satisfied the script does nothing and exits 0. Otherwise:
#   - as root:     apt-get update, then a non-interactive install of the missing groups'
#                  packages, then the probes again (exit 1 if anything is still missing);
#   - as non-root: print the exact apt-get commands to run and exit 1.
set -euo pipefail

declare -A PACKAGES=(
  [core]="build-essential cmake pkg-config libfyaml-dev libcmocka-dev libcurl4-gnutls-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler"
  [fuzz]="clang libclang-rt-14-dev"
  [http]="libmicrohttpd-dev libgnutls28-dev gnutls-bin curl"
  [browser]="chromium"
  [monitor]="prometheus"
  [grpc-peer]="python3-grpcio python3-grpc-tools"
)

say() { printf 'deps.sh: %s\n' "$*" >&2; }

have_commands() {
  local name
  for name in "$@"; do
    command -v "$name" >/dev/null 2>&1 || return 1
  done
}

have_pkg_config_modules() {
  command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$@"
}

# clang alone is not enough: -fsanitize=fuzzer needs the compiler-rt archives from
# libclang-rt-14-dev, so link a trivial fuzz target to prove the whole chain works.
have_libfuzzer() {
  have_commands clang || return 1
  local scratch rc=0
  scratch=$(mktemp -d) || return 1
  printf '%s\n' \
    'int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size);' \
    'int LLVMFuzzerTestOneInput(const unsigned char *data, unsigned long size)' \
    '{ (void)data; (void)size; return 0; }' >"$scratch/probe.c"
  clang -fsanitize=fuzzer,address,undefined "$scratch/probe.c" -o "$scratch/probe" \
    >/dev/null 2>&1 || rc=1
  rm -rf "$scratch"
  return "$rc"
}

group_satisfied() {
  case $1 in
    core) have_commands cc make cmake pkg-config protoc-c &&
      have_pkg_config_modules libfyaml cmocka libcurl libnghttp2 libprotobuf-c ;;
    fuzz) have_libfuzzer ;;
    http) have_pkg_config_modules libmicrohttpd gnutls && have_commands certtool curl ;;
    browser) have_commands chromium ;;
    monitor) have_commands promtool prometheus ;;
    # Debian's python3 (the kubelet peer of tests/agent/ runs under /usr/bin/python3)
    grpc-peer) /usr/bin/python3 -c 'import grpc, grpc_tools.protoc' >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

groups=("$@")
if ((${#groups[@]} == 0)); then
  groups=(core)
fi
for group in "${groups[@]}"; do
  if [[ -z ${PACKAGES[$group]+set} ]]; then
    say "unknown group '$group' (known: ${!PACKAGES[*]})"
    exit 2
  fi
done

missing_groups=()
for group in "${groups[@]}"; do
  group_satisfied "$group" || missing_groups+=("$group")
done
if ((${#missing_groups[@]} == 0)); then
  exit 0
fi

packages=()
for group in "${missing_groups[@]}"; do
  read -r -a group_packages <<<"${PACKAGES[$group]}"
  packages+=("${group_packages[@]}")
done
say "missing: ${missing_groups[*]}"

if [[ $(id -u) != 0 ]]; then
  say "run these commands, then try again:"
  printf '  sudo apt-get update\n' >&2
  printf '  sudo apt-get install -y --no-install-recommends %s\n' "${packages[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here; install the equivalents of: ${packages[*]}"
  exit 1
fi

say "installing: ${packages[*]}"
apt-get update </dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}" </dev/null

still_missing=()
for group in "${missing_groups[@]}"; do
  group_satisfied "$group" || still_missing+=("$group")
done
if ((${#still_missing[@]} != 0)); then
  say "still missing after install: ${still_missing[*]}"
  exit 1
fi
