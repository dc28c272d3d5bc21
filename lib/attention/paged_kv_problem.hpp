// The forward's extension chain (args.next) and the paged KV cache it carries: read and checked
// here, then folded into the AttentionProblem (its PagedKv, and k and v pointing at the pages).
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn {

/// What args.next carried.
struct ForwardExtensions {
  bool paged = false;
  fp8attn_paged_kv paged_kv{};  ///< full-size copy, fields past its struct_size defaulted
};

/// Walks the chain from args.next: every node starts with `struct_size`, `next` and
/// `struct_type`. BAD_STRUCT_SIZE for a node too small to hold its tag or its layout;
/// BAD_EXTENSION for an unknown tag, a tag given twice, a paged cache on a plan whose page_size is
/// 0, or a plan with page_size ≥ 1 and no paged cache.
ForwardExtensions read_forward_extensions(const AttentionConfig& config, const void* next);

/// Checks the paged cache against the config and the problem's q side (p->batch and the layout
/// are set; args' descales read), then fills p->paged, p->k and p->v (the caches: batch_stride
/// is the page stride, seq_stride the token stride), p->max_seqlen_k and, with a scale
/// granularity, its scale caches. Where the host can read them (device HOST), seqused_k, the
/// block table's entries in use and the descales are checked too.
void fill_paged_kv(const AttentionConfig& config, const fp8attn_paged_kv& kv, const fp8attn_attention_args& args,
                   AttentionProblem* p, int32_t device);

/// After the args' descales are read: a PER_HEAD scale cache becomes the problem's K and V
/// descales (batch stride 0). PER_TOKEN_HEAD ones stay in p->paged (the engine applies them per key).
void apply_paged_descales(AttentionProblem* p);

}  // namespace fp8attn
