// The CPU engine's two tile products alone, as the forward runs them, against OpenBLAS sgemm in
// the same run: the ceiling of bench_engine_vs_sgemm's ratio. The engine cannot beat the rate of
// its own products; its ratio to sgemm is at most this ratio times the products' share of its
// time (the rest is the softmax between them, decoding and the epilogue).
//
// Per iteration, every core runs 16 query tiles of one 4096-key head: for each KV block,
// S = Q·Kᵀ over K packed in panels, then O += P·V over V in panels (panel_gemm.hpp, the
// accumulation of the third argument, 1 = the tensor core's addition of kernels/ptx/mma_order.hpp
// (the engine's default), 0 = FP32, plus 2 for the AVX-512 build's use of AVX512-BF16 and VNNI
// (same bits; on such a CPU), and the wgmma depth of the config: K = 32 for E4M3, K = 16 for
// BF16), with the head's K and V blocks distinct in memory (2·4096·head_dim floats, streamed
// from beyond L2 as in the engine). Q holds fresh random E4M3 values, P
// non-negative ones shaped like a softmax's.
// FLOPs: 2·BlockM·(keys rounded up to 16)·head_dim + 2·BlockM·keys·head_dim per block.
//
// NOTE: compiled twice (CMakeLists.txt): for x86-64-v3, the AVX2 build's blocks, and for
// x86-64-v4 (bench_tile_products_vs_sgemm_avx512), the AVX-512 build's; main refuses to run on a
// CPU without the build's ISA.
#include <algorithm>
#include <cmath>
#include <thread>

#include "include/fp8attn/fp8attn.h"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/tile_config.hpp"
#include "lib/attention/engine/panel_gemm.hpp"
#include "tools/bench/sgemm_ratio.hpp"

namespace {

namespace engine = fp8attn::engine;

constexpr int64_t kKeys = 4096;
/// Added to the third argument: panel_gemm may use AVX512-BF16 and VNNI (same bits): the FP32
/// accumulation's products on vdpbf16ps, the tensor core's FP8 sums on vpdpwssd.
constexpr int kWithExtensions = 2;
constexpr int kQueryTiles = 16;

/// One core's buffers: a query tile, its P and accumulators, and the head's K and V panels.
struct CoreWork {
  int block_m, block_n, head_dim, mma_k_qk, mma_k_pv;
  int64_t blocks;  ///< KV blocks of the head
  fp8attn::arch::MmaRule rule;  ///< the tensor core's addition or FP32 accumulation
  std::vector<float> q, p, s, o, k_panels, v_panels;
  std::vector<unsigned char> scratch;

  bool extensions;  ///< panel_gemm's avx512_bf16: AVX512-BF16 and VNNI (AVX-512 build, such a CPU)

  CoreWork(int d, bool fp8, bool tensor_core, bool with_extensions, unsigned seed)
      : head_dim(d), extensions(with_extensions) {
    const auto tile = fp8attn::sm90::attention_tile(d, fp8, fp8attn::sm90::PvPromotion::Off);
    block_m = tile.block_m;
    block_n = tile.block_n;
    mma_k_qk = tile.mma_k_qk;
    mma_k_pv = tile.mma_k_pv;
    const auto format = fp8 ? fp8attn::arch::MmaFormat::E4M3 : fp8attn::arch::MmaFormat::BF16;
    const auto accumulation = tensor_core ? fp8attn::arch::MmaAccumulation::TensorCore : fp8attn::arch::MmaAccumulation::Fp32;
    rule = fp8attn::arch::mma_rule(fp8attn::arch::MmaPrecisionModel{accumulation}, format, format);
    blocks = (kKeys + block_n - 1) / block_n;
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist;
    auto fill = [&](std::vector<float>& v, size_t n) {
      v.resize(n);
      for (float& x : v) x = fp8attn::num::round_to_e4m3(dist(rng));
    };
    fill(q, size_t(block_m) * d);
    // P as the softmax leaves it: in (0, 1], the row's largest near 1 and many far below (the
    // tensor core's AVX-512 form takes a faster loop for an A with no negative value).
    p.resize(size_t(block_m) * block_n);
    for (float& x : p) x = fp8attn::num::round_to_e4m3(std::exp2(-std::fabs(dist(rng)) * 4.0f));
    fill(k_panels, size_t(blocks) * block_n * d);
    fill(v_panels, size_t(blocks) * block_n * d);
    s.assign(size_t(block_m) * block_n, 0.0f);
    // panel_gemm's scratch, as the engine's tile carves it (query_tile.cpp)
    scratch.resize(engine::tile_products_scratch_bytes(block_n, d, d));
    o.assign(size_t(block_m) * d, 0.0f);
  }

