// panel_gemm (lib/attention/engine/panel_gemm.hpp), the CPU engine's two tile products, against
// arch::mma_instruction applied element by element (kernels/ptx/mma_order.hpp): every register
// block (1, 2, 4, 6 and 8 rows: the baseline's, AVX2's and AVX-512's, whichever the CPU running
// the test has or not), ragged depths, the overwrite and accumulate paths, the tensor core's
// addition in its FP8 and BF16 forms and the Fp32 accumulation, and NaN and ±inf in the
// accumulator.
//
// This file is compiled twice (tests/attention/CMakeLists.txt): with the project's baseline flags
// (the generic block) and with -march=x86-64-v3 (the AVX2 intrinsic block), the latter skipping
// on a CPU without AVX2. The engine-level tests cover only the row blocks the CPU running them
// dispatches to; this one reaches the 8-row block of the AVX-512 build on any CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/numerics/float8.hpp"
#include "kernels/ptx/mma_order.hpp"
#include "lib/attention/engine/panel_gemm.hpp"

namespace fp8attn::engine {
namespace {

bool cpu_runs_this_build() {
#if FP8ATTN_PANEL_GEMM_AVX2
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#elif defined(__AVX512F__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return true;
#endif
}

/// Whether the CPU has AVX512-BF16 and VNNI (panel_gemm's avx512_bf16).
bool cpu_has_extensions() {
#if defined(__AVX512F__)
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

/// A random E4M3 value (never NaN): products of two are exact in FP32, as in the engine.
float random_e4m3(std::mt19937& rng) {
  for (;;) {
    const auto bits = static_cast<uint8_t>(rng());
    if ((bits & 0x7F) != 0x7F) return num::e4m3_to_float(bits);
  }
}

struct Case {
  int rows, panels, depth, mma_k;
  bool overwrite;
  arch::MmaRule model;
};

/// The rules the engine runs: the tensor core's for E4M3 and for BF16 inputs (E4M3 values are
/// BF16 values too), and Fp32.
arch::MmaRule rule_of(arch::MmaAccumulation accumulation, arch::MmaFormat format) {
  return arch::mma_rule(arch::MmaPrecisionModel{accumulation}, format, format);
}
const arch::MmaRule kTensorCoreE4m3 = rule_of(arch::MmaAccumulation::TensorCore, arch::MmaFormat::E4M3);

/// A: rows × lda, B: depth × (16·panels) row-major, both packed into panels of depth_cap rows.
struct Operands {
  std::vector<float> a, b, panels, acc;
  int lda, ldb, depth_cap, ldacc;
};

Operands draw(const Case& c, std::mt19937& rng) {
  Operands o;
  o.lda = c.depth + 3;  // strides other than the widths, as the engine's S and O rows may be
  o.ldb = c.panels * kPanelWidth;
  o.depth_cap = c.depth + 5;
  o.ldacc = c.panels * kPanelWidth + 7;
  o.a.resize(static_cast<size_t>(c.rows) * o.lda);
  o.b.resize(static_cast<size_t>(c.depth) * o.ldb);
  for (auto& x : o.a) x = random_e4m3(rng);
  for (auto& x : o.b) x = random_e4m3(rng);
  o.panels.assign(static_cast<size_t>(c.panels) * o.depth_cap * kPanelWidth, std::nanf("7"));
  for (int p = 0; p < c.panels; ++p)
    for (int k = 0; k < c.depth; ++k)
      for (int j = 0; j < kPanelWidth; ++j)
        o.panels[(static_cast<size_t>(p) * o.depth_cap + k) * kPanelWidth + j] = o.b[k * o.ldb + p * kPanelWidth + j];
  o.acc.resize(static_cast<size_t>(c.rows) * o.ldacc);
  // The overwrite path must not read acc: poison it with NaN there.
  for (auto& x : o.acc) x = c.overwrite ? std::nanf("3") : random_e4m3(rng) * 64.0f;
  return o;
}

/// arch::mma_instruction, one element at a time.
std::vector<float> reference(const Case& c, const Operands& o) {
  std::vector<float> acc = o.acc;
  for (int r = 0; r < c.rows; ++r)
    for (int col = 0; col < c.panels * kPanelWidth; ++col) {
      float& out = acc[static_cast<size_t>(r) * o.ldacc + col];
      for (int k0 = 0; k0 < c.depth; k0 += c.mma_k) {
        const int len = std::min(c.mma_k, c.depth - k0);
        out = arch::mma_instruction(c.overwrite && k0 == 0 ? 0.0f : out, len, [&](int k) { return o.a[r * o.lda + k0 + k]; },
                                    [&](int k) { return o.b[(k0 + k) * o.ldb + col]; }, c.model);
      }
    }
  return acc;
}

/// panel_gemm's scratch for a case (the AVX-512 FP8 form prepares B in it).
std::vector<unsigned char> scratch_for(const Case& c) {
  return std::vector<unsigned char>(panel_gemm_scratch_bytes(c.panels, c.depth) + 7);  // + 7: an odd base below
}

/// Row blocks of R rows through panel_rows, with B prepared as panel_gemm prepares it when
/// `prepare` (else the forms that need no scratch).
/// `extensions`: the prepared form may use AVX512-BF16 and VNNI (prepare_panels' avx512_bf16).
template <int R>
void run_rows(const Case& c, Operands& o, bool prepare = true, bool extensions = false) {
  std::vector<unsigned char> scratch = scratch_for(c);
  PreparedPanels prepared_here;
  const PreparedPanels* prepared =
      prepare ? prepare_panels(prepared_here, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth,
                               c.panels, c.depth, c.mma_k, c.model, scratch.data() + 7, scratch.size() - 7, extensions)
              : nullptr;
  for (int r0 = 0; r0 + R <= c.rows; r0 += R)
    panel_rows<R>(o.a.data() + r0 * o.lda, o.lda, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth,
                  c.panels, o.acc.data() + static_cast<size_t>(r0) * o.ldacc, o.ldacc, c.depth, c.mma_k, c.overwrite,
                  c.model, prepared);
}

/// panel_gemm over all rows, with its scratch or without.
void run_gemm(const Case& c, Operands& o, bool with_scratch, bool extensions = false) {
  std::vector<unsigned char> scratch = scratch_for(c);
  panel_gemm(o.a.data(), o.lda, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth, c.panels,
             o.acc.data(), o.ldacc, c.rows, c.depth, c.mma_k, c.overwrite, c.model,
             with_scratch ? scratch.data() + 7 : nullptr, with_scratch ? scratch.size() - 7 : 0, extensions);
}

void expect_bits_equal(const std::vector<float>& want, const std::vector<float>& got, const char* what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t w, g;
    std::memcpy(&w, &want[i], 4);
    std::memcpy(&g, &got[i], 4);
    ASSERT_EQ(w, g) << what << ": element " << i << " is " << got[i] << ", mma_instruction gives " << want[i];
  }
}

class PanelGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_runs_this_build()) GTEST_SKIP() << "this build of the test needs AVX2 and FMA (or AVX-512), which this CPU lacks";
    const uint32_t seed = std::random_device{}();
    RecordProperty("seed", std::to_string(seed));
    rng_.seed(seed);
    seed_ = seed;
  }
  std::mt19937 rng_;
  uint32_t seed_ = 0;
};

