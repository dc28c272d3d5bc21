// wgmma register fragments pinned to the PTX ISA 9.0 figures: the F32 accumulator D of
// m64nNk16/k32 (Fig. 149/153) and the A-from-register fragments for BF16 (Fig. 148) and E4M3
// (Fig. 152), checked as formulas and through the emulated instruction.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "kernels/sm90/pv_key_order.hpp"
#include "tests/emu/wgmma_test_support.hpp"

namespace fp8attn::test {
namespace {

using emu::MmaInputType;

// Entries read off the ISA's D-fragment figure (rows 0-15 of warp 0 and the warp offsets):
// thread, register -> (row, col).
struct DEntry {
  int t, i, row, col;
};
constexpr DEntry kIsaDEntries[] = {
    {0, 0, 0, 0},   {0, 1, 0, 1},   {1, 0, 0, 2},    {3, 1, 0, 7},     {4, 0, 1, 0},  {28, 0, 7, 0},
    {31, 1, 7, 7},  {0, 2, 8, 0},   {0, 3, 8, 1},    {31, 3, 15, 7},   {0, 4, 0, 8},  {0, 5, 0, 9},
    {0, 6, 8, 8},   {2, 7, 8, 13},  {32, 0, 16, 0},  {64, 0, 32, 0},   {96, 0, 48, 0}, {127, 3, 63, 7},
};

TEST(WgmmaFragment, AccumulatorEntriesFromIsaFigure) {
  for (const auto& e : kIsaDEntries) {
    const auto c = arch::wgmma_d_coord(e.t, e.i);
    EXPECT_EQ(c.row, e.row) << "thread " << e.t << " d" << e.i;
    EXPECT_EQ(c.col, e.col) << "thread " << e.t << " d" << e.i;
    EXPECT_EQ(arch::wgmma_d_thread(e.row, e.col), e.t);
    EXPECT_EQ(arch::wgmma_d_register(e.row, e.col), e.i);
  }
  // The pattern repeats every 8 columns with i += 4: thread 127's last register of m64n256.
  const auto last = arch::wgmma_d_coord(127, 127);
  EXPECT_EQ(last.row, 63);
  EXPECT_EQ(last.col, 255);
  std::printf("checked %zu ISA figure entries of the D fragment\n", std::size(kIsaDEntries));
}

template <int N>
void expect_d_bijective() {
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < N / 2; ++i) {
      const auto c = arch::wgmma_d_coord(t, i);
      ASSERT_TRUE(c.row >= 0 && c.row < 64 && c.col >= 0 && c.col < N);
      ASSERT_TRUE(seen.insert({c.row, c.col}).second) << "(" << c.row << "," << c.col << ") held twice";
      ASSERT_EQ(arch::wgmma_d_thread(c.row, c.col), t);
      ASSERT_EQ(arch::wgmma_d_register(c.row, c.col), i);
    }
  EXPECT_EQ(seen.size(), static_cast<size_t>(64 * N));
}

TEST(WgmmaFragment, AccumulatorMapIsBijective) {
  expect_d_bijective<16>();
  expect_d_bijective<64>();
  expect_d_bijective<256>();
}

// D(m, n) = m + 64 n through one emulated FP8 mma: A and B hold small exact E4M3 values whose
// products add up to the position code, so each register shows which element it holds.
template <int N>
void expect_position_codes(uint64_t seed) {
  constexpr int K = 32;
  std::vector<uint16_t> a(64 * K, num::float_to_e4m3(0.0f)), b(static_cast<size_t>(N) * K, num::float_to_e4m3(0.0f));
  for (int m = 0; m < 64; ++m) {
    a[m * K + 0] = num::float_to_e4m3(static_cast<float>(m % 8));
    a[m * K + 1] = num::float_to_e4m3(static_cast<float>(m / 8));
    a[m * K + 2] = num::float_to_e4m3(1.0f);
    a[m * K + 3] = num::float_to_e4m3(8.0f);
    a[m * K + 4] = num::float_to_e4m3(64.0f);
  }
  for (int n = 0; n < N; ++n) {
    b[n * K + 0] = num::float_to_e4m3(1.0f);
    b[n * K + 1] = num::float_to_e4m3(8.0f);
    b[n * K + 2] = num::float_to_e4m3(64.0f * (n % 8));
    b[n * K + 3] = num::float_to_e4m3(64.0f * ((n / 8) % 8));
    b[n * K + 4] = num::float_to_e4m3(64.0f * (n / 64));
  }
  const auto pa = make_placement(true, arch::Swizzle::B128, 1, 0, 64, K);
  const auto pb = make_placement(true, arch::Swizzle::B128, 1, 8192, N, K);
  std::vector<uint8_t> image;
  pa.write(image, a);
  pb.write(image, b);
  const uint64_t da = pa.descriptor(0), db = pb.descriptor(0);
  MmaKernelArgs args;
  args.image = image.data();
  args.image_bytes = static_cast<uint32_t>(image.size());
  args.desc_a = &da;
  args.desc_b = &db;
  std::vector<float> d_in(static_cast<size_t>(64) * N, -1.0f);
  // Read registers straight from the kernel output: thread t, register i must hold code(t, i).
  std::vector<float> d = run_mma<N>(args, d_in, seed, false);
  int checked = 0;
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < N / 2; ++i) {
      const auto c = arch::wgmma_d_coord(t, i);
      ASSERT_EQ(d[static_cast<size_t>(c.row) * N + c.col], static_cast<float>(c.row + 64 * c.col))
          << "m64n" << N << " thread " << t << " d" << i;
      ++checked;
    }
  std::printf("m64n%d: %d registers hold their ISA position code (seed %llu)\n", N, checked,
              static_cast<unsigned long long>(seed));
}

