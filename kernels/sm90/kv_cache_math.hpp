// Per-(token, KV head) descales of a paged KV cache (FP8ATTN_KV_SCALE_PER_TOKEN_HEAD), written
// once for the Hopper kernel (attention/fwd_kv_token_scales.hpp) and the CPU engine
// (lib/attention/engine/query_tile.cpp, decode_tile.cpp), so both round the same way.
//
// K's descale multiplies its key's logits (after any per-block descale). V's is split in two:
// the block's largest V descale, applied to the block's P·V product at its promotion as a
// per-block V descale is (times that one when both are present), and each key's ratio to it
// (≤ 1), applied to P̃'s column after the row sums and before P's cast. Dividing by the block's
// largest keeps P̃'s largest entries where the P scale put them, away from E4M3's underflow.
//
// BF16 P (BF16 Q over an E4M3 cache) takes the simpler rule: K's descale as above, and V's whole,
// P̃'s column j times v_j (kv_token_v_whole) after the row sums and before P's BF16 cast, P·V
// accumulating straight into O with no promotion. BF16 keeps 8 exponent bits, so P̃ · v_j sits
// nowhere near its underflow for any descale a scale cache holds, and the BF16 kernel has no
// second O tile to promote from (its HGMMA accumulates in FP32).
#pragma once

// NOTE: tile_config.hpp for FP8ATTN_HOST_DEVICE alone, as mask.hpp: the engine includes this
// header without the arch layer.
#include "kernels/sm90/tile_config.hpp"

namespace fp8attn::sm90 {

/// One step of the block's largest V descale, from 0: std::max(largest, v)'s choice (exact, so
/// the order of the keys does not matter).
FP8ATTN_HOST_DEVICE float kv_token_max(float largest, float v) { return largest < v ? v : largest; }

/// Key j's share of V's descale: v_j / the block's largest, applied to P̃'s column j.
FP8ATTN_HOST_DEVICE float kv_token_v_ratio(float v, float largest) { return v / largest; }

/// BF16 P: key j's whole V descale, P̃'s column j's factor (no block largest, no promotion).
FP8ATTN_HOST_DEVICE float kv_token_v_whole(float v) { return v; }

/// The factor of the block's P·V product at its promotion: the per-block V descale (1 when
/// absent) times the block's largest per-token V descale (1 without a scale cache).
FP8ATTN_HOST_DEVICE float kv_token_pv_factor(float v_block, float largest) { return v_block * largest; }

}  // namespace fp8attn::sm90