TEST_F(PanelGemm, EveryRowBlockFollowsTheMmaOrder) {
  const arch::MmaRule models[] = {kTensorCoreE4m3, rule_of(arch::MmaAccumulation::TensorCore, arch::MmaFormat::BF16),
                                  rule_of(arch::MmaAccumulation::Fp32, arch::MmaFormat::E4M3)};
  for (const auto& model : models)
    for (bool overwrite : {true, false})
      for (int depth : {32, 70, 128, 224})
        for (int mma_k : {16, 32}) {
          SCOPED_TRACE("seed " + std::to_string(seed_) + ", depth " + std::to_string(depth) + ", mma_k " +
                       std::to_string(mma_k) + (model.tensor_core ? ", tensor core F " + std::to_string(model.align_bits) : ", fp32") +
                       (overwrite ? ", overwrite" : ", accumulate"));
          const Case base{8, 5, depth, mma_k, overwrite, model};  // 5 panels: a block of 3 and one of 2
          const Operands drawn = draw(base, rng_);
          const std::vector<float> want = reference(base, drawn);
          auto check = [&](auto rows_block, const char* name) {
            constexpr int R = decltype(rows_block)::value;
            for (bool prepare : {true, false}) {
              Operands o = drawn;
              run_rows<R>(base, o, prepare);
              expect_bits_equal(want, o.acc, name);
            }
            if (cpu_has_extensions()) {
              Operands o = drawn;
              run_rows<R>(base, o, true, true);
              expect_bits_equal(want, o.acc, (std::string(name) + " with AVX512-BF16 and VNNI").c_str());
            }
          };
          check(std::integral_constant<int, 1>{}, "1-row blocks");
          check(std::integral_constant<int, 2>{}, "2-row blocks");
          check(std::integral_constant<int, 4>{}, "4-row blocks");
          check(std::integral_constant<int, 8>{}, "8-row blocks");
          for (bool with_scratch : {true, false}) {
            Operands o = drawn;  // 6-row blocks leave two rows: panel_gemm takes them as a pair
            run_gemm(base, o, with_scratch);
            expect_bits_equal(want, o.acc, with_scratch ? "panel_gemm" : "panel_gemm without scratch");
          }
          if (cpu_has_extensions()) {
            Operands o = drawn;
            run_gemm(base, o, true, true);
            expect_bits_equal(want, o.acc, "panel_gemm with AVX512-BF16 and VNNI");
          }
          Operands six = drawn;
          run_rows<6>(Case{6, base.panels, depth, mma_k, overwrite, model}, six);
          for (size_t i = 0; i < static_cast<size_t>(6) * six.ldacc; ++i) {
            uint32_t w, g;
            std::memcpy(&w, &want[i], 4);
            std::memcpy(&g, &six.acc[i], 4);
            ASSERT_EQ(w, g) << "6-row block, element " << i;
          }
        }
}

