#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (build-fuzz/), then runs every target for MINUTES minutes, one after
# another, from the committed seed corpus (tests/fuzz/corpus/<target>, read only) and the corpus
# this machine has grown (build-fuzz/corpus/<target>, where new inputs go).
#   Usage: scripts/fuzz.sh MINUTES        (CI's fuzz smoke stage runs scripts/fuzz.sh 1)
# A crash, a sanitizer report, a broken invariant (the harness aborts), an input that runs past
# 25 s or a single allocation above 2 GiB fails the run; the reproducer is written to
# build-fuzz/artifacts/<target>-*, and `build-fuzz/tests/fuzz/<target> FILE` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:?usage: scripts/fuzz.sh MINUTES}
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes >= 1)) || { echo "MINUTES must be a positive integer" >&2; exit 2; }
targets=(fuzz_forward fuzz_quantize fuzz_spectral fuzz_scale_state fuzz_predict)

FP8ATTN_BUILD_TARGETS="${targets[*]}" bash scripts/build.sh build-fuzz \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFP8ATTN_SANITIZE=address,undefined -DFP8ATTN_BUILD_FUZZERS=ON -DFP8ATTN_BUILD_TESTS=OFF \
  -DFP8ATTN_BUILD_TOOLS=OFF -DFP8ATTN_BUILD_CUDA=OFF

mkdir -p build-fuzz/artifacts
for t in "${targets[@]}"; do
  echo "== fuzzing $t for $minutes min"
  mkdir -p "build-fuzz/corpus/$t"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/$t" -max_total_time=$((minutes * 60)) -timeout=25 -rss_limit_mb=4096 \
    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t"
done
echo "fuzzing: every target ran $minutes min without a finding"
