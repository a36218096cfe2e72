#!/usr/bin/env bash
# device-check-fake-test.sh - scripts/device-check.sh without a GPU, each case asserted:
#   1. no nvidia-smi and no fake NVML: exit 77 with "NO GPU CHECKED" (never a pass);
#   2. dry run (DEVICE_CHECK_FAKE_NVML + GS_FAKE_NVML, nvidia-smi's answers derived from the
#      scenario: 2 whole H100s and an A100 with 3 MIG devices): exit 0, "PASSED", the
#      report in $OUT/device-check.txt with the temperature, memory and power comparisons;
#   3. the same with DEVICE_CHECK_FAKE_SKEW=1 (a UUID and a temperature differ): exit 1,
#      the UUID and DCGM_FI_DEV_GPU_TEMP named in FAIL lines.
# Usage: device-check-fake-test.sh GPUSCHED FAKE_NVML_LIBRARY
set -u
[ $# -eq 2 ] || { echo "usage: $0 GPUSCHED FAKE_NVML_LIBRARY" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=$HERE/../../scripts/device-check.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/gs-device-check-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
ok() { if [ "$1" = 0 ]; then echo "ok    $2"; else echo "FAIL  $2"; failed=1; fi; }

cat >"$work/node.scn" <<'SCN'
driver 570.86.15
cuda 12080
gpu uuid=GPU-0d1e2f30-0000-4000-8000-000000000001 memory=81559 pci=00000000:1B:00.0 minor=0 cc=9.0 mig=0 util=35 fbused=40960 temp=47 power=312500 name=NVIDIA H100 80GB HBM3
gpu uuid=GPU-0d1e2f30-0000-4000-8000-000000000002 memory=81559 pci=00000000:43:00.0 minor=1 cc=9.0 mig=0 util=0 fbused=1 fbreserved=512 temp=33 power=71000 name=NVIDIA H100 80GB HBM3
gpu uuid=GPU-0d1e2f30-0000-4000-8000-000000000003 memory=81920 pci=00000000:9C:00.0 minor=2 cc=8.0 mig=1 fbused=20000 temp=41 power=90000 name=NVIDIA A100-SXM4-80GB
mig uuid=MIG-0d1e2f30-0003-5000-8000-000000000001 gi=1 ci=0 memory=40192 gi-slices=3 ci-slices=3 sms=42 ce=3 dec=2
mig uuid=MIG-0d1e2f30-0003-5000-8000-000000000002 gi=2 ci=0 memory=40192 gi-slices=3 ci-slices=3 sms=42 ce=3 dec=2
SCN

# 1. no GPU
out=$(env -u DEVICE_CHECK_FAKE_NVML DEVICE_CHECK_SMI=/nonexistent/nvidia-smi \
      DEVICE_CHECK_GPUSCHED="$1" "$SCRIPT" 2>&1); rc=$?
[ $rc = 77 ] && grep -q "NO GPU CHECKED" <<<"$out"; ok $? "no GPU: exit 77 and says so (rc $rc)"

# 2. dry run passes
mkdir "$work/out"
out=$(OUT="$work/out" DEVICE_CHECK_FAKE_NVML="$2" GS_FAKE_NVML="$work/node.scn" \
      DEVICE_CHECK_GPUSCHED="$1" "$SCRIPT" 2>&1); rc=$?
[ $rc = 0 ] && grep -q "^device-check: PASSED" <<<"$out"; ok $? "dry run: exit 0, PASSED (rc $rc)"
rep=$work/out/device-check.txt
[ -f "$rep" ] && grep -q "^PASS  GPU 2: MIG devices 3g.40gb MIG-0d1e2f30-0003-5000-8000-000000000001" "$rep" \
  && grep -q "^PASS  scrape 2 GPU 0 DCGM_FI_DEV_POWER_USAGE = 312.5 W" "$rep" \
  && grep -q "^PASS  scrape 1 GPU 0 DCGM_FI_DEV_FB_USED = 40960 MiB" "$rep" \
  && grep -q "^PASS  scrape 1 GPU 1 DCGM_FI_DEV_GPU_TEMP = 33 C" "$rep"
ok $? "dry run: the report in \$OUT has the MIG, power, memory and temperature comparisons"
[ $failed = 0 ] || printf '%s\n' "$out"

# 3. skewed answers fail
out=$(DEVICE_CHECK_FAKE_SKEW=1 DEVICE_CHECK_FAKE_NVML="$2" GS_FAKE_NVML="$work/node.scn" \
      DEVICE_CHECK_GPUSCHED="$1" "$SCRIPT" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "^FAIL  GPU 0: UUID" <<<"$out" && grep -q "^FAIL  scrape 1 GPU 0 DCGM_FI_DEV_GPU_TEMP" <<<"$out" \
  && grep -q "^device-check: FAILED" <<<"$out"
ok $? "skewed nvidia-smi answers: exit 1 naming the UUID and the temperature (rc $rc)"
[ $failed = 0 ] || printf '%s\n' "$out"
exit $failed