TEST(WgmmaFragment, EmulatedMmaPlacesEachElementPerIsa) {
  expect_position_codes<16>(1);
  expect_position_codes<64>(2);
  expect_position_codes<256>(3);
}

// A-from-register fragments: per the ISA tables, BF16 R0 = {A[G][2q], A[G][2q+1]}, R1 = rows +8,
// R2 = cols +8, R3 = both; E4M3 R0 = A[G][4q..4q+3], R1 rows +8, R2 cols +16, R3 both.
TEST(WgmmaFragment, ARegisterEntriesFromIsaTables) {
  for (int t : {0, 5, 37, 127}) {
    const int w = t / 32, g = (t % 32) / 4, q = t % 4, G = 16 * w + g;
    const std::pair<int, int> bf16[8] = {{G, 2 * q},     {G, 2 * q + 1},     {G + 8, 2 * q},     {G + 8, 2 * q + 1},
                                         {G, 2 * q + 8}, {G, 2 * q + 9},     {G + 8, 2 * q + 8}, {G + 8, 2 * q + 9}};
    for (int v = 0; v < 8; ++v) {
      const auto c = arch::wgmma_a_bf16_coord(t, v);
      EXPECT_EQ(std::make_pair(c.row, c.col), bf16[v]) << "bf16 thread " << t << " a" << v;
    }
    for (int v = 0; v < 16; ++v) {
      const int reg = v / 4, byte = v % 4;
      const int row = G + 8 * (reg & 1), col = 4 * q + byte + 16 * (reg >> 1);
      const auto c = arch::wgmma_a_fp8_coord(t, v);
      EXPECT_EQ(std::make_pair(c.row, c.col), std::make_pair(row, col)) << "e4m3 thread " << t << " a" << v;
    }
  }
}

