// Support of the emulated BF16 attention forward's tests: one case (shape, description, BF16
// inputs drawn from N(0,1) with a fresh seed, optionally with every odd key a copy of the key
// before it) run through the C API on the CPU backend and on FP8ATTN_BACKEND_EMULATOR under
// round-robin and shuffled schedules, compared bit for bit (fp8_fwd_emu_support.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/sm90/tile_config.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {

struct Bf16Case {
  workloads::AttentionShape shape;
  bool causal = false;
  int32_t window_left = -1, window_right = -1;
  int32_t kv_order = FP8ATTN_KV_ORDER_REVERSE;
  bool telemetry = true;
  bool stabilized = false;
  /// Every odd key a copy of the even key before it (same KV block: BlockN is even), so each
  /// block's row max is reached at least twice and the stabilized variant shifts it.
  bool duplicate_keys = false;
  int32_t out_dtype = FP8ATTN_DTYPE_BF16;
  std::string name;
};

/// BF16 tiles of the CPU engine and the kernel (tile_config.hpp).
inline int bf16_block_n(int head_dim) { return sm90::attention_tile(head_dim, false, sm90::PvPromotion::Off).block_n; }

inline workloads::QuantizedInputs bf16_inputs(const Bf16Case& c, uint64_t seed) {
  workloads::AttentionInputs real = workloads::normal_inputs(c.shape, seed);
  if (c.duplicate_keys) {
    const int64_t row = static_cast<int64_t>(c.shape.heads_kv) * c.shape.head_dim;  // [batch, seq, head, dim]
    for (int64_t b = 0; b < c.shape.batch; ++b)
      for (int64_t j = 1; j < c.shape.seqlen_k; j += 2) {
        const int64_t at = (b * c.shape.seqlen_k + j) * row;
        std::copy(real.k.begin() + (at - row), real.k.begin() + at, real.k.begin() + at);
      }
  }
  return workloads::quantize(real, FP8ATTN_DTYPE_BF16, workloads::ScaleGranularity::Unit);
}

inline fp8attn_attention_desc bf16_desc(const Bf16Case& c) {
  fp8attn_attention_desc d = workloads::make_desc(c.shape, FP8ATTN_DTYPE_BF16, c.out_dtype);
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.kv_order = c.kv_order;
  d.telemetry = c.telemetry;
  if (c.stabilized) d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  return d;
}

/// The case on the engine and the emulator: equal bits of out, LSE and telemetry.
inline void run_bf16_case(const Bf16Case& c) {
  const uint64_t seed = workloads::fresh_seed();
  expect_emulator_matches_engine(bf16_desc(c), c.shape, bf16_inputs(c, seed), seed, {}, c.name.c_str());
}

}  // namespace fp8attn::testing
