// The BF16 attention backward kernel (kernels/sm90/attention/attention_bwd_kernel.hpp) on the SIMT
// emulator against the CPU engine through the C API, deterministic mode: dq, dk and dv bit-equal
// under round-robin and three shuffled schedules, on fresh N(0, 1) BF16 inputs
// (bf16_bwd_emu_support.hpp). Shapes stay small: every case runs four emulated launches, and each
// test stays under a minute in Release on a shared machine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/bf16_bwd_emu_support.hpp"

namespace fp8attn::testing {
namespace {

void head_dim_cases(int hd) {
  for (bool causal : {false, true}) {
    BwdCase c;
    c.shape = {1, 150, 170, 2, 1, hd};  // GQA 2:1, lengths not multiples of the tiles
    c.causal = causal;
    c.name = "hd" + std::to_string(hd) + (causal ? " causal" : "");
    expect_bwd_emulator_matches_engine(c);
  }
}

TEST(Bf16BwdEmu, HeadDim64CausalAndNot) { head_dim_cases(64); }
TEST(Bf16BwdEmu, HeadDim128CausalAndNot) { head_dim_cases(128); }

/// Sequence lengths around the key block BlockN (128 at head_dim 64, 64 at 256): 1, BlockN − 1,
/// BlockN, BlockN + 1 and 3·BlockN + 5, queries and keys alike, causal for the longest.
void length_cases(const std::vector<int64_t>& lengths, int hd = 64) {
  const int bn = bwd_block_n(hd);
  for (int64_t l : lengths) {
    BwdCase c;
    c.shape = {1, l, l, 2, 1, hd};
    c.causal = l > 2 * bn;
    c.name = "hd" + std::to_string(hd) + " length " + std::to_string(l) + (c.causal ? " causal" : "");
    expect_bwd_emulator_matches_engine(c);
  }
}

TEST(Bf16BwdEmu, LengthsUpToTheKeyBlock) {
  const int bn = bwd_block_n(64);
  length_cases({1, bn - 1, bn});
}
TEST(Bf16BwdEmu, LengthsPastTheKeyBlock) {
  const int bn = bwd_block_n(64);
  length_cases({bn + 1, 3 * bn + 5});
}

/// dK and dV of a KV head sum over its query heads, in the engine's order (heads ascending).
TEST(Bf16BwdEmu, Gqa4To1AndMqa) {
  for (int hkv : {2, 1}) {
    BwdCase c;
    c.shape = {1, 130, 140, hkv * 4 == 8 ? 8 : 4, hkv, 64};  // 8:2 (GQA 4:1) and 4:1 (MQA)
    c.causal = true;
    c.name = "heads " + std::to_string(c.shape.heads_q) + ":" + std::to_string(hkv) + " causal";
    expect_bwd_emulator_matches_engine(c);
  }
}

/// Sliding windows: key blocks that only some query blocks visit, rows with part of a block.
TEST(Bf16BwdEmu, SlidingWindows) {
  struct W {
    int left, right;
    bool causal;
  };
  for (const W& w : {W{40, 10, false}, W{100, -1, true}}) {
    BwdCase c;
    c.shape = {1, 300, 300, 1, 1, 64};
    c.causal = w.causal;
    c.window_left = w.left;
    c.window_right = w.right;
    c.name = "window (" + std::to_string(w.left) + ", " + std::to_string(w.right) + ")" + (w.causal ? " causal" : "");
    expect_bwd_emulator_matches_engine(c);
  }
}

/// Three packed sequences (cu_seqlens): lengths 1, 130, 64 queries against 200, 5, 129 keys,
/// causal and not.
void expect_varlen_three_sequences_match(int head_dim) {
  const std::vector<int32_t> cu_q{0, 1, 131, 195}, cu_k{0, 200, 205, 334};
  for (bool causal : {false, true}) {
    BwdCase c;
    c.shape = {1, cu_q.back(), cu_k.back(), 2, 1, head_dim};
    c.cu_q = &cu_q;
    c.cu_k = &cu_k;
    c.causal = causal;
    c.name = "hd" + std::to_string(head_dim) + " varlen 3 sequences" + (causal ? " causal" : "");
    expect_bwd_emulator_matches_engine(c);
  }
}

TEST(Bf16BwdEmu, VarlenThreeSequences) { expect_varlen_three_sequences_match(64); }

/// Empty sequences: queries without keys get dq = 0, keys without queries dk = dv = 0; and a BF16
/// dq (head_dim 128; the other cases store F32 dq, bf16_bwd_emu_support.hpp).
TEST(Bf16BwdEmu, EmptySequencesAndBf16Dq) {
  const std::vector<int32_t> cu_q{0, 0, 50, 80}, cu_k{0, 40, 40, 110};
  BwdCase c;
  c.shape = {1, cu_q.back(), cu_k.back(), 2, 1, 64};
  c.cu_q = &cu_q;
  c.cu_k = &cu_k;
  c.name = "varlen with empty query and key sequences";
  expect_bwd_emulator_matches_engine(c);
  BwdCase f;
  f.shape = {1, 100, 100, 1, 1, 128};
  f.causal = true;
  f.dq_dtype = FP8ATTN_DTYPE_BF16;
  f.name = "hd128 causal, dq BF16";
  expect_bwd_emulator_matches_engine(f);
}


// Head dim 256: the two consumer warpgroups share the 64-key block and split along N
// (kernels/sm90/attention/bwd_mainloop_shared_keys.hpp), so P and dS cross between them through
// shared memory. The same cases as above, at this head dim.
TEST(Bf16BwdEmu, HeadDim256CausalAndNot) { head_dim_cases(256); }

/// Odd lengths around its BlockN of 64: a query block whose second warpgroup's 32 columns are all
/// padding (length 1, 63), exactly one block, one past it, and 3·64 + 5 causal.
TEST(Bf16BwdEmu, HeadDim256LengthsUpToTheKeyBlock) {
  const int bn = bwd_block_n(256);
  length_cases({1, bn - 1, bn}, 256);
}
TEST(Bf16BwdEmu, HeadDim256LengthsPastTheKeyBlock) {
  const int bn = bwd_block_n(256);
  length_cases({bn + 1, 3 * bn + 5}, 256);
}

TEST(Bf16BwdEmu, HeadDim256Gqa4To1) {
  BwdCase g;
  g.shape = {1, 90, 100, 8, 2, 256};  // GQA 4:1
  g.causal = true;
  g.name = "hd256 heads 8:2 causal";
  expect_bwd_emulator_matches_engine(g);
}

TEST(Bf16BwdEmu, HeadDim256SlidingWindow) {
  BwdCase w;
  w.shape = {1, 200, 200, 1, 1, 256};
  w.window_left = 40;
  w.window_right = 10;
  w.name = "hd256 window (40, 10)";
  expect_bwd_emulator_matches_engine(w);
}

TEST(Bf16BwdEmu, HeadDim256Varlen) { expect_varlen_three_sequences_match(256); }

/// Empty query and key sequences, and a BF16 dq.
TEST(Bf16BwdEmu, HeadDim256EmptySequencesAndBf16Dq) {
  const std::vector<int32_t> eq{0, 0, 50, 80}, ek{0, 40, 40, 110};
  BwdCase e;
  e.shape = {1, eq.back(), ek.back(), 2, 1, 256};
  e.cu_q = &eq;
  e.cu_k = &ek;
  e.dq_dtype = FP8ATTN_DTYPE_BF16;
  e.name = "hd256 varlen with empty query and key sequences, dq BF16";
  expect_bwd_emulator_matches_engine(e);
}

/// Atomic mode at head_dim 256 within the bound of the other head dims
/// (test_bf16_bwd_emu_checks.cpp, AtomicModeWithinBoundOfTheOracle).
TEST(Bf16BwdEmu, HeadDim256AtomicModeWithinBoundOfTheOracle) {
  BwdCase c;
  c.shape = {1, 150, 300, 2, 1, 256};  // up to five key blocks add into a query block's dQ
  c.causal = true;
  c.name = "atomic hd256 causal";
  expect_bwd_atomic_within_oracle_bound(c);
}

}  // namespace
}  // namespace fp8attn::testing