// RS form end to end: registers packed from a random A by the ISA tables must give the same D as
// the same A placed in shared memory, and as the CPU reference.
template <int N>
void expect_register_a_matches(MmaInputType type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const bool fp8 = type != MmaInputType::BF16;
  const int K = fp8 ? 32 : 16, e = fp8 ? 1 : 2, values = fp8 ? 16 : 8;
  const auto a = random_elements(type, 64 * K, rng);
  const auto b = random_elements(type, static_cast<size_t>(N) * K, rng);
  std::vector<uint32_t> regs(128 * 4, 0);
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < values; ++v) {
      const auto c = fp8 ? arch::wgmma_a_fp8_coord(t, v) : arch::wgmma_a_bf16_coord(t, v);
      const int per_reg = 4 / e;
      regs[t * 4 + v / per_reg] |= static_cast<uint32_t>(a[c.row * K + c.col]) << (8 * e * (v % per_reg));
    }
  const auto pb = make_placement(true, arch::Swizzle::B64, e, 0, N, K);
  std::vector<uint8_t> image;
  pb.write(image, b);
  const uint64_t db = pb.descriptor(0);
  MmaKernelArgs args;
  args.image = image.data();
  args.image_bytes = static_cast<uint32_t>(image.size());
  args.type = type;
  args.desc_b = &db;
  args.a_regs = regs.data();
  std::normal_distribution<float> nd;
  std::vector<float> d_in(static_cast<size_t>(64) * N);
  for (auto& x : d_in) x = nd(rng);
  args.first_accumulates = true;
  const auto d = run_mma<N>(args, d_in, seed, true);
  const auto expect = reference_mma(type, a, b, 64, N, K, K, d_in, true);
  int mismatches = 0;
  for (size_t i = 0; i < d.size(); ++i) mismatches += std::memcmp(&d[i], &expect[i], 4) != 0;
  EXPECT_EQ(mismatches, 0);
  std::printf("RS m64n%d %s: %d of %zu outputs differ bitwise from the CPU reference (seed %llu)\n", N,
              fp8 ? "e4m3" : "bf16", mismatches, d.size(), static_cast<unsigned long long>(seed));
}

TEST(WgmmaFragment, RegisterAOperandBf16AndE4m3) {
  expect_register_a_matches<64>(MmaInputType::BF16, 11);
  expect_register_a_matches<64>(MmaInputType::E4M3, 12);
  expect_register_a_matches<16>(MmaInputType::E4M3, 13);
}

// The E4M3 forward's P·V key order (kernels/sm90/pv_key_order.hpp): every FP8 A element a thread
// holds is, at key pv_key_of_slot(slot), an accumulator element of the same thread, in the
// register the softmax packs into that A register's byte (word 4kb + r holds the cast column
// pairs of groups 4kb + 2(r/2) and + 1 of row half r % 2, the lower group in the low half).
TEST(WgmmaFragment, PvKeyOrderPutsPInPlace) {
  for (int k = 0; k < 256; ++k) {
    EXPECT_EQ(sm90::pv_key_of_slot(sm90::pv_slot_of_key(k)), k);
    EXPECT_EQ(sm90::pv_slot_of_key(k) / sm90::kPvKeyPeriod, k / sm90::kPvKeyPeriod) << "the order leaves its 16 keys";
  }
  int checked = 0;
  for (int kb = 0; kb < 7; ++kb)  // BlockN up to 224
    for (int t = 0; t < arch::kWarpgroupThreads; ++t)
      for (int v = 0; v < 16; ++v) {
        const arch::FragmentCoord a = arch::wgmma_a_fp8_coord(t, v);
        const int key = 32 * kb + sm90::pv_key_of_slot(a.col);
        const int r = v / 4, b = v % 4;
        const int group = 4 * kb + 2 * (r / 2) + b / 2, half = r % 2, e = b % 2;
        ASSERT_EQ(arch::wgmma_d_thread(a.row, key), t) << "slot " << a.col << " of chunk " << kb;
        ASSERT_EQ(arch::wgmma_d_register(a.row, key), 4 * group + 2 * half + e) << "thread " << t << " element " << v;
        ++checked;
      }
  std::printf("checked %d A elements against their accumulator registers\n", checked);
}

}  // namespace
}  // namespace fp8attn::test
