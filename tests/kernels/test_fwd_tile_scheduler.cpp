// The attention forward's tile order (kernels/sm90/attention/fwd_tile_scheduler.hpp): every tile
// of a grid exactly once, in sections of tile_group (batch, head) pairs with the section's heads
// fastest and its query tiles from the last down; one section is the longest-first order of the
// whole grid; the section size fits the K and V of its heads in the L2 budget, and a causal grid
// keeps one section. Random grids (seed printed), both index widths the kernel uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <tuple>

#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::sm90 {
namespace {

AttentionFwdParams random_grid(std::mt19937_64& rng) {
  AttentionFwdParams p{};
  p.batch = 1 + static_cast<int32_t>(rng() % 5);
  p.heads_kv = 1 + static_cast<int32_t>(rng() % 4);
  p.heads_q = p.heads_kv * (1 + static_cast<int32_t>(rng() % 4));
  p.m_blocks = 1 + static_cast<int32_t>(rng() % 7);
  p.seqlen_q = static_cast<int64_t>(p.m_blocks) * 64;
  p.seqlen_k = 1 + static_cast<int64_t>(rng() % 300);
  const int32_t pairs = p.batch * p.heads_q;
  p.tile_group = static_cast<int32_t>(rng() % (pairs + 2));  // 0 and past every pair too
  p.num_tiles = p.m_blocks * pairs;
  return p;
}

template <class I>
void check_order(const AttentionFwdParams& p) {
  const int32_t pairs = p.batch * p.heads_q;
  const int32_t group = p.tile_group > 0 && p.tile_group < pairs ? p.tile_group : pairs;
  std::set<std::tuple<int32_t, int32_t, int32_t>> seen;
  for (int32_t index = 0; index < p.num_tiles; ++index) {
    const BasicFwdTile<I> t = fwd_tile<I>(p, index, 64, 64);
    ASSERT_GE(t.batch, 0);
    ASSERT_LT(t.batch, p.batch);
    ASSERT_GE(t.head, 0);
    ASSERT_LT(t.head, p.heads_q);
    ASSERT_GE(t.m_block, 0);
    ASSERT_LT(t.m_block, p.m_blocks);
    ASSERT_EQ(t.head_kv, t.head / (p.heads_q / p.heads_kv));
    ASSERT_TRUE(seen.emplace(t.batch, t.head, t.m_block).second) << "tile " << index << " visited twice";
    const int32_t pair = t.batch * p.heads_q + t.head;
    const int32_t section = index / (group * p.m_blocks);
    ASSERT_EQ(pair / group, section) << "tile " << index << " outside its section";
    if (index + 1 < p.num_tiles && (index + 1) / (group * p.m_blocks) == section) {
      const BasicFwdTile<I> next = fwd_tile<I>(p, index + 1, 64, 64);
      const int32_t next_pair = next.batch * p.heads_q + next.head;
      const bool same_row = next.m_block == t.m_block && next_pair == pair + 1;
      const bool next_row = next.m_block == t.m_block - 1 && next_pair == section * group;
      ASSERT_TRUE(same_row || next_row) << "tile " << index << ": the section's heads are not fastest";
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), static_cast<int64_t>(p.num_tiles));
}

TEST(FwdTileScheduler, EveryTileOnceInSectionsWithHeadsFastest) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    const AttentionFwdParams p = random_grid(rng);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " trial " << trial << " group " << p.tile_group);
    check_order<int32_t>(p);
    check_order<int64_t>(p);
  }
  std::printf("300 random grids, seed %llu\n", static_cast<unsigned long long>(seed));
}

TEST(FwdTileScheduler, OneSectionIsTheLongestFirstOrder) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 100; ++trial) {
    AttentionFwdParams p = random_grid(rng);
    const int32_t pairs = p.batch * p.heads_q;
    for (const int32_t group : {0, pairs}) {
      p.tile_group = group;
      for (int32_t index = 0; index < p.num_tiles; ++index) {
        const FwdTile t = fwd_tile(p, index, 64, 64);
        ASSERT_EQ(t.m_block, p.m_blocks - 1 - index / pairs) << "seed " << seed;
        ASSERT_EQ(t.batch * p.heads_q + t.head, index % pairs) << "seed " << seed;
      }
    }
  }
}

TEST(FwdTileScheduler, SectionsHoldTheKvThatFitsTheL2Budget) {
  // 16k keys of head_dim 128 in E4M3: 4 MiB of K and V per KV head, 8 of them in 32 MiB, so 8 KV
  // heads' 32 query heads (GQA 4) per section.
  EXPECT_EQ(fwd_tile_group(2, 32, 8, 16384, 256, false), 32);
  EXPECT_EQ(fwd_tile_group(2, 32, 8, 16384, 512, false), 16);  // BF16: twice the bytes
  EXPECT_EQ(fwd_tile_group(2, 32, 8, 16384, 256, true), 64);   // causal: one section
  EXPECT_EQ(fwd_tile_group(1, 8, 8, 1 << 22, 512, false), 1);  // at least one KV head's
  EXPECT_EQ(fwd_tile_group(1, 8, 2, 1 << 22, 512, false), 4);  // ... with its query heads
  EXPECT_EQ(fwd_tile_group(3, 4, 4, 512, 256, false), 12);     // short keys: every pair
  EXPECT_EQ(fwd_tile_group(1, 16, 16, 0, 256, false), 16);     // no keys
  EXPECT_GE(kTileSectionL2Bytes / (int64_t{4096} * 256), 1);
}

}  // namespace
}  // namespace fp8attn::sm90
