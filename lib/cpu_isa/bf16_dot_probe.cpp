// Whether this CPU runs AVX512-BF16's vdpbf16ps fast enough for the FP32 mode's products: one
// measurement per process, against 512-bit FMAs doing the same multiply-adds.
//
// NOTE: why a measurement and not a table of CPU models. The instruction does two multiply-adds
// per FP32 lane, so it doubles an FMA's work where it issues as often, as on AMD's Zen 4; on an
// Intel Xeon of the Emerald Rapids generation it issued about a quarter as often as an FMA (1.0 to
// 1.35 G against 4.1 to 5.5 G per second and core, 16 independent chains each), and the FP32
// mode's forward ran about 1.45 times as fast on the FMAs (docs/performance.md). Tables of models
// age: Debian's OpenBLAS takes that same Xeon for a Prescott and runs SSE3 kernels on it. Either
// choice gives the same bits (panel_gemm_fp32_bf16_avx512.hpp, decode_fp32_bf16_avx512.hpp), so a
// wrong one, on a machine busy while it measures, costs speed only.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "lib/cpu_isa/cpu_isa.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FP8ATTN_BF16_DOT_PROBE 1
#else
#define FP8ATTN_BF16_DOT_PROBE 0
#endif

namespace fp8attn {
namespace {

#if FP8ATTN_BF16_DOT_PROBE
constexpr int kChains = 16;  // independent accumulators: throughput, not latency

/// The seconds since t0, once the chains' sums are kept where the compiler must compute them.
__attribute__((target("avx512f"), noinline)) double seconds_since(std::chrono::steady_clock::time_point t0,
                                                      const __m512 (&acc)[kChains]) {
  const auto t1 = std::chrono::steady_clock::now();
  __m512 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  volatile float sink = _mm512_cvtss_f32(sum);
  (void)sink;
  return std::chrono::duration<double>(t1 - t0).count();
}

/// Seconds for `rounds` × kChains vdpbf16ps (2 · 16 multiply-adds each).
__attribute__((target("avx512f,avx512bf16"), noinline)) double time_dot(int rounds) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3F803F80));  // (1, 1)
  // NOTE: normal operands and sums (no subnormal, which some cores take through an assist).
  const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(0x3A803A80));  // (2^-10, 2^-10)
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  return seconds_since(t0, acc);
}

/// Seconds for `rounds` × kChains 512-bit FMAs (16 multiply-adds each).
__attribute__((target("avx512f"), noinline)) double time_fma(int rounds) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(a, acc[j], b);
  return seconds_since(t0, acc);
}

/// Whether vdpbf16ps does a multiply-add at least as fast as an FMA: the best of five alternating
/// tries of each (about 5 µs apiece), after a warm-up that lets the core settle at its 512-bit
/// clock. Tens of microseconds, once.
bool measure() {
  constexpr int kRounds = 256;  // 4096 instructions per try
  time_fma(4 * kRounds);
  double dot = 1e9, fma = 1e9;
  for (int t = 0; t < 5; ++t) {
    dot = std::min(dot, time_dot(kRounds));
    fma = std::min(fma, time_fma(2 * kRounds));  // the same multiply-adds
  }
  return dot <= fma;
}
#endif

/// -1: measure; 0: the FMAs; 1: vdpbf16ps (FP8ATTN_BF16_DOT, set_bf16_dot_products).
std::atomic<int>& forced() {
  static std::atomic<int> mode{[] {
    const char* v = std::getenv("FP8ATTN_BF16_DOT");
    if (v && std::strcmp(v, "0") == 0) return 0;
    if (v && std::strcmp(v, "1") == 0) return 1;
    return -1;
  }()};
  return mode;
}

}  // namespace

bool bf16_dot_products_measured_fast() {
#if FP8ATTN_BF16_DOT_PROBE
  static const bool fast = best_cpu_isa() == CpuIsa::kAvx512Bf16 && measure();
  return fast;
#else
  return false;
#endif
}

bool bf16_dot_products_active() {
  if (!avx512_bf16_active()) return false;
  const int mode = forced().load(std::memory_order_relaxed);
  return mode < 0 ? bf16_dot_products_measured_fast() : mode == 1;
}

bool avx512_bf16_for_products(bool tensor_core) {
  return tensor_core ? avx512_bf16_active() : bf16_dot_products_active();
}

void set_bf16_dot_products(Bf16DotChoice choice) {
  forced().store(choice == Bf16DotChoice::kMeasure ? -1 : choice == Bf16DotChoice::kOn ? 1 : 0,
                 std::memory_order_relaxed);
}

}  // namespace fp8attn
