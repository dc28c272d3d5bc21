// The tensor core's addition (kernels/ptx/mma_order.hpp) against the hardware's own outputs:
// 5,000 H100 instructions per input format (tests/data/tensor_core_vectors, measured by Khattak
// and Mikaitis), each run through arch::mma_instruction (what the emulator's wgmma calls per
// element) and through the CPU engine's tile product (engine::gemm_in_mma_order, its vectorized
// form), both bit-equal to the GPU's output. Also a chain of two instructions worked by hand, and
// the predictions of the GPU probe rows of GemmCuda.Fp8AccumulationProbe.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/tile_ops.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "tests/common/tensor_core_reference.hpp"
#include "tests/emu/gemm_test_support.hpp"

namespace fp8attn::test {
namespace {

struct Vector {
  std::vector<float> a, b;
  uint32_t c, d;
};

float decode(arch::MmaFormat f, unsigned bits) {
  switch (f) {
    case arch::MmaFormat::E4M3: return num::e4m3_to_float(static_cast<uint8_t>(bits));
    case arch::MmaFormat::E5M2: return num::e5m2_to_float(static_cast<uint8_t>(bits));
    case arch::MmaFormat::BF16: return num::bf16_to_float(static_cast<uint16_t>(bits));
  }
  return 0.0f;
}

/// Every row of one file: "a,b,c,d", a and b K values of 2 (FP8) or 4 (BF16) hex digits each.
std::vector<Vector> load(const std::string& name, arch::MmaFormat f, int k_len) {
  std::ifstream in(std::string(FP8ATTN_TENSOR_CORE_VECTORS_DIR) + "/" + name);
  std::vector<Vector> rows;
  std::string line;
  if (!std::getline(in, line) || line != "a,b,c,d") return rows;
  const int w = f == arch::MmaFormat::BF16 ? 4 : 2;
  while (std::getline(in, line)) {
    const size_t p1 = line.find(','), p2 = line.find(',', p1 + 1), p3 = line.find(',', p2 + 1);
    if (p3 == std::string::npos || p1 != static_cast<size_t>(k_len * w) || p2 - p1 - 1 != static_cast<size_t>(k_len * w))
      return {};  // a malformed file loads nothing, and the count check below fails
    Vector v;
    for (int k = 0; k < k_len; ++k) {
      v.a.push_back(decode(f, std::stoul(line.substr(k * w, w), nullptr, 16)));
      v.b.push_back(decode(f, std::stoul(line.substr(p1 + 1 + k * w, w), nullptr, 16)));
    }
    v.c = static_cast<uint32_t>(std::stoul(line.substr(p2 + 1, p3 - p2 - 1), nullptr, 16));
    v.d = static_cast<uint32_t>(std::stoul(line.substr(p3 + 1), nullptr, 16));
    rows.push_back(std::move(v));
  }
  return rows;
}

constexpr int kEngineColumns = 16;  // a vector block of the engine's register tile

void expect_every_row(const char* file, arch::MmaFormat f, int k_len) {
  const std::vector<Vector> rows = load(file, f, k_len);
  ASSERT_EQ(rows.size(), 5000u) << file << " did not load whole";
  const arch::MmaRule rule = arch::mma_rule(arch::tensor_core_accumulation(), f, f);
  int rule_equal = 0, engine_equal = 0;
  std::vector<float> b(static_cast<size_t>(k_len) * kEngineColumns), acc(kEngineColumns);
  for (const Vector& v : rows) {
    const float out = arch::mma_instruction(arch::bits_float(v.c), k_len, [&](int k) { return v.a[k]; },
                                            [&](int k) { return v.b[k]; }, rule);
    rule_equal += arch::float_bits(out) == v.d;
    // The engine: one row of A against 16 equal columns of B, accumulators preset to c.
    for (int k = 0; k < k_len; ++k)
      for (int j = 0; j < kEngineColumns; ++j) b[static_cast<size_t>(k) * kEngineColumns + j] = v.b[k];
    acc.assign(kEngineColumns, arch::bits_float(v.c));
    engine::gemm_in_mma_order(v.a.data(), k_len, b.data(), kEngineColumns, acc.data(), kEngineColumns, 1, kEngineColumns,
                              k_len, k_len, false, rule);
    bool all = true;
    for (float x : acc) all = all && arch::float_bits(x) == v.d;
    engine_equal += all;
  }
  EXPECT_EQ(rule_equal, 5000) << file;
  EXPECT_EQ(engine_equal, 5000) << file;
  std::printf("%s: %d of 5000 bit-equal through arch::mma_instruction, %d through the engine's tile product\n", file,
              rule_equal, engine_equal);
}

TEST(TensorCoreVectors, E4m3EveryRowBitEqual) { expect_every_row("hopper_e4m3_k32.csv", arch::MmaFormat::E4M3, 32); }
TEST(TensorCoreVectors, E5m2EveryRowBitEqual) { expect_every_row("hopper_e5m2_k32.csv", arch::MmaFormat::E5M2, 32); }
TEST(TensorCoreVectors, Bf16EveryRowBitEqual) { expect_every_row("hopper_bf16_k16.csv", arch::MmaFormat::BF16, 16); }

/// Runs a K = 64 E4M3 row against B = ones as two chained instructions from +0: by the rule, and
/// by the engine's tile product.
float chained(const std::vector<float>& a) {
  const arch::MmaRule rule = arch::mma_rule(arch::tensor_core_accumulation(), arch::MmaFormat::E4M3, arch::MmaFormat::E4M3);
  float acc = 0.0f;
  for (int k0 = 0; k0 < 64; k0 += 32)
    acc = arch::mma_instruction(acc, 32, [&](int k) { return a[k0 + k]; }, [](int) { return 1.0f; }, rule);
  std::vector<float> ones(static_cast<size_t>(64) * kEngineColumns, 1.0f), out(kEngineColumns, -7.0f);
  engine::gemm_in_mma_order(a.data(), 64, ones.data(), kEngineColumns, out.data(), kEngineColumns, 1, kEngineColumns, 64,
                            32, true, rule);
  for (float x : out) EXPECT_EQ(arch::float_bits(x), arch::float_bits(acc)) << "the engine and the rule differ";
  return acc;
}

// The first instruction's exact sum 512 + 2^-5 needs 14 fraction bits at 2^9, so its final cut
// leaves 512. The second adds 2^-5 to that: its grid is 2^(9 - 13) = 2^-4 (E from the accumulator),
// so the product is cut to 0 and the chain gives 512, though the exact total 512 + 2^-4 would fit
// 13 fraction bits. Without the first cut the accumulator would be 512 + 2^-5, and the second's
// alignment would swallow the 2^-5 again: the chain cannot resurrect what a cut removed.
TEST(TensorCoreVectors, ChainedInstructionsLoseWhatEachCutRemoved) {
  std::vector<float> a(64, 0.0f);
  a[0] = 256.0f, a[1] = 256.0f, a[2] = 1.0f / 32, a[40] = 1.0f / 32;
  EXPECT_EQ(chained(a), 512.0f);
  Operands o;
  o.lda = o.ldb = padded_ld(64, 1);
  o.a.assign(o.lda, 0);
  o.b.assign(o.ldb, num::float_to_e4m3(1.0f));
  for (int k = 0; k < 64; ++k) o.a[k] = num::float_to_e4m3(a[k]);
  EXPECT_EQ(reference_gemm(GemmInput::E4M3, o, 1, 1, 64)[0], 512.0f) << "the independent writing of the rule";
  // The same four addends in one instruction keep the sum's last 2^-4.
  std::vector<float> one(64, 0.0f);
  one[0] = 256.0f, one[1] = 256.0f, one[2] = 1.0f / 32, one[3] = 1.0f / 32;
  EXPECT_EQ(chained(one), 512.0f + 1.0f / 16);
}

// The rule's predictions for the probe rows that GemmCuda.Fp8AccumulationProbe runs on a GPU:
// each must equal the value worked by hand (step4_probe_rows), through the rule, the engine and
// the test's own writing of the rule.
TEST(TensorCoreVectors, ProbeRowPredictionsMatchTheHandWorkedValues) {
  const auto probes = step4_probe_rows();
  Operands o;
  o.lda = o.ldb = padded_ld(64, 1);
  o.a.assign(probes.size() * o.lda, 0);
  o.b.assign(o.ldb, num::float_to_e4m3(1.0f));
  for (size_t i = 0; i < probes.size(); ++i)
    for (int k = 0; k < 64; ++k) o.a[i * o.lda + k] = num::float_to_e4m3(probes[i].a[k]);
  const auto independent = reference_gemm(GemmInput::E4M3, o, static_cast<int>(probes.size()), 1, 64);
  for (size_t i = 0; i < probes.size(); ++i) {
    EXPECT_EQ(chained(probes[i].a), probes[i].predicted) << probes[i].name;
    EXPECT_EQ(independent[i], probes[i].predicted) << probes[i].name;
  }
}

}  // namespace
}  // namespace fp8attn::test