TEST_F(PanelGemm, NanAndInfinityInTheAccumulatorKeepTheirBits) {
  const Case c{6, 2, 64, 32, false, kTensorCoreE4m3};
  Operands o = draw(c, rng_);
  // A NaN whose payload lives only in the bits the model truncates, a negative NaN, ±inf.
  const uint32_t specials[] = {0x7F800001u, 0xFFC00123u, 0x7F800000u, 0xFF800000u};
  for (int i = 0; i < 4; ++i) std::memcpy(&o.acc[static_cast<size_t>(i) * (o.ldacc + 1)], &specials[i], 4);
  const std::vector<float> want = reference(c, o);
  run_rows<6>(c, o);
  expect_bits_equal(want, o.acc, "special accumulators");
  for (int i = 0; i < 4; ++i) {
    uint32_t got;
    std::memcpy(&got, &o.acc[static_cast<size_t>(i) * (o.ldacc + 1)], 4);
    EXPECT_EQ((got & 0x7F800000u), 0x7F800000u) << "special " << i << " lost its exponent";
  }
}

// Accumulators at the ends of the range the integer form takes (E from 2^-100 to below 2^100),
// both with every product zero (rows of A all zero: E is the accumulator's alone) and beside
// nonzero products: tiny normals and subnormals, which the scalar rule must take when no product
// is nonzero, and values just inside and just outside each bound.
TEST_F(PanelGemm, AccumulatorsAtTheEdgesOfTheRangeKeepTheirBits) {
  const Case c{8, 2, 64, 32, false, kTensorCoreE4m3};
  Operands o = draw(c, rng_);
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < c.depth; ++k) o.a[static_cast<size_t>(r) * o.lda + k] = (r + k) % 2 == 0 ? 0.0f : -0.0f;
  const float edges[] = {0x1p-110f,       -0x1.8p-105f, 1e-40f,     -1e-45f,    0x1.fffffep-101f, 0x1p-100f,
                         -0x1.234p-100f,  0x1.fffffep99f, -0x1p100f, 0x1.8p120f, 0x1p-126f,        -0x1.ffp-127f,
                         0x1.002p-120f,   -0x1.0008p-115f, 0x1.fffp-114f, -0x1.3579p-125f};
  // NOTE: the first panel's accumulators from the small ones only: one lane out of range sends its
  // whole 8 × 16 block to the scalar rule, which would hide how the form treats the others.
  std::uniform_int_distribution<int> pick(0, static_cast<int>(std::size(edges)) - 1);
  for (int r = 0; r < c.rows; ++r)
    for (int col = 0; col < c.panels * kPanelWidth; ++col) {
      float x = edges[pick(rng_)];
      while (col < kPanelWidth && std::fabs(x) > 0x1p-100f) x = edges[pick(rng_)];
      o.acc[static_cast<size_t>(r) * o.ldacc + col] = x;
    }
  const std::vector<float> want = reference(c, o);
  run_rows<8>(c, o);
  expect_bits_equal(want, o.acc, "accumulators at the range's edges");
}

