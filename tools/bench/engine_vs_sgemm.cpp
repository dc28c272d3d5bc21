// Throughput of the CPU tile engine as a ratio to OpenBLAS sgemm on the same cores, measured in
// the same run (Google Benchmark). Attention FLOPs are 4·heads·Sq·Sk·d (QKᵀ and PV), halved for
// causal masks (FlashAttention's convention); sgemm FLOPs are 2·M·N·K at M = N = K = 2048. Both
// use every core: the engine through the context's workers (num_threads = 0), OpenBLAS through
// its own threads. Both accumulations run: the tensor core's addition (the default, which
// predicts the GPU's bits) and FP32 (the CPU's throughput mode). The table (sgemm_ratio.hpp)
// reports medians over --benchmark_repetitions.
#include "tools/bench/sgemm_ratio.hpp"
#include "tools/common/forward_runner.hpp"

namespace {

using fp8attn::workloads::AttentionShape;

/// One engine forward per iteration, through the C API (plan and workspace created outside the
/// timed loop).
void BM_engine(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(0));
  const int64_t seqlen = state.range(1);
  const int32_t dtype = static_cast<int32_t>(state.range(2));
  const bool causal = state.range(3) != 0;
  const auto accumulator = static_cast<uint32_t>(state.range(4));
  const AttentionShape shape{1, seqlen, seqlen, 4, 4, head_dim};
  const auto q = fp8attn::workloads::quantize(fp8attn::workloads::normal_inputs(shape, 11), dtype,
                                              fp8attn::workloads::ScaleGranularity::PerHead);
  auto desc = fp8attn::workloads::make_desc(shape, dtype, FP8ATTN_DTYPE_BF16);
  desc.causal = causal ? 1 : 0;
  desc.accumulator_model = accumulator;
  fp8attn::workloads::ForwardSession session(desc, shape, q);
  for (auto _ : state) session.run();
  const double flops = 4.0 * shape.heads_q * double(seqlen) * seqlen * head_dim * (causal ? 0.5 : 1.0);
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(fp8attn::bench::BM_sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_engine)
    ->ArgsProduct({{64, 128, 256},
                   {4096},
                   {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16},
                   {0, 1},
                   {FP8ATTN_ACCUMULATOR_TENSOR_CORE, FP8ATTN_ACCUMULATOR_FP32}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  fp8attn::bench::initialize_interleaved(&argc, argv);
  fp8attn::bench::SgemmRatioReporter reporter(
      {"BM_engine"}, "(BM_engine/<head_dim>/<seqlen>/<dtype 5=E4M3, 3=BF16>/<causal>/<accumulator 1=tensor core, "
      "0=FP32>; 4 heads, batch 1)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
