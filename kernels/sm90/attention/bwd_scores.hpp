// The score-side math of a consumer warpgroup of the attention backward, on Sᵀ and dPᵀ
// accumulator fragments (rows: the warpgroup's keys; columns: query rows of the step), shared by
// both splits of the key block (bwd_mainloop.hpp, bwd_mainloop_shared_keys.hpp):
//   P = exp2(S·scale·log2e − LSE·log2e) and dS = P∘(dP − D), 0 where the mask hides the key, then
//   Pᵀ and dSᵀ cast to BF16 A fragments.
// Every floating-point step is the CPU engine's (lib/attention/engine/backward_tile.cpp): P through
// sm90::p_tilde (one FMA, then arch::ex2_approx), dS as P·(dP − D) in FP32 then rounded to BF16.
#pragma once

#include <cstdint>

#include "kernels/arch/cvt.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"
#include "kernels/arch/wgmma.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::sm90 {

/// The visible columns of the thread's two key rows in the step's query block, [lo, hi], less the
/// thread's column offset 2q (the forward's softmax compares compile-time columns so too). The
/// rows that see each key (`key_rows`: first, last per key) come from mask.hpp's visible_rows;
/// rows past the sequence lie outside.
struct BwdStepMask {
  int32_t lo[2], hi[2];
  FP8ATTN_ARCH_FN bool visible(int i) const {
    const int h = (i >> 1) & 1;
    const int32_t c = 8 * (i >> 2) + (i & 1);
    return c >= lo[h] && c <= hi[h];
  }
};

/// Stores, for each of the thread's two keys (key and key + 8 of the sequence), the first and last
/// query rows that see it, into the thread's `key_rows` slot of shared memory (read by step_mask).
FP8ATTN_ARCH_FN void store_key_rows(const MaskParams& mask, int32_t key, int32_t* key_rows) {
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    const KeyRange rows = visible_rows(mask, key + 8 * h);
    arch::smem_store(&key_rows[2 * h], static_cast<int32_t>(rows.first));
    arch::smem_store(&key_rows[2 * h + 1], static_cast<int32_t>(rows.last));
  }
}

FP8ATTN_ARCH_FN BwdStepMask step_mask(const int32_t* key_rows, int32_t row0) {
  const int32_t q = static_cast<int32_t>(arch::thread_idx_in_warpgroup() % 4);
  BwdStepMask m;
  FP8ATTN_UNROLL
  for (int h = 0; h < 2; ++h) {
    m.lo[h] = arch::smem_load(&key_rows[2 * h]) - row0 - 2 * q;
    m.hi[h] = arch::smem_load(&key_rows[2 * h + 1]) - row0 - 2 * q;
  }
  return m;
}

/// A per-row value (the LSE or D) of the thread's 16 columns, loaded as 2 per lane and broadcast by
/// shuffles: lane 4g + q loads columns 8g + 2q + {0, 1}, which the lanes 4j + q of the warp need as
/// their group j. NOTE: with the 16 loads per thread, ptxas hoisted them next to dK, dV, Sᵀ and
/// dPᵀ and the head_dim 128 consumers spilled; a shuffle result is used at once.
struct BwdRowValues {
  float mine[2];
  FP8ATTN_ARCH_FN float at(int i) const {  // register i: group i/4, column parity i%2
    const int q = static_cast<int>(arch::lane_idx() % 4);
    return arch::shfl_sync(0xffffffffu, mine[i & 1], 4 * (i >> 2) + q);
  }
};

FP8ATTN_ARCH_FN BwdRowValues load_row_values(const float* rows, int32_t row_step, int32_t valid_rows) {
  const int32_t lane = static_cast<int32_t>(arch::lane_idx());
  const int32_t c0 = 8 * (lane / 4) + 2 * (lane % 4);
  BwdRowValues v;
  FP8ATTN_UNROLL
  for (int c = 0; c < 2; ++c) v.mine[c] = c0 + c < valid_rows ? rows[(c0 + c) * row_step] : 0.0f;
  return v;
}

/// Sᵀ (raw logits) → Pᵀ = exp2(S·scale_log2 − LSE·log2e), 0 where hidden: sm90::p_tilde, the
/// engine's recompute_p; `lse` holds the LSE (log2 units) of the thread's columns.
template <int N>
FP8ATTN_ARCH_FN void recompute_p(arch::WgmmaAccF32<N>& s, const BwdStepMask& m, const BwdRowValues& lse,
                                 float scale_log2) {
  FP8ATTN_UNROLL
  for (int i = 0; i < N / 2; ++i) {
    const float lse_i = lse.at(i);  // every lane shuffles, visible or not
    s[i] = m.visible(i) ? p_tilde(s[i], scale_log2, lse_i) : 0.0f;
  }
}

/// dPᵀ → dSᵀ = P·(dP − D) in FP32, 0 where hidden; then Pᵀ and dSᵀ packed into A fragments (BF16
/// pairs, the layout of the forward's cast_p_bf16).
template <int N>
FP8ATTN_ARCH_FN void grad_scores(const arch::WgmmaAccF32<N>& p, arch::WgmmaAccF32<N>& dp, const BwdStepMask& m,
                                 const BwdRowValues& delta, arch::WgmmaAFragment (&pf)[N / 16],
                                 arch::WgmmaAFragment (&dsf)[N / 16]) {
  FP8ATTN_UNROLL
  for (int i = 0; i < N / 2; ++i) {
    const float delta_i = delta.at(i);
    dp[i] = m.visible(i) ? p[i] * (dp[i] - delta_i) : 0.0f;
  }
  FP8ATTN_UNROLL
  for (int pr = 0; pr < N / 4; ++pr) {  // pair pr = 2c + h
    pf[pr >> 2].reg[pr & 3] = arch::cvt_bf16x2(p[2 * pr], p[2 * pr + 1]);
    dsf[pr >> 2].reg[pr & 3] = arch::cvt_bf16x2(dp[2 * pr], dp[2 * pr + 1]);
  }
}

}  // namespace fp8attn::sm90