// Rows of A all ±0 beside large values of B (2^31 to 2^40, each with at most three fraction bits),
// over small nonzero accumulators: every product is zero, so each result is its accumulator cut at
// its own exponent. A ±0 input's exponent byte plus a large one must still read as no addend, or
// E comes out near −60 and the accumulator is cut to that unit; such a B leaves the integer form.
TEST_F(PanelGemm, ZeroProductsBesideLargeInputsKeepTheAccumulator) {
  const Case c{8, 2, 64, 32, false, kTensorCoreE4m3};
  Operands o = draw(c, rng_);
  for (int r = 0; r < c.rows; ++r)
    for (int k = 0; k < c.depth; ++k) o.a[static_cast<size_t>(r) * o.lda + k] = (r + k) % 3 == 0 ? -0.0f : 0.0f;
  std::uniform_int_distribution<int> exponent(31, 40), mantissa(8, 15);
  for (int p = 0; p < c.panels; ++p)
    for (int k = 0; k < c.depth; ++k)
      for (int j = 0; j < kPanelWidth; ++j) {
        const float x = std::ldexp(static_cast<float>(mantissa(rng_)), exponent(rng_) - 3) * (j % 2 ? -1.0f : 1.0f);
        o.b[static_cast<size_t>(k) * o.ldb + p * kPanelWidth + j] = x;
        o.panels[(static_cast<size_t>(p) * o.depth_cap + k) * kPanelWidth + j] = x;
      }
  std::uniform_int_distribution<int> small(-99, -70);
  for (auto& x : o.acc) {
    do x = std::ldexp(random_e4m3(rng_), small(rng_));
    while (x == 0.0f);
  }
  const std::vector<float> want = reference(c, o);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NE(want[i], 0.0f) << "a drawn accumulator is 0";
  run_rows<8>(c, o);
  expect_bits_equal(want, o.acc, "zero products beside large inputs");
}

