// The emulated wgmma's accumulation (kernels/ptx/mma_order.hpp) seen through an accumulator
// alone: by default the tensor core's addition, whose FP8 form keeps 13 fraction bits of an
// instruction's result and whose BF16 form keeps all 23; a launch may choose its own accumulation
// (LaunchConfig::mma_model) without touching a concurrent launch.
//
// The pin is SageAttention2's experiment: one FP8 wgmma with A = B = 0 and scale-d = 1 returns
// each accumulator with its low 10 bits cleared: 0x3F8003FF -> 0x3F800000, 0x3F800400 unchanged,
// 0x3F800001 -> 0x3F800000 (their H100 measurement; the rule gives the same: the accumulator is
// the only addend, cut at 2^(E-13), then to 13 fraction bits).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <thread>

#include "tests/emu/wgmma_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr int kN = 64;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Runs D = 0·0 + D (scale-d = 1) once on the emulator with every accumulator preset from `d_in`.
std::vector<float> zero_product(emu::MmaInputType type, const std::vector<float>& d_in,
                                std::optional<arch::MmaPrecisionModel> model, uint64_t seed) {
  const bool fp8 = type != emu::MmaInputType::BF16;
  const uint32_t e = fp8 ? 1 : 2;
  const int k = fp8 ? 32 : 16;
  const std::vector<uint16_t> a(64 * k, 0), b(static_cast<size_t>(kN) * k, 0);  // +0 in every format
  const auto pa = make_placement(true, arch::Swizzle::B128, e, 0, 64, k);
  const auto pb = make_placement(true, arch::Swizzle::B128, e, 8192, kN, k);
  std::vector<uint8_t> image;
  pa.write(image, a);
  pb.write(image, b);
  const uint64_t da = pa.descriptor(0), db = pb.descriptor(0);
  MmaKernelArgs args;
  args.image = image.data();
  args.image_bytes = static_cast<uint32_t>(image.size());
  args.type = type;
  args.desc_a = &da;
  args.desc_b = &db;
  args.first_accumulates = true;  // scale-d = 1
  return run_mma<kN>(args, d_in, seed, true, model);
}

TEST(WgmmaPrecision, SageAttention2ExperimentOnTheDefaultFp8Model) {
  const struct {
    uint32_t preset, expected;
  } cases[] = {{0x3F8003FFu, 0x3F800000u}, {0x3F800400u, 0x3F800400u}, {0x3F800001u, 0x3F800000u}};
  for (const auto& c : cases) {
    const std::vector<float> d_in(static_cast<size_t>(64) * kN, from_bits(c.preset));
    for (emu::MmaInputType type : {emu::MmaInputType::E4M3, emu::MmaInputType::E5M2}) {
      const auto d = zero_product(type, d_in, std::nullopt, c.preset);
      int wrong = 0;
      for (float x : d) wrong += to_bits(x) != c.expected;
      EXPECT_EQ(wrong, 0) << "preset 0x" << std::hex << c.preset << " gave 0x" << to_bits(d[0]);
      std::printf("%s, preset 0x%08X: every accumulator reads 0x%08X (%d of %zu differ from 0x%08X)\n",
                  type == emu::MmaInputType::E4M3 ? "e4m3" : "e5m2", c.preset, to_bits(d[0]), wrong, d.size(), c.expected);
    }
    // BF16 keeps 23 fraction bits: the preset comes back as it was.
    const auto bf16 = zero_product(emu::MmaInputType::BF16, d_in, std::nullopt, 1);
    for (float x : bf16) ASSERT_EQ(to_bits(x), c.preset) << "bf16";
  }
}

// Fresh random presets: the default clears the low 23 - 13 bits of an FP8 instruction's
// accumulator, a launch's own accumulation (here Fp32) overrides it.
TEST(WgmmaPrecision, DefaultClearsTheLowTenBitsAndALaunchMayOverride) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 100.0f);
  std::vector<float> d_in(static_cast<size_t>(64) * kN);
  for (auto& x : d_in) x = nd(rng);
  const auto by_default = zero_product(emu::MmaInputType::E4M3, d_in, std::nullopt, seed);
  const auto off = zero_product(emu::MmaInputType::E4M3, d_in, arch::MmaPrecisionModel{}, seed);
  const auto asked = zero_product(emu::MmaInputType::E4M3, d_in, arch::tensor_core_accumulation(), seed);
  int wrong = 0, changed = 0;
  for (size_t i = 0; i < d_in.size(); ++i) {
    const uint32_t u = to_bits(d_in[i]);
    wrong += to_bits(by_default[i]) != (u & ~0x3FFu);
    wrong += to_bits(off[i]) != u;
    wrong += to_bits(asked[i]) != (u & ~0x3FFu);
    changed += to_bits(by_default[i]) != u;
  }
  EXPECT_EQ(wrong, 0) << "seed " << seed;
  EXPECT_GT(changed, 0) << "seed " << seed;
  std::printf("random presets (seed %llu): %d wrong; the 13-bit default changed %d of %zu\n",
              static_cast<unsigned long long>(seed), wrong, changed, d_in.size());
}

// Two launches at once with different accumulations: each sees its own (the model is per launch, not
// process-wide state that one launch could change under the other).
TEST(WgmmaPrecision, ConcurrentLaunchesKeepTheirOwnModels) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 100.0f);
  std::vector<float> d_in(static_cast<size_t>(64) * kN);
  for (auto& x : d_in) x = nd(rng);
  constexpr int kRounds = 8;
  int wrong[2] = {0, 0};
  auto worker = [&](int which) {
    const auto model = which == 0 ? arch::tensor_core_accumulation() : arch::MmaPrecisionModel{};
    const uint32_t keep = which == 0 ? ~0x3FFu : ~0u;
    for (int r = 0; r < kRounds; ++r) {
      const auto d = zero_product(emu::MmaInputType::E4M3, d_in, model, seed + r);
      for (size_t i = 0; i < d.size(); ++i) wrong[which] += to_bits(d[i]) != (to_bits(d_in[i]) & keep);
    }
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  EXPECT_EQ(wrong[0], 0) << "seed " << seed;
  EXPECT_EQ(wrong[1], 0) << "seed " << seed;
  std::printf("concurrent launches, tensor core and FP32, %d rounds each (seed %llu): %d and %d wrong\n", kRounds,
              static_cast<unsigned long long>(seed), wrong[0], wrong[1]);
}

}  // namespace
}  // namespace fp8attn::test
