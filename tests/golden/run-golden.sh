#!/usr/bin/env bash
# run-golden.sh - run one golden (scenario in, expected output out) case of the gpusched CLI.
#
# Usage: run-golden.sh <gpusched-binary> <case-dir>      (CTest calls it once per case)
#
# A case directory holds:
#   cmd           one line: the arguments after `gpusched`. Split like a shell would split
#                 words ('single', "double" quotes and backslashes work) but with NO expansion
#                 of any kind: no $VARS, globs, ~ or command substitution. Relative paths are
#                 relative to the case directory, which is the current directory of the run.
#   stdin         optional: fed to standard input (else /dev/null)
#   env           optional: the environment of the command, one change a line: NAME=VALUE
#                 sets NAME (no expansion), -NAME removes it (e.g. HOME=/nonexistent and
#                 -KUBECONFIG for a run that must not find a cluster)
#   expected.out  exact expected standard output
#   expected.err  optional: exact expected standard error (when absent, stderr is not compared)
#   expected.rc   optional: expected exit status (default 0)
# The command runs with LC_ALL=C and TZ=UTC, and is killed after GS_GOLDEN_TIMEOUT seconds
# (default 60). On any mismatch a unified diff is printed and the exit status is 1.
#
# GS_GOLDEN_UPDATE=1 rewrites the expectations from the actual run instead of comparing:
# expected.out and expected.rc always; expected.err when it already exists, or when the case
# is new (no expected.out yet) and the command wrote to stderr. Review the result with a diff
# before committing, and use the normal build: sanitizer reports must not become expectations.
set -euo pipefail

die() {
  printf 'run-golden: %s\n' "$*" >&2
  exit 2
}

(($# == 2)) || die "usage: run-golden.sh <gpusched-binary> <case-dir>"
binary=$1
case_dir=$2

[[ -d $case_dir ]] || die "no such case directory: $case_dir"
case_dir=$(cd "$case_dir" && pwd)
case_name=$(basename "$case_dir")
case $binary in
  /*) ;;
  */*) binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary") ;;
  *) binary=$(command -v "$binary") || die "binary not found: $binary" ;;
esac
[[ -x $binary ]] || die "not an executable: $binary"

timeout_seconds=${GS_GOLDEN_TIMEOUT:-60}
[[ $timeout_seconds =~ ^[1-9][0-9]*$ ]] || die "GS_GOLDEN_TIMEOUT must be a positive integer"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpusched-golden.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# --- the command line -------------------------------------------------------------------
[[ -f $case_dir/cmd ]] || die "$case_name: missing cmd"
command_line=$(<"$case_dir/cmd")
[[ $command_line != *$'\n'* ]] || die "$case_name/cmd: must be a single line"
args=()
if [[ -n ${command_line//[[:space:]]/} ]]; then
  # xargs implements shell-like quoting without ever evaluating anything.
  printf '%s\n' "$command_line" | xargs printf '%s\0' >"$scratch/args" 2>"$scratch/xargs.err" ||
    die "$case_name/cmd: cannot split into words: $(<"$scratch/xargs.err")"
  mapfile -d '' -t args <"$scratch/args"
fi

stdin_file=/dev/null
if [[ -f $case_dir/stdin ]]; then
  stdin_file=$case_dir/stdin
fi

# --- run ----------------------------------------------------------------------------------
actual_rc=0
(
  cd "$case_dir" || exit 125
  if [[ -f env ]]; then
    while IFS= read -r line || [[ -n $line ]]; do
      case $line in
        '' | '#'*) ;;
        -*) unset "${line#-}" ;;
        *=*) export "${line%%=*}=${line#*=}" ;;
        *) printf 'run-golden: %s/env: expected NAME=VALUE or -NAME: %s\n' "$case_name" "$line" >&2; exit 125 ;;
      esac
    done <env
  fi
  LC_ALL=C TZ=UTC exec timeout --kill-after=5 "$timeout_seconds" "$binary" "${args[@]}"
) <"$stdin_file" >"$scratch/stdout" 2>"$scratch/stderr" || actual_rc=$?
if ((actual_rc == 124)); then
  cat "$scratch/stderr" >&2
  printf 'run-golden: %s: timed out after %ss\n' "$case_name" "$timeout_seconds" >&2
  exit 1
fi

# --- update mode --------------------------------------------------------------------------
update_file() { # SOURCE DEST: copy only when the content differs, so mtimes stay meaningful
  if ! cmp -s "$1" "$2"; then
    cp "$1" "$2"
    printf 'run-golden: %s: wrote %s\n' "$case_name" "$(basename "$2")"
  fi
}

if [[ ${GS_GOLDEN_UPDATE:-0} == 1 ]]; then
  new_case=0
  [[ -f $case_dir/expected.out ]] || new_case=1
  update_file "$scratch/stdout" "$case_dir/expected.out"
  if [[ -f $case_dir/expected.err ]] || { ((new_case)) && [[ -s $scratch/stderr ]]; }; then
    update_file "$scratch/stderr" "$case_dir/expected.err"
  fi
  printf '%d\n' "$actual_rc" >"$scratch/rc"
  update_file "$scratch/rc" "$case_dir/expected.rc"
  exit 0
fi

# --- compare ------------------------------------------------------------------------------
[[ -f $case_dir/expected.out ]] ||
  die "$case_name: missing expected.out (create it with GS_GOLDEN_UPDATE=1)"
expected_rc=0
if [[ -f $case_dir/expected.rc ]]; then
  expected_rc=$(tr -d '[:space:]' <"$case_dir/expected.rc")
  [[ $expected_rc =~ ^[0-9]+$ ]] || die "$case_name/expected.rc: not a number: '$expected_rc'"
fi

status=0
if ! diff -u --label "$case_name/expected.out" --label "$case_name/actual stdout" \
  "$case_dir/expected.out" "$scratch/stdout"; then
  status=1
fi
if [[ -f $case_dir/expected.err ]]; then
  if ! diff -u --label "$case_name/expected.err" --label "$case_name/actual stderr" \
    "$case_dir/expected.err" "$scratch/stderr"; then
    status=1
  fi
fi
if ((actual_rc != 10#$expected_rc)); then
  printf '%s: exit status: expected %d, got %d\n' "$case_name" "$((10#$expected_rc))" "$actual_rc"
  status=1
fi
if ((status != 0)) && [[ ! -f $case_dir/expected.err && -s $scratch/stderr ]]; then
  printf -- '--- %s: stderr (not compared) ---\n' "$case_name"
  cat "$scratch/stderr"
fi
if ((status != 0)); then
  printf 'run-golden: %s: FAILED (to accept the new output: GS_GOLDEN_UPDATE=1)\n' "$case_name"
fi
exit "$status"
