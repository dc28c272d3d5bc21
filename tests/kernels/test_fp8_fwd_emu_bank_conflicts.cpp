// Shared-memory wavefronts of the emulated attention forward per kernel role
// and KV block (the counter of kernels/emu/bank_conflicts.hpp): the producer's
// TMA loads (warp 0), the E4M3 V transpose (warps 1-3) and the consumers' wgmma
// operand reads (warps 4 and up), each against its conflict-free minimum, and
// the consumers' writes of O's stage where O goes out through TMA, at head_dim
// 64, 128 and 256, for E4M3 under each P·V promotion and for BF16.
// Counting must not change a result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/emu/bank_conflicts.hpp"
#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;
using emu::SmemPath;
using emu::SmemWavefronts;

/// The V path's budget: the transpose's wavefronts at most 1.25x their
/// conflict-free minimum. Its lane map (fwd_v_transpose.hpp) makes every load
/// and store one wavefront, so it runs at 1.00 at every head_dim; before it,
/// Vᵀ's 8-row stride (a multiple of 128 B) put the 32-bit stores of a warp on
/// 2 to 8 banks: 8.5x at head_dim 128 and 256, 5.0x at 64.
constexpr double kVTransposeBudget = 1.25;

struct Outputs {
  std::vector<uint16_t> out;
  std::vector<float> lse;
};

struct Variant {
  int32_t dtype;
  int32_t promote;  ///< pv_promote_interval: 0 off, 1 every block, 2 every
                    ///< second block
  const char* name;
};