// The value sets the fast FP8 forms meet in the engine and at their edges: E5M2 inputs (their own
// emin), attention-like operands (Gaussian Q and K; non-negative P, many of them tiny, against V),
// and a NaN in one panel of B or an infinity in A, which send the whole call to the generic path.
TEST_F(PanelGemm, Fp8FormsMatchTheRuleOnE5m2GaussianAndSpecialOperands) {
  const arch::MmaRule e5m2 = rule_of(arch::MmaAccumulation::TensorCore, arch::MmaFormat::E5M2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto e4m3_of = [](float x) { return num::e4m3_to_float(num::float_to_e4m3(x)); };
  for (int variant = 0; variant < 5; ++variant)
    for (bool overwrite : {true, false}) {
      SCOPED_TRACE("seed " + std::to_string(seed_) + ", variant " + std::to_string(variant) +
                   (overwrite ? ", overwrite" : ", accumulate"));
      const Case c{8, 3, 128, 32, overwrite, variant == 0 ? e5m2 : kTensorCoreE4m3};
      Operands o = draw(c, rng_);
      for (size_t i = 0; i < o.a.size(); ++i) {
        if (variant == 0) o.a[i] = num::e5m2_to_float(static_cast<uint8_t>(rng_() & 0x7B));  // no inf or NaN
        if (variant == 1) o.a[i] = e4m3_of(normal(rng_) * 3.0f);
        if (variant == 2) o.a[i] = e4m3_of(std::exp2(-std::fabs(normal(rng_)) * 6.0f));  // P: in (0, 1], often tiny
        if (variant == 4 && i == 77) o.a[i] = std::numeric_limits<float>::infinity();
      }
      for (int p = 0; p < c.panels; ++p)
        for (int k = 0; k < c.depth; ++k)
          for (int j = 0; j < kPanelWidth; ++j) {
            float& x = o.panels[(static_cast<size_t>(p) * o.depth_cap + k) * kPanelWidth + j];
            if (variant == 0) x = num::e5m2_to_float(static_cast<uint8_t>(rng_() & 0xFB));
            if (variant == 1 || variant == 2) x = e4m3_of(normal(rng_) * 2.0f);
            if (variant == 3 && p == 1 && k == 40 && j == 5) x = std::nanf("1");
            o.b[k * o.ldb + p * kPanelWidth + j] = x;
          }
      const std::vector<float> want = reference(c, o);
      Operands eight = o;
      run_rows<8>(c, eight);
      expect_bits_equal(want, eight.acc, "8-row blocks");
      Operands whole = o;
      run_gemm(c, whole, true);
      expect_bits_equal(want, whole.acc, "panel_gemm");
      if (cpu_has_extensions()) {
        Operands both = o;
        run_gemm(c, both, true, true);
        expect_bits_equal(want, both.acc, "panel_gemm with AVX512-BF16 and VNNI");
      }
    }
}

#if defined(__AVX512F__)
/// A random BF16 value with an exponent in [emin, emax], either sign (never zero).
float random_bf16(std::mt19937& rng, int emin, int emax) {
  const int exponent = emin + static_cast<int>(rng() % static_cast<uint32_t>(emax - emin + 1));
  const float v = std::ldexp(1.0f + static_cast<float>(rng() % 128) / 128.0f, exponent);
  return (rng() & 1) ? -v : v;
}

/// Sets B's element (k, column) in both the row-major copy and the panels.
void set_b(Operands& o, int k, int column, float x) {
  o.b[k * o.ldb + column] = x;
  o.panels[(static_cast<size_t>(column / kPanelWidth) * o.depth_cap + k) * kPanelWidth + column % kPanelWidth] = x;
}

// The FP32 accumulation on AVX512-BF16's vdpbf16ps (panel_gemm_fp32_bf16_avx512.hpp) gives
// mma_instruction's bits: E4M3 and BF16 operands, ragged depths (odd ones leave a half pair),
// 8-, 2- and 1-row blocks, blocks of 3, 2 and 1 panels, both instruction depths, overwrite and
// accumulate. Every row runs on the dot products here: the count it returns says so.
TEST_F(PanelGemm, Fp32OnBf16DotProductsFollowsTheMmaOrder) {
  if (!cpu_has_extensions()) GTEST_SKIP() << "this CPU has no AVX512-BF16 and VNNI";
  const arch::MmaRule fp32 = rule_of(arch::MmaAccumulation::Fp32, arch::MmaFormat::E4M3);
  for (bool bf16_values : {false, true})
    for (bool overwrite : {true, false})
      for (int depth : {32, 71, 128, 255})
        for (int mma_k : {16, 32}) {
          SCOPED_TRACE("seed " + std::to_string(seed_) + ", depth " + std::to_string(depth) + ", mma_k " +
                       std::to_string(mma_k) + (bf16_values ? ", bf16" : ", e4m3") +
                       (overwrite ? ", overwrite" : ", accumulate"));
          // 4 · 8 + 2 + 1 rows; 3 + 1 or 3 + 3 panels
          const Case c{35, depth % 2 ? 4 : 6, depth, mma_k, overwrite, fp32};
          Operands o = draw(c, rng_);
          if (bf16_values) {
            for (auto& x : o.a) x = random_bf16(rng_, -20, 20);
            for (int k = 0; k < depth; ++k)
              for (int col = 0; col < c.panels * kPanelWidth; ++col) set_b(o, k, col, random_bf16(rng_, -20, 20));
          }
          const std::vector<float> want = reference(c, o);
          std::vector<unsigned char> scratch = scratch_for(c);
          const int on_dot =
              panel_gemm_bf16_dot(o.a.data(), o.lda, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth,
                                  c.panels, o.acc.data(), o.ldacc, c.rows, depth, mma_k, overwrite, fp32,
                                  scratch.data() + 7, scratch.size() - 7);
          EXPECT_EQ(on_dot, c.rows);
          expect_bits_equal(want, o.acc, "vdpbf16ps");
        }
  // Fewer rows than kBf16DotMinRows: the call declines and writes nothing (the FMAs are faster).
  const Case few{kBf16DotMinRows - 1, 2, 64, 32, false, fp32};
  Operands o = draw(few, rng_);
  const std::vector<float> before = o.acc;
  std::vector<unsigned char> scratch = scratch_for(few);
  EXPECT_EQ(-1, panel_gemm_bf16_dot(o.a.data(), o.lda, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth,
                                    few.panels, o.acc.data(), o.ldacc, few.rows, few.depth, few.mma_k, few.overwrite,
                                    fp32, scratch.data() + 7, scratch.size() - 7));
  expect_bits_equal(before, o.acc, "a declined call's accumulator");
}

/// Row `row` of A zero but for x at k.
void only_at(Operands& o, int row, int k, float x) {
  for (int j = 0; j < o.lda; ++j) o.a[row * o.lda + j] = 0.0f;
  o.a[row * o.lda + k] = x;
}

// Where the dot product would differ from two FMAs, the form steps aside and the bits stay the
// rule's: a NaN or a value BF16 does not hold in B (the whole call declines), and in A a
// subnormal, a product range reaching FP32's subnormals, or one that could overflow (that row
// block alone takes the FMAs). The rows planted are zero elsewhere and the chunks are written
// fresh, so that a subnormal product's flush would show in the output.
TEST_F(PanelGemm, Fp32OnBf16DotProductsStepsAsideWhereItWouldDiffer) {
  if (!cpu_has_extensions()) GTEST_SKIP() << "this CPU has no AVX512-BF16 and VNNI";
  const arch::MmaRule fp32 = rule_of(arch::MmaAccumulation::Fp32, arch::MmaFormat::BF16);
  const Case c{35, 3, 64, 16, true, fp32};  // 8-row blocks from row 0, a pair at 32, a single row at 34
  struct Variant {
    const char* name;
    int expect_on_dot;  ///< −1: the call declines
    void (*plant)(Operands&, std::mt19937&);
  };
  const Variant variants[] = {
      {"NaN in B", -1, [](Operands& o, std::mt19937&) { set_b(o, 33, 20, std::nanf("1")); }},
      {"B not a BF16 value", -1, [](Operands& o, std::mt19937&) { set_b(o, 5, 40, 1.0f + std::ldexp(1.0f, -12)); }},
      // 1e-40 · B: a normal FP32 product from a subnormal input, which the dot product reads as 0
      {"A subnormal in row 9", 35 - 8, [](Operands& o, std::mt19937&) { only_at(o, 9, 3, 1e-40f); }},
      // 2^−70 · 2^−60: a subnormal product (the dot product flushes it); the 2-row block declines
      {"A tiny in row 33", 35 - 2, [](Operands& o, std::mt19937&) {
         only_at(o, 33, 60, std::ldexp(1.0f, -70));
         for (int col = 0; col < 48; ++col) set_b(o, 60, col, std::ldexp(1.5f, -60));
       }},
      // 2^70 · 2^60: a sum that could overflow; the last row's 1-row block declines
      {"A huge in row 34", 35 - 1, [](Operands& o, std::mt19937&) {
         o.a[34 * o.lda + 7] = std::ldexp(1.0f, 70);
         set_b(o, 7, 2, std::ldexp(1.0f, 60));
       }},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(std::string(v.name) + ", seed " + std::to_string(seed_));
    Operands o = draw(c, rng_);
    v.plant(o, rng_);
    const std::vector<float> want = reference(c, o);
    std::vector<unsigned char> scratch = scratch_for(c);
    const std::vector<float> before = o.acc;
    const int on_dot =
        panel_gemm_bf16_dot(o.a.data(), o.lda, o.panels.data(), static_cast<int64_t>(o.depth_cap) * kPanelWidth,
                            c.panels, o.acc.data(), o.ldacc, c.rows, c.depth, c.mma_k, c.overwrite, fp32,
                            scratch.data() + 7, scratch.size() - 7);
    EXPECT_EQ(on_dot, v.expect_on_dot);
    if (on_dot < 0) {
      expect_bits_equal(before, o.acc, "a declined call's accumulator");
      run_gemm(c, o, true);  // what panel_gemm does then: the FMAs
    }
    expect_bits_equal(want, o.acc, v.name);
    // And through panel_gemm with the dot products allowed, whatever it decides.
    Operands again = draw(c, rng_);
    v.plant(again, rng_);
    const std::vector<float> want_again = reference(c, again);
    std::vector<unsigned char> scratch_again = scratch_for(c);
    panel_gemm(again.a.data(), again.lda, again.panels.data(), static_cast<int64_t>(again.depth_cap) * kPanelWidth,
               c.panels, again.acc.data(), again.ldacc, c.rows, c.depth, c.mma_k, c.overwrite, fp32,
               scratch_again.data() + 7, scratch_again.size() - 7, true);
    expect_bits_equal(want_again, again.acc, "panel_gemm with AVX512-BF16");
  }
}
#endif

}  // namespace
}  // namespace fp8attn::engine
