// The wgmma shared-memory matrix descriptor (PTX ISA 9.0 §9.7.15.5.1.2.2) and the swizzle
// patterns (§5.5.7), checked against the ISA's bit table and swizzle tables, and end to end: for
// each swizzle mode and major-ness, an operand laid out by the ISA's canonical layout table must
// give the CPU reference result bit for bit.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/emu/wgmma_test_support.hpp"

namespace fp8attn::test {
namespace {

using arch::Swizzle;
using emu::MmaInputType;

TEST(WgmmaDescriptor, BitFieldsPerIsaTable) {
  // start 0x1400 -> 0x140 in bits 13-0; LBO 16 -> 1 in bits 29-16; SBO 1024 -> 64 in bits 45-32.
  struct Case {
    Swizzle s;
    uint64_t layout;  // bits 63-62: 0 none, 1 = 128B, 2 = 64B, 3 = 32B
  };
  for (const Case c : {Case{Swizzle::None, 0}, Case{Swizzle::B128, 1}, Case{Swizzle::B64, 2}, Case{Swizzle::B32, 3}}) {
    const uint64_t d = arch::make_wgmma_descriptor(0x1400, 16, 1024, c.s);
    const uint64_t expect = 0x140ull | (1ull << 16) | (64ull << 32) | (c.layout << 62);
    EXPECT_EQ(d, expect) << "swizzle span " << arch::swizzle_span_bytes(c.s);
    const auto f = arch::decode_wgmma_descriptor(d);
    EXPECT_EQ(f.start_address, 0x1400u);
    EXPECT_EQ(f.leading_byte_offset, 16u);
    EXPECT_EQ(f.stride_byte_offset, 1024u);
    EXPECT_EQ(f.base_offset, 0u);
    EXPECT_EQ(f.swizzle, c.s);
    std::printf("swizzle %u B: descriptor 0x%016llx\n", arch::swizzle_span_bytes(c.s), static_cast<unsigned long long>(d));
  }
  // The 18-bit address range keeps bits 17..4 only.
  EXPECT_EQ(arch::make_wgmma_descriptor(0x4'0010, 0, 0, Swizzle::None) & 0x3FFF, 1u);
  // Stepping K inside a swizzle atom moves only the start field.
  const uint64_t d = arch::make_wgmma_descriptor(0x2000, 16, 1024, Swizzle::B128);
  EXPECT_EQ(arch::decode_wgmma_descriptor(arch::wgmma_descriptor_advance(d, 96)).start_address, 0x2060u);
}

// PTX ISA 9.0 §5.5.7 tables: the 16-byte chunk stored at position j of 128-byte line i.
TEST(WgmmaDescriptor, SwizzleMatchesIsaTables) {
  const int k32[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}};
  const int k64[4][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5}, {3, 2, 1, 0, 7, 6, 5, 4}};
  const int k128[8][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {1, 0, 3, 2, 5, 4, 7, 6}, {2, 3, 0, 1, 6, 7, 4, 5},
                          {3, 2, 1, 0, 7, 6, 5, 4}, {4, 5, 6, 7, 0, 1, 2, 3}, {5, 4, 7, 6, 1, 0, 3, 2},
                          {6, 7, 4, 5, 2, 3, 0, 1}, {7, 6, 5, 4, 3, 2, 1, 0}};
  int checked = 0;
  for (uint32_t base : {0u, 1024u, 8192u})
    for (int line = 0; line < 16; ++line)
      for (int pos = 0; pos < 8; ++pos) {
        // Logical chunk c lands at physical position pos where table[line][pos] == c; the XOR is
        // an involution, so swizzle(logical chunk table[line][pos]) == pos.
        auto check = [&](Swizzle s, int expected_logical) {
          const uint32_t logical = base + 128 * line + 16 * expected_logical + 3;
          const uint32_t physical = emu::swizzle_address(logical, s);
          EXPECT_EQ(physical, base + 128u * line + 16u * pos + 3) << "span " << arch::swizzle_span_bytes(s) << " line " << line;
          ++checked;
        };
        check(Swizzle::B32, k32[line % 2][pos]);
        check(Swizzle::B64, k64[line % 4][pos]);
        check(Swizzle::B128, k128[line % 8][pos]);
        check(Swizzle::None, pos);
      }
  std::printf("checked %d swizzled addresses against the ISA tables\n", checked);
}

struct LayoutCase {
  MmaInputType type;
  bool a_k_major, b_k_major;
  Swizzle swizzle;
};

template <int N>
void expect_layout_case(const LayoutCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const bool fp8 = c.type != MmaInputType::BF16;
  const int k_instr = fp8 ? 32 : 16;
  const uint32_t e = fp8 ? 1 : 2;
  // As many k-blocks as one swizzle row holds for K-major (4 for 128B), 2 otherwise: the
  // descriptor then also steps K inside an atom.
  const uint32_t span = arch::swizzle_span_bytes(c.swizzle);
  const int k_blocks = (c.a_k_major || c.b_k_major) && c.swizzle != Swizzle::None ? static_cast<int>(span / 32) : 2;
  const int K = k_blocks * k_instr;
  const auto a = random_elements(c.type, 64 * K, rng);
  const auto b = random_elements(c.type, static_cast<size_t>(N) * K, rng);
  const auto pa = make_placement(c.a_k_major, c.swizzle, e, 0, 64, K);
  const uint32_t b_start = 32768;
  const auto pb = make_placement(c.b_k_major, c.swizzle, e, b_start, N, K);
  std::vector<uint8_t> image;
  pa.write(image, a);
  pb.write(image, b);
  std::vector<uint64_t> da, db;
  for (int kb = 0; kb < k_blocks; ++kb) {
    da.push_back(pa.descriptor(static_cast<size_t>(kb) * k_instr));
    db.push_back(pb.descriptor(static_cast<size_t>(kb) * k_instr));
  }
  MmaKernelArgs args;
  args.image = image.data();
  args.image_bytes = static_cast<uint32_t>(image.size());
  args.type = c.type;
  args.a_k_major = c.a_k_major;
  args.b_k_major = c.b_k_major;
  args.desc_a = da.data();
  args.desc_b = db.data();
  args.k_blocks = k_blocks;
  std::vector<float> zero(static_cast<size_t>(64) * N, 0.0f);
  const auto d = run_mma<N>(args, zero, seed, true);
  const auto expect = reference_mma(c.type, a, b, 64, N, K, k_instr, zero, false);
  int mismatches = 0;
  for (size_t i = 0; i < d.size(); ++i) mismatches += std::memcmp(&d[i], &expect[i], 4) != 0;
  EXPECT_EQ(mismatches, 0);
  std::printf("%s A %s-major B %s-major swizzle %u B, m64n%d, %d k-blocks: %d mismatches (seed %llu)\n",
              fp8 ? "e4m3" : "bf16", c.a_k_major ? "K" : "M", c.b_k_major ? "K" : "N",
              c.swizzle == Swizzle::None ? 0 : span, N, k_blocks, mismatches, static_cast<unsigned long long>(seed));
}

TEST(WgmmaDescriptor, EachSwizzleModeKMajorFp8) {
  uint64_t seed = 100;
  for (Swizzle s : {Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128})
    expect_layout_case<64>({MmaInputType::E4M3, true, true, s}, seed++);
  expect_layout_case<128>({MmaInputType::E5M2, true, true, Swizzle::B128}, seed++);
}

TEST(WgmmaDescriptor, EachSwizzleModeBf16BothMajors) {
  uint64_t seed = 200;
  for (Swizzle s : {Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128}) {
    expect_layout_case<64>({MmaInputType::BF16, true, true, s}, seed++);
    expect_layout_case<64>({MmaInputType::BF16, false, false, s}, seed++);
    expect_layout_case<64>({MmaInputType::BF16, true, false, s}, seed++);
  }
}

}  // namespace
}  // namespace fp8attn::test