  /// kQueryTiles query tiles over every KV block; returns the FLOPs.
  double run() {
    double flops = 0;
    for (int tile = 0; tile < kQueryTiles; ++tile)
      for (int64_t b = 0; b < blocks; ++b) {
        const int keys = static_cast<int>(std::min<int64_t>(block_n, kKeys - b * block_n));
        const int panels = (keys + engine::kPanelWidth - 1) / engine::kPanelWidth;
        const float* k = k_panels.data() + b * block_n * head_dim;
        const float* v = v_panels.data() + b * block_n * head_dim;
        engine::panel_gemm(q.data(), head_dim, k, int64_t(head_dim) * engine::kPanelWidth, panels, s.data(), block_n,
                           block_m, head_dim, mma_k_qk, true, rule, scratch.data(), scratch.size(), extensions);
        engine::panel_gemm(p.data(), block_n, v, int64_t(block_n) * engine::kPanelWidth,
                           head_dim / engine::kPanelWidth, o.data(), head_dim, block_m, keys, mma_k_pv, false, rule,
                           scratch.data(), scratch.size(), extensions);
        flops += 2.0 * block_m * panels * engine::kPanelWidth * head_dim + 2.0 * block_m * keys * head_dim;
      }
    benchmark::DoNotOptimize(o.data());
    benchmark::DoNotOptimize(s.data());
    return flops;
  }
};

/// The products on every core at once (one thread per core, each with its own head).
void BM_tile_products(benchmark::State& state) {
  const int head_dim = static_cast<int>(state.range(0));
  const bool fp8 = state.range(1) == FP8ATTN_DTYPE_E4M3;
  const bool extensions = state.range(2) >= kWithExtensions;
  const bool tensor_core = state.range(2) % kWithExtensions == FP8ATTN_ACCUMULATOR_TENSOR_CORE;
#if defined(__AVX512F__)
  if (extensions && !(__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni"))) {
    state.SkipWithError("this CPU has no AVX512-BF16 and VNNI");
    return;
  }
#else
  if (extensions) {
    state.SkipWithError("AVX512-BF16 and VNNI are the AVX-512 build's (_avx512)");
    return;
  }
#endif
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<CoreWork> work;
  for (unsigned c = 0; c < cores; ++c)
    work.emplace_back(head_dim, fp8, tensor_core, extensions, std::random_device{}());
  double flops = 0;
  for (auto _ : state) {
    std::vector<double> done(cores);
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < cores; ++c) threads.emplace_back([&, c] { done[c] = work[c].run(); });
    for (auto& t : threads) t.join();
    flops = 0;
    for (double f : done) flops += f;
  }
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(fp8attn::bench::BM_sgemm)->Arg(2048)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_tile_products)
    ->ArgsProduct({{64, 128, 256},
                   {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16},
                   {FP8ATTN_ACCUMULATOR_TENSOR_CORE, FP8ATTN_ACCUMULATOR_FP32,
                    kWithExtensions + FP8ATTN_ACCUMULATOR_TENSOR_CORE, kWithExtensions + FP8ATTN_ACCUMULATOR_FP32}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
#if defined(__AVX512F__)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl")) {
    std::fprintf(stderr, "bench_tile_products_vs_sgemm_avx512: needs AVX-512 F, BW, DQ, VL (built for x86-64-v4)\n");
    return 2;
  }
#else
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "bench_tile_products_vs_sgemm: needs AVX2 and FMA (it is built for x86-64-v3)\n");
    return 2;
  }
#endif
  fp8attn::bench::initialize_interleaved(&argc, argv);
  fp8attn::bench::SgemmRatioReporter reporter(
      {"BM_tile_products"},
      "(BM_tile_products/<head_dim>/<dtype 5=E4M3, 3=BF16>/<1 = tensor core, 0 = FP32; + 2 with AVX512-BF16 and VNNI>; "
      "BlockM x 4096 keys x 16 tiles per core)");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
