// Throughput of the CPU engine's attention backward (BF16) as a ratio to OpenBLAS sgemm on the
// same cores, measured in the same run (Google Benchmark), the sibling of engine_vs_sgemm.cpp.
// Backward FLOPs are counted as FlashAttention counts them: 2.5 × the forward's 4·heads·Sq·Sk·d
// (five products of the forward's size: S, dP, dV, dK, dQ), halved for causal; the engine
// performs exactly those five. sgemm FLOPs are 2·M·N·K at M = N = K = 2048. Both use every core.
// The table (sgemm_ratio.hpp) reports medians over --benchmark_repetitions.
#include "tools/bench/sgemm_ratio.hpp"
#include "tools/common/backward_runner.hpp"
#include "tools/common/forward_runner.hpp"

namespace {

using fp8attn::workloads::AttentionShape;

/// One backward per iteration through the C API; the forward (out, lse), the plan and the
/// workspace are made outside the timed loop.
void BM_backward(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(0));
  const int64_t seqlen = state.range(1);
  const bool causal = state.range(2) != 0;
  const AttentionShape shape{1, seqlen, seqlen, 2, 2, head_dim};
  const auto in = fp8attn::workloads::quantize(fp8attn::workloads::normal_inputs(shape, 11), FP8ATTN_DTYPE_BF16,
                                               fp8attn::workloads::ScaleGranularity::Unit);
  const auto dout = fp8attn::workloads::normal_bf16(static_cast<size_t>(seqlen * shape.heads_q * head_dim), 12);
  auto desc = fp8attn::workloads::make_desc(shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  desc.causal = causal;
  fp8attn::workloads::BackwardSession session(desc, shape, in, dout);
  session.forward();
  for (auto _ : state) session.backward();
  const double forward_flops = 4.0 * shape.heads_q * double(seqlen) * seqlen * head_dim * (causal ? 0.5 : 1.0);
  state.counters["FLOP/s"] = benchmark::Counter(2.5 * forward_flops, benchmark::Counter::kIsIterationInvariantRate);
}

/// The BF16 forward of the same shape, for the backward-to-forward time ratio (ideally 2.5).
void BM_forward(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(0));
  const int64_t seqlen = state.range(1);
  const bool causal = state.range(2) != 0;
  const AttentionShape shape{1, seqlen, seqlen, 2, 2, head_dim};
  const auto in = fp8attn::workloads::quantize(fp8attn::workloads::normal_inputs(shape, 11), FP8ATTN_DTYPE_BF16,
                                               fp8attn::workloads::ScaleGranularity::Unit);
  auto desc = fp8attn::workloads::make_desc(shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  desc.causal = causal;
  fp8attn::workloads::ForwardSession session(desc, shape, in);
  for (auto _ : state) session.run();
  const double forward_flops = 4.0 * shape.heads_q * double(seqlen) * seqlen * head_dim * (causal ? 0.5 : 1.0);
  state.counters["FLOP/s"] = benchmark::Counter(forward_flops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(fp8attn::bench::BM_sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_backward)
    ->Args({64, 2048, 0})
    ->Args({128, 2048, 0})
    ->Args({256, 2048, 0})
    ->Args({128, 2048, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_forward)->Args({128, 2048, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  fp8attn::bench::initialize_interleaved(&argc, argv);
  fp8attn::bench::SgemmRatioReporter reporter(
      {"BM_backward", "BM_forward"},
      "(BM_backward|BM_forward/<head_dim>/<seqlen>/<causal>, 2 heads, BF16; the backward's GFLOP/s count 2.5× the "
      "forward's FLOPs; target ≥ 0.3 of sgemm at head_dim 128)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