/// One launch of `shape` through the library's plan, with or without counting.
Outputs launch(const AttentionShape& s, const Variant& v, QuantizedInputs& in, emu::SmemTraffic* traffic,
               int64_t* kv_blocks, int64_t* tiles_out, int* block_m, int* block_n, bool* tma_out) {
  Outputs r;
  r.out.assign(static_cast<size_t>(s.seqlen_q * s.heads_q * s.head_dim), 0xFFFF);
  r.lse.assign(static_cast<size_t>(s.heads_q * s.seqlen_q), -12345.0f);
  fp8attn_attention_args args{};
  args.struct_size = sizeof args;
  args.q = dense_host_tensor(in.q.data(), v.dtype, {1, s.seqlen_q, s.heads_q, s.head_dim});
  args.k = dense_host_tensor(in.k.data(), v.dtype, {1, s.seqlen_k, s.heads_kv, s.head_dim});
  args.v = dense_host_tensor(in.v.data(), v.dtype, {1, s.seqlen_k, s.heads_kv, s.head_dim});
  args.out = dense_host_tensor(r.out.data(), FP8ATTN_DTYPE_BF16, {1, s.seqlen_q, s.heads_q, s.head_dim});
  args.lse = dense_host_tensor(r.lse.data(), FP8ATTN_DTYPE_F32, {1, s.heads_q, s.seqlen_q});
  fp8attn_attention_desc desc = make_desc(s, v.dtype, FP8ATTN_DTYPE_BF16);
  desc.pv_promote_interval = v.promote;
  const AttentionConfig config = make_attention_config(desc);
  const AttentionProblem problem = make_attention_problem(config, args, FP8ATTN_DEVICE_HOST);
  const sm90::FwdLaunch plan = gpu::plan_attention_fwd(config, problem, nullptr, 2);
  *tma_out = plan.args.tma_out;
  sm90::with_fwd_config(plan.key, [&](auto cfg) {
    using Cfg = decltype(cfg);
    // Non-causal: every query tile visits every KV block.
    const int64_t tiles = s.heads_q * ((s.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
    *kv_blocks = tiles * ((s.seqlen_k + Cfg::kBlockN - 1) / Cfg::kBlockN);
    *tiles_out = tiles;
    *block_m = Cfg::kBlockM;
    *block_n = Cfg::kBlockN;
  });
  emu::LaunchConfig schedule;
  schedule.mma_model = plan.mma_model;
  schedule.smem_traffic = traffic;
  sm90::launch_attention_fwd_emulated(plan, schedule);
  return r;
}

double per_block(uint64_t v, int64_t blocks) { return static_cast<double>(v) / static_cast<double>(blocks); }

TEST(Fp8FwdEmuBankConflicts, WavefrontsPerRolePerKvBlock) {
  std::printf(
      "| kernel (input, head_dim, promotion) | role (path) | instructions / block | wavefronts / block | minimum / "
      "block | ratio |\n");
  std::printf("|---|---|---|---|---|---|\n");
  const Variant variants[] = {{FP8ATTN_DTYPE_E4M3, 0, "E4M3, %d, off"},
                              {FP8ATTN_DTYPE_E4M3, 1, "E4M3, %d, every-block"},
                              {FP8ATTN_DTYPE_E4M3, 2, "E4M3, %d, every-N"},
                              {FP8ATTN_DTYPE_BF16, 0, "BF16, %d, off"}};
  for (const Variant& variant : variants)
    for (int head_dim : {64, 128, 256}) {
      const bool fp8 = variant.dtype == FP8ATTN_DTYPE_E4M3;
      char kernel[64];
      std::snprintf(kernel, sizeof kernel, variant.name, head_dim);
      const uint64_t seed = fresh_seed();
      const AttentionShape shape{1, 128, 320, 2, 1, head_dim};
      QuantizedInputs in = quantize(normal_inputs(shape, seed), variant.dtype,
                                    fp8 ? ScaleGranularity::PerTensor : ScaleGranularity::Unit);
      emu::SmemTraffic traffic;
      int64_t blocks = 0, tiles = 0;
      int block_m = 0, block_n = 0;
      bool tma_out = false;
      const Outputs counted = launch(shape, variant, in, &traffic, &blocks, &tiles, &block_m, &block_n, &tma_out);
      const Outputs plain = launch(shape, variant, in, nullptr, &blocks, &tiles, &block_m, &block_n, &tma_out);
      ASSERT_GT(blocks, 0);
      EXPECT_EQ(std::memcmp(counted.out.data(), plain.out.data(), counted.out.size() * 2), 0) << "counting changed O";
      EXPECT_EQ(std::memcmp(counted.lse.data(), plain.lse.data(), counted.lse.size() * 4), 0)
          << "counting changed the LSE";
      EXPECT_NE(counted.out[0], 0xFFFF) << "the kernel wrote no output";
      const unsigned warps = static_cast<unsigned>(traffic.per_warp.size());
      ASSERT_GE(warps, 8u) << "a producer warpgroup and at least one consumer warpgroup";

      struct Role {
        const char* name;
        SmemWavefronts w;
        int64_t per;  ///< what one row counts: KV blocks, or query tiles for the roles marked "per tile"
      };
      // NOTE: Q's load and O's stage happen once per query tile, which this short shape amortizes
      // over 2 to 4 KV blocks (a 16k-token tile over 70 to 170): they are split from the
      // per-block roles and reported per tile, so that the per-block rows (the roofline's,
      // tools/roofline) are the steady state's whatever BlockN is. The TMA counter takes whole
      // boxes, zero-filled rows included, so K and V are 2 · BlockN · head_dim bytes per block and
      // the rest of the producer's TMA wavefronts are Q's (asserted below).
      const SmemWavefronts tma_all = traffic.warps(0, 1, SmemPath::AsyncCopy);
      const uint64_t kv_per_block = 2ull * block_n * head_dim * (fp8 ? 1 : 2) / 128;
      const uint64_t kv_wavefronts = kv_per_block * static_cast<uint64_t>(blocks);
      ASSERT_GE(tma_all.wavefronts, kv_wavefronts) << kernel << ": K and V of every block, at least";
      const uint64_t q_wavefronts = static_cast<uint64_t>(tiles) * block_m * head_dim * (fp8 ? 1 : 2) / 128;
      EXPECT_EQ(tma_all.wavefronts, kv_wavefronts + q_wavefronts)
          << kernel << ": the producer's TMA loads are K and V per block and Q per tile";
      // (Instructions: the TMA rows count boxes' wavefronts only.)
      const SmemWavefronts tma_kv{0, kv_wavefronts, kv_wavefronts};
      const SmemWavefronts tma_q{0, tma_all.wavefronts - kv_wavefronts, tma_all.minimum - kv_wavefronts};
      const Role roles[] = {
          {"producer (TMA: K, V)", tma_kv, blocks},
          {"V transpose (ld/st.shared)", traffic.warps(1, 4, SmemPath::Generic), blocks},
          {"consumer (wgmma operands)", traffic.warps(4, warps, SmemPath::Tensor), blocks},
          {"producer (TMA: Q, per tile)", tma_q, tiles},
          {"consumer (ld/st.shared: O's stage, per tile)", traffic.warps(4, warps, SmemPath::Generic), tiles},
      };
      for (const Role& r : roles)
        std::printf("| %s | %s | %.1f | %.1f | %.1f | %.2f |\n", kernel, r.name, per_block(r.w.instructions, r.per),
                    per_block(r.w.wavefronts, r.per), per_block(r.w.minimum, r.per),
                    r.w.minimum ? static_cast<double>(r.w.wavefronts) / static_cast<double>(r.w.minimum) : 0.0);
      std::printf("%s, BlockN %d: %lld KV blocks in %llu CTAs, seed %llu\n", kernel, block_n,
                  static_cast<long long>(blocks), static_cast<unsigned long long>(traffic.ctas),
                  static_cast<unsigned long long>(seed));
      for (const auto& [site, w] : traffic.per_site)
        std::printf("  %s: %llu instructions, %llu wavefronts, minimum %llu\n", site.c_str(),
                    static_cast<unsigned long long>(w.instructions), static_cast<unsigned long long>(w.wavefronts),
                    static_cast<unsigned long long>(w.minimum));

      // No other path in a role that has none: the transposers do no TMA or
      // wgmma, the producer's warp 0 no generic access, and nobody ldmatrix.
      EXPECT_EQ(traffic.warps(0, warps, SmemPath::Matrix).instructions, 0u);
      EXPECT_EQ(traffic.warps(0, 1, SmemPath::Generic).instructions, 0u);
      EXPECT_EQ(
          traffic.warps(1, 4, SmemPath::AsyncCopy).instructions + traffic.warps(1, 4, SmemPath::Tensor).instructions,
          0u);
      // The TMA loads (Q once per tile, K and V per block, above) at their minimum.
      EXPECT_GT(tma_all.instructions, 0u);
      EXPECT_EQ(tma_all.wavefronts, tma_all.minimum);
      // The consumers' operands sit in conflict-free layouts (128-byte swizzle
      // for Q and K, the no-swizzle canonical layout for Vᵀ): at their minimum,
      // and at least Kᵀ and Vᵀ of the block per 64 query rows.
      const SmemWavefronts& mma = roles[2].w;
      EXPECT_GT(mma.instructions, 0u);
      EXPECT_EQ(mma.wavefronts, mma.minimum) << kernel << ": a wgmma operand read conflicts";
      // O through TMA (a dense BF16 output of one sequence: the kernels with a stage,
      // fwd_config.hpp): the consumers' 4-byte writes of the 128B-swizzled stage are one
      // wavefront each, and the consumer warps issue TMA stores; without a stage they issue none.
      const SmemWavefronts consumer_tma = traffic.warps(4, warps, SmemPath::AsyncCopy);
      if (tma_out) {
        const SmemWavefronts& epilogue = roles[4].w;
        EXPECT_GE(epilogue.instructions, static_cast<uint64_t>(shape.seqlen_q * head_dim / 64))
            << kernel << ": O's stage written";
        EXPECT_EQ(epilogue.wavefronts, epilogue.minimum) << kernel << ": O's stage writes conflict";
        EXPECT_GT(consumer_tma.instructions, 0u) << kernel << ": no TMA store";
      } else {
        EXPECT_EQ(consumer_tma.instructions, 0u) << kernel << ": a TMA store without a stage";
      }
      std::printf("%s: O %s\n", kernel, tma_out ? "through TMA stores" : "from registers");
      if (!fp8) {
        // BF16 V is read by the wgmma as loaded (N-major): nothing is
        // transposed.
        EXPECT_EQ(traffic.warps(1, 4, SmemPath::Generic).instructions, 0u) << kernel;
        continue;
      }
      // The V transpose, against its budget.
      const SmemWavefronts& vt = roles[1].w;
      ASSERT_GT(vt.minimum, 0u);
      const double ratio = static_cast<double>(vt.wavefronts) / static_cast<double>(vt.minimum);
      EXPECT_LE(ratio, kVTransposeBudget) << kernel << ": the V path's shared-memory accesses conflict";
      EXPECT_EQ(vt.minimum, static_cast<uint64_t>(blocks) * block_n * head_dim / 16 * 8 / 32)
          << "4 loads and 4 stores of 4 bytes per 4x4 item, 32 lanes per wavefront";
      std::printf("%s: V transpose at %.2fx its conflict-free minimum; budget %.2fx\n", kernel, ratio,
                  kVTransposeBudget);
    }
}

}  // namespace
}  // namespace fp8attn::testing
