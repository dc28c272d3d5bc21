// The FP8 and BF16 converters against CUDA's own host code (cuda_fp8.h, cuda_bf16.h, compiled
// here with the host compiler) for all 2³² FP32 inputs: E4M3 and E5M2 with __NV_SATFINITE, and
// BF16 round-to-nearest-even, bit for bit (CUDA returns the positive canonical NaN for any NaN
// input, and so do the converters). Also checks the engine's value-level round_to_e4m3 against
// the encoder. Skips, saying why, when the CUDA headers are not available. A second test checks
// the fast E4M3 encoder against the generic one, with or without CUDA.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

#if FP8ATTN_HAVE_CUDA_FP8_HEADER
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#endif

namespace {

#if FP8ATTN_HAVE_CUDA_FP8_HEADER
struct Mismatches {
  std::atomic<uint64_t> e4m3{0}, e5m2{0}, bf16{0}, round{0}, round_bf16{0};
  std::atomic<uint32_t> first_e4m3{0}, first_e5m2{0}, first_bf16{0}, first_round{0}, first_round_bf16{0};
};

void check_range(uint64_t begin, uint64_t end, Mismatches& m) {
  uint64_t e4 = 0, e5 = 0, b16 = 0, rnd = 0, rnd16 = 0;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t u = static_cast<uint32_t>(i);
    float x;
    std::memcpy(&x, &u, 4);
    const uint8_t ours_e4m3 = fp8attn::num::float_to_e4m3(x);
    if (ours_e4m3 != __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) && e4++ == 0) m.first_e4m3 = u;
    if (fp8attn::num::float_to_e5m2(x) != __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2) && e5++ == 0)
      m.first_e5m2 = u;
    const __nv_bfloat16 h = __float2bfloat16(x);
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    if (fp8attn::num::float_to_bf16(x) != hb && b16++ == 0) m.first_bf16 = u;
    const float rb = fp8attn::num::round_to_bf16(x);  // the engine's value-level BF16 rounding
    uint32_t rb_bits;
    std::memcpy(&rb_bits, &rb, 4);
    if (rb_bits != (uint32_t{hb} << 16) && rnd16++ == 0) m.first_round_bf16 = u;
    const float r = fp8attn::num::round_to_e4m3(x), d = fp8attn::num::e4m3_to_float(ours_e4m3);
    if (!(std::memcmp(&r, &d, 4) == 0 || (r != r && d != d)) && rnd++ == 0) m.first_round = u;
  }
  m.e4m3 += e4, m.e5m2 += e5, m.bf16 += b16, m.round += rnd, m.round_bf16 += rnd16;
}
#endif

TEST(ConvertersExhaustive, AllFp32InputsMatchCudaHostCode) {
#if !FP8ATTN_HAVE_CUDA_FP8_HEADER
  GTEST_SKIP() << "cuda_fp8.h/cuda_bf16.h not found at configure time (no CUDA toolkit): the oracle for this test "
                  "is CUDA's own host code";
#else
  Mismatches m;
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  const uint64_t total = 1ull << 32, step = total / workers;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back(check_range, w * step, w + 1 == workers ? total : (w + 1) * step, std::ref(m));
  for (auto& t : threads) t.join();
  std::printf("2^32 inputs: mismatches e4m3 %llu, e5m2 %llu, bf16 %llu, round_to_e4m3 %llu, round_to_bf16 %llu\n",
              (unsigned long long)m.e4m3.load(), (unsigned long long)m.e5m2.load(), (unsigned long long)m.bf16.load(),
              (unsigned long long)m.round.load(), (unsigned long long)m.round_bf16.load());
  EXPECT_EQ(m.e4m3, 0u) << "first at bits 0x" << std::hex << m.first_e4m3;
  EXPECT_EQ(m.e5m2, 0u) << "first at bits 0x" << std::hex << m.first_e5m2;
  EXPECT_EQ(m.bf16, 0u) << "first at bits 0x" << std::hex << m.first_bf16;
  EXPECT_EQ(m.round, 0u) << "first at bits 0x" << std::hex << m.first_round;
  EXPECT_EQ(m.round_bf16, 0u) << "first at bits 0x" << std::hex << m.first_round_bf16;
#endif
}

// float_to_e4m3 rounds on the FP32 bits with selects; the generic encoder (rounding by
// nearbyint at the value's quantum) is its specification. Needs no CUDA headers.
TEST(ConvertersExhaustive, FastE4m3EncoderMatchesTheGenericEncoder) {
  std::atomic<uint64_t> mismatches{0};
  std::atomic<uint32_t> first{0};
  auto check = [&](uint64_t begin, uint64_t end) {
    uint64_t local = 0;
    for (uint64_t i = begin; i < end; ++i) {
      const uint32_t u = static_cast<uint32_t>(i);
      float x;
      std::memcpy(&x, &u, 4);
      if (fp8attn::num::float_to_e4m3(x) != fp8attn::num::detail::float_to_fp8(x, fp8attn::num::kE4M3) &&
          local++ == 0)
        first = u;
    }
    mismatches += local;
  };
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  const uint64_t total = 1ull << 32, step = total / workers;
  for (unsigned w = 0; w < workers; ++w) threads.emplace_back(check, w * step, w + 1 == workers ? total : (w + 1) * step);
  for (auto& t : threads) t.join();
  std::printf("2^32 inputs: float_to_e4m3 vs the generic encoder, %llu mismatches\n",
              (unsigned long long)mismatches.load());
  EXPECT_EQ(mismatches.load(), 0u) << "first at bits 0x" << std::hex << first.load();
}

}  // namespace
