// Per-head Gram matrices G = W_h·W_hᵀ (d_h × d_h) of a projection's d_h × d row blocks, with
// OpenBLAS SYRK. The d × d interaction matrix is never formed: everything the spectral norms
// need about W_Q,hᵀ·W_K,g lives in these two small Grams (DESIGN §3).
#pragma once

#include <cstdint>

#include "lib/spectral/qk_weights.hpp"

namespace fp8attn {

class ThreadPool;

/// Writes the full symmetric Gram of each head h in [0, num_heads) to grams + h·d_h², row-major.
/// `block_buffer` holds d_h·cols floats; it is used when the weight cannot be read by BLAS in
/// place (BF16, E4M3, a descale, or a non-unit column stride), and may then be filled in
/// parallel on `pool`.
///
/// NOTE: SYRK runs on OpenBLAS's own threads (all cores), one head after another; a head's
/// SYRK is d_h²·d multiply-adds, large enough for OpenBLAS to split. The conversion to F32 runs
/// on the context's pool. The two never overlap, so the cores are not oversubscribed.
void compute_head_grams(const WeightMatrix& w, int32_t num_heads, int32_t head_dim, float* block_buffer, float* grams,
                        ThreadPool& pool);

}  // namespace fp8attn
