#!/usr/bin/env bash
# Runs every test that needs a GPU, on the day an sm_90 GPU is present: builds with the sm_90a
# kernels and runs the ctest tests labelled `cuda` (the GEMM, the quantizer and the spectral
# norms' cuBLASLt path on the device, libfp8attn_cuda through the C API: quantizer, spectral norms,
# graph capture, two streams), then the sm_90a static checks (the kernels and libfp8attn_cuda.so),
# then the benchmarks (tools/cuda_bench: FA3's grid against a cuBLASLt FP8 GEMM, its table in
# bench-results/cuda_fa3_grid.md; the decode path against a device copy and the spec bandwidth, in
# bench-results/cuda_decode.txt), and writes one report (every cuda test's output, verbose) to gpu-checks-report.txt. Without a GPU the `cuda` tests skip and say why; this script then fails,
# so that it is never mistaken for a GPU run. The GEMM tests leave their operands and the GPU's
# outputs in gpu-dumps/ (FP8ATTN_GPU_DUMP_DIR), for fitting the tensor core's addition offline.
# FP8ATTN_GPU_PREBUILT=DIR uses a CUDA build made on another machine with the same CUDA major
# version (a GPU machine without a package registry or the time to compile): no install, no
# build, and no static checks (they read the compiler's output and ran where DIR was built).
# The forward's bench also runs with V given keys-contiguous (no V transpose: the transpose's
# share is the difference) and for BF16 inputs, both at head_dim 128 (bench-results/
# cuda_fa3_grid_v_keys_contiguous.md, cuda_fa3_grid_bf16.md), and where Nsight Compute reads the
# hardware counters, one `ncu --clock-control none` pass on the head_dim-128 16k non-causal E4M3
# kernel (shared-memory bank conflicts, issue slots, tensor pipe: bench-results/ncu_fwd_hd128_16k.txt;
# a failing ncu is reported, not a failed run: the device library's KINDS.md has runtimes without counters).
# Each test has FP8ATTN_GPU_TEST_TIMEOUT seconds (default 120), so that a kernel that hangs
# costs one test, not the run; the benchmarks have FP8ATTN_GPU_BENCH_TIMEOUT (default 300; 120
# for each of the two head_dim-128 runs and for ncu) and FP8ATTN_GPU_DECODE_BENCH_TIMEOUT (default 180).
set -euo pipefail
cd "$(dirname "$0")/.."
report=gpu-checks-report.txt
build=${FP8ATTN_GPU_PREBUILT:-build-gpu}
timeout=${FP8ATTN_GPU_TEST_TIMEOUT:-120}
if [ -z "${FP8ATTN_GPU_PREBUILT:-}" ]; then
  bash scripts/install-deps.sh
  bash scripts/build.sh build-gpu -DFP8ATTN_BUILD_CUDA=ON
  others="sm90a|cuda_backend"
else
  others='^cuda_backend\.'
fi
{
  echo "== fp8attn GPU checks, $(date -u)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv || echo "nvidia-smi: not found"
  command -v nvidia-smi >/dev/null && nvidia-smi | head -4 || true
  echo "nvcc: $(command -v nvcc >/dev/null && nvcc --version | tail -1 || echo 'not found')"
} | tee "$report"
status=0
# The GPU's GEMM outputs with their operands, for fitting models of the FP8 tensor core's addition
# without a GPU (tests/emu/test_gemm_cuda.cpp, docs/gpu_runs/gpu_run_h200.md).
export FP8ATTN_GPU_DUMP_DIR="$PWD/gpu-dumps"
mkdir -p "$FP8ATTN_GPU_DUMP_DIR"
ctest --test-dir "$build" --no-tests=error -V --timeout "$timeout" -L cuda 2>&1 | tee -a "$report" || status=1
ctest --test-dir "$build" --no-tests=error --output-on-failure --timeout "$timeout" -R "$others" 2>&1 | tee -a "$report" || status=1
echo "== benchmark (tools/cuda_bench/fa3_grid_bench.cpp)" | tee -a "$report"
timeout "${FP8ATTN_GPU_BENCH_TIMEOUT:-300}" "$build"/tools/cuda_bench/fp8attn_cuda_bench --out bench-results/cuda_fa3_grid.md 2>&1 | tee -a "$report" || status=1
bench_hd128() {  # NAME ARGS...: the forward's bench at head_dim 128, into bench-results/NAME.md
  local name=$1
  shift
  echo "== benchmark, head_dim 128: $*" | tee -a "$report"
  timeout "${FP8ATTN_GPU_BENCH_TIMEOUT:-120}" "$build"/tools/cuda_bench/fp8attn_cuda_bench --head-dims 128 \
    --out "bench-results/$name.md" "$@" 2>&1 | tee -a "$report" || status=1
}
bench_hd128 cuda_fa3_grid_v_keys_contiguous --v-keys-contiguous
bench_hd128 cuda_fa3_grid_bf16 --dtype bf16
# NOTE: one kernel launch profiled (the bench's fourth forward: after its three warm-up calls), with
# the sections that hold shared-memory bank conflicts (MemoryWorkloadAnalysis_Tables), issue-slot
# use (SchedulerStats) and the tensor pipe's activity (ComputeWorkloadAnalysis).
echo "== Nsight Compute, E4M3 head_dim 128, 16k, non-causal" | tee -a "$report"
if command -v ncu >/dev/null; then
  timeout "${FP8ATTN_GPU_BENCH_TIMEOUT:-120}" ncu --clock-control none --kernel-name regex:attention_fwd_kernel \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats \
    --section WarpStateStats --section LaunchStats --section Occupancy \
    "$build"/tools/cuda_bench/fp8attn_cuda_bench --head-dims 128 --seqlens 16384 --causal 0 --reps 1 \
    --out bench-results/ncu_bench_hd128_16k.md >bench-results/ncu_fwd_hd128_16k.txt 2>&1 ||
    echo "ncu failed (exit $?): bench-results/ncu_fwd_hd128_16k.txt says why" | tee -a "$report"
  tail -n 80 bench-results/ncu_fwd_hd128_16k.txt | tee -a "$report"
else
  echo "ncu: not on the PATH" | tee -a "$report"
fi
# NOTE: the decode bench's caches up to 16 GiB (--max-gib): the 128k-key rows at batch 64 are
# skipped with a note, so that the run fits a short lease.
mkdir -p bench-results
echo "== decode benchmark (tools/cuda_bench/decode_bench.cpp)" | tee -a "$report"
timeout "${FP8ATTN_GPU_DECODE_BENCH_TIMEOUT:-180}" "$build"/tools/cuda_bench/fp8attn_decode_cuda_bench --reps 5 \
  --max-gib 16 2>&1 | tee bench-results/cuda_decode.txt | tee -a "$report" || status=1
if grep -q "needs an sm_90 GPU" "$report"; then
  echo "== GPU tests skipped: no sm_90 GPU here (see the reasons above)" | tee -a "$report"
  exit 1
fi
echo "== report: $report"
exit "$status"
