#!/usr/bin/env bash
# Builds and runs every test:
#   1. the Release build, with the sm_90a kernels and their static checks when nvcc is present:
#      every ctest test (unit, numerics, emulator, ABI, install, Python, docs, exhaustive);
#   2. the CPU code under AddressSanitizer + UndefinedBehaviorSanitizer (all but the exhaustive
#      sweep, the full-size accuracy studies, the install and docs checks, the sm_90a static
#      checks and the spectral pytest modules; the Python host test runs here too, with the ASan
#      runtime preloaded);
#   3. the concurrency tests (label tsan: shared plans, the scale state, the emulator spreading
#      CTAs over host threads) under ThreadSanitizer;
#   4. the host bindings (Python, Rust, Go) and the ABI baseline, against an installed prefix;
#   5. the fuzz smoke stage: each libFuzzer target of tests/fuzz for 30 s under ASan + UBSan
#      (built with clang; scripts/fuzz.sh runs longer campaigns).
# `scripts/run-tests.sh --list` installs and configures stage 1 exactly as a full run does, then
# only lists its tests (ctest -N) and fails when there are none (tests/readme uses it).
# Every ctest call fails when it finds no tests (--no-tests=error): a stage that silently runs
# nothing is a failure, not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
# Each stage prints its wall time (CI keeps the whole run under 45 minutes on 2 cores).
stage_began=$SECONDS
stage_done() { echo "== stage $1 took $((SECONDS - stage_began)) s (total $SECONDS s)"; stage_began=$SECONDS; }

if [ "${1:-}" = "--list" ]; then
  FP8ATTN_CONFIGURE_ONLY=1 bash scripts/build.sh build
  # NOTE: ctest -N ignores --no-tests=error, so the count is checked here.
  ctest --test-dir build -N | tee /dev/stderr | grep -Eq '^Total Tests: [1-9]' || { echo "no tests" >&2; exit 1; }
  exit 0
fi

# The sanitizer builds (stages 2, 3 and scripts/fuzz.sh): -O1 and line tables only (-g1).
# NOTE: -O1 -g1 halves their compile time against RelWithDebInfo's -O2 -g (measured on an emulator
# test under ASan + UBSan: 26 s -> 14 s) and still gives file:line in every sanitizer report; -O1
# is what the sanitizers' own documentation suggests. The tests run a little slower; the builds
# were the larger part of CI.
export FP8ATTN_SANITIZER_FLAGS="-O1 -g1 -DNDEBUG"
sanitized=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$FP8ATTN_SANITIZER_FLAGS"
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$FP8ATTN_SANITIZER_FLAGS")

echo "== 1/5 Release build and every test"
bash scripts/build.sh build
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"

stage_done 1
echo "== 2/5 AddressSanitizer + UndefinedBehaviorSanitizer"
bash scripts/build.sh build-asan "${sanitized[@]}" -DFP8ATTN_SANITIZE=address,undefined \
  -DFP8ATTN_BUILD_TOOLS=OFF -DFP8ATTN_BUILD_CUDA=OFF
# NOTE: the accuracy studies at full size (Table 3's outliers, the sink-underflow and stabilized-
# bias studies, the accumulator and P-collapse studies) are left out here: they were about 40 % of
# this stage's test time and run no code that the smaller engine, quantizer and oracle tests do not
# also run under the sanitizers. Stage 1 runs them.
asan_skip='sm90a|spectral_py|^OutlierRmse\.|^SinkUnderflow\.|^Table3Reduced\.|^StabilizedBiasStudy\.|^AccumulatorStudy\.|^PCollapseStudy\.'
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" -LE 'exhaustive|install|docs|readme|portability|emu_matrix' -E "$asan_skip"

stage_done 2
echo "== 3/5 ThreadSanitizer (concurrency tests)"
# NOTE: only the test executables that carry the tsan label are built here.
FP8ATTN_BUILD_TARGETS="test_concurrent_forward test_scale_state_threads test_training_state_threads test_emu_runtime test_gemm_emulated test_fp8_fwd_emu_concurrent" \
  bash scripts/build.sh build-tsan "${sanitized[@]}" -DFP8ATTN_SANITIZE=thread \
  -DFP8ATTN_BUILD_TOOLS=OFF -DFP8ATTN_BUILD_CUDA=OFF
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure --no-tests=error -j"$jobs" -L tsan

stage_done 3
echo "== 4/5 Host bindings (Python, Rust, Go) and the ABI baseline, against the installed tree"
bash scripts/test-bindings.sh build-bindings

stage_done 4
echo "== 5/5 fuzz smoke (libFuzzer, ASan + UBSan, 30 s per target)"
# NOTE: 30 s per target keeps CI under 45 minutes on 2 cores; every reproducer a run finds joins
# tests/fuzz/corpus, so each later smoke run starts from it. scripts/fuzz.sh MINUTES runs longer.
FP8ATTN_FUZZ_SECONDS=30 bash scripts/fuzz.sh 1
stage_done 5
