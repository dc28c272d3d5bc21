#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (build-fuzz/), then runs every target for MINUTES minutes, as many at
# once as there are cores (FP8ATTN_FUZZ_JOBS overrides), from the committed seed corpus (tests/fuzz/corpus/<target>, read only) and the corpus
# this machine has grown (build-fuzz/corpus/<target>, where new inputs go).
#   Usage: scripts/fuzz.sh MINUTES        (CI's fuzz smoke stage runs scripts/fuzz.sh 1)
# A crash, a sanitizer report, a broken invariant (the harness aborts), an input that runs past
# 25 s or a single allocation above 2 GiB fails the run; the reproducer is written to
# build-fuzz/artifacts/<target>-*, and `build-fuzz/tests/fuzz/<target> FILE` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:?usage: scripts/fuzz.sh MINUTES}
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes >= 1)) || { echo "MINUTES must be a positive integer" >&2; exit 2; }
# FP8ATTN_FUZZ_SECONDS, when set, replaces MINUTES with a budget in seconds (CI's smoke stage).
seconds=${FP8ATTN_FUZZ_SECONDS:-$((minutes * 60))}
[[ $seconds =~ ^[0-9]+$ ]] && ((seconds >= 1)) || { echo "FP8ATTN_FUZZ_SECONDS must be a positive integer" >&2; exit 2; }
# -O1 -g1 as the sanitizer stages of scripts/run-tests.sh (which exports them), -O2 -g otherwise.
flags=${FP8ATTN_SANITIZER_FLAGS:-"-O2 -g -DNDEBUG"}
targets=(fuzz_forward fuzz_paged_forward fuzz_quantize fuzz_spectral fuzz_scale_state fuzz_predict fuzz_combine
         fuzz_kv_append)

FP8ATTN_BUILD_TARGETS="${targets[*]}" bash scripts/build.sh build-fuzz \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" \
  -DFP8ATTN_SANITIZE=address,undefined -DFP8ATTN_BUILD_FUZZERS=ON -DFP8ATTN_BUILD_TESTS=OFF \
  -DFP8ATTN_BUILD_TOOLS=OFF -DFP8ATTN_BUILD_CUDA=OFF

mkdir -p build-fuzz/artifacts build-fuzz/logs
# One target's run; its output goes to build-fuzz/logs/<target>.log, and <target>.passed marks success.
fuzz_one() {
  local t=$1
  rm -f "build-fuzz/logs/$t.passed"
  mkdir -p "build-fuzz/corpus/$t"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
      -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
      "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"build-fuzz/logs/$t.log" 2>&1; then
    touch "build-fuzz/logs/$t.passed"
  fi
}
# NOTE: in parallel because each run is a fixed time budget: on CI's 2 cores the five targets take
# three rounds of MINUTES instead of five, with the same fuzzing time per target.
parallel=${FP8ATTN_FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  echo "== fuzzing $t for $seconds s"
  fuzz_one "$t" &
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
done
wait
failed=()
for t in "${targets[@]}"; do
  if [[ -f "build-fuzz/logs/$t.passed" ]]; then
    echo "== $t: $(grep -E '^(Done|stat::number_of_executed_units)' "build-fuzz/logs/$t.log" | tr '\n' ' ')"
  else
    failed+=("$t")
    echo "== $t FAILED (build-fuzz/logs/$t.log):"
    tail -60 "build-fuzz/logs/$t.log"
  fi
done
((${#failed[@]} == 0)) || { echo "fuzzing: findings in ${failed[*]} (reproducers in build-fuzz/artifacts)"; exit 1; }
echo "fuzzing: every target ran $seconds s without a finding"
