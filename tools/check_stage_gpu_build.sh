#!/usr/bin/env bash
# Checks scripts/stage-gpu-build.sh on a CUDA build: the staged copy holds the executable of every
# test labelled `cuda`, libfp8attn_cuda, the two benchmarks run-gpu-checks.sh runs, and a run.sh
# that parses.
# Usage: tools/check_stage_gpu_build.sh BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
bash "$root/scripts/stage-gpu-build.sh" "$build" "$out/staged"
bash -n "$out/staged/run.sh"
executables=$(ctest --test-dir "$build" -N -L cuda --show-only=json-v1 | python3 -c '
import json, sys
print("\n".join(sorted({t["command"][0] for t in json.load(sys.stdin)["tests"]})))')
[ -n "$executables" ] || { echo "no cuda tests in $build"; exit 1; }
for e in $executables; do
  [ -x "$out/staged/build/$(realpath --relative-to="$build" "$e")" ] || { echo "not staged: $e"; exit 1; }
done
[ -e "$out/staged/build/capi/libfp8attn_cuda.so" ] || { echo "not staged: libfp8attn_cuda.so"; exit 1; }
for bench in fp8attn_cuda_bench fp8attn_decode_cuda_bench; do
  [ -x "$out/staged/build/tools/cuda_bench/$bench" ] || { echo "not staged: $bench"; exit 1; }
done
echo "staged and checked: $(echo "$executables" | wc -l) test executables"
