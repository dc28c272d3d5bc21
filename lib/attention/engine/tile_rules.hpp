// What the forward's and the decode path's tensor-core tiles (query_tile.cpp, decode_tile.cpp)
// decide once per call from the V descales: whether P·V goes through a fresh tile promoted into
// O, and how often. One text for both, so that they cannot drift from each other or from the
// kernel's choice (lib/backend/gpu/attention_fwd_plan.cpp, promotion_of).
// Included by those tiles inside their per-ISA namespaces (isa/query_tile_in_isa.cpp), after
// the shared types.
#pragma once

#include <cstdint>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn::engine {

struct PvRules {
  bool per_token;            ///< a paged cache's per-(token, head) descales
  bool v_blocks;             ///< each block's P·V scaled at promotion (per-block V, or per-token under E4M3 P)
  bool promote;              ///< P·V into a fresh tile, promoted into O
  int64_t promote_interval;  ///< blocks per promotion: 1 with v_blocks
};

/// NOTE: a per-block V descale needs each block's P·V product on its own, so it implies
/// two-level accumulation with promotion after every block. A paged cache's per-token descales
/// (docs/numerics.md, "KV scales") do too under E4M3 P, where V's are split into the block's
/// largest (applied at promotion) and each key's ratio to it (on P̃'s column before P's cast);
/// BF16 P takes V's descale whole on P̃'s column and P·V goes straight into O (kv_cache_math.hpp).
inline PvRules pv_rules(const AttentionConfig& c, const AttentionProblem& p) {
  PvRules r;
  r.per_token = p.paged.present && p.paged.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  r.v_blocks = p.v_block_descale.present() || (r.per_token && c.fp8());
  r.promote = c.pv_promote_interval > 0 || r.v_blocks;
  r.promote_interval = r.v_blocks ? 1 : c.pv_promote_interval;
  return r;
}

}  // namespace fp8attn::engine
