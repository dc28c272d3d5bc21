// The projection weights of one attention layer as the spectral code reads them: W_Q
// [heads_q·d_h, d] and W_K [heads_kv·d_h, d] in F32, BF16 or E4M3, any strides, each with a
// per-tensor descale. Validates the ABI tensors once and copies a head's d_h × d row block
// into a dense F32 buffer on demand.
#pragma once

#include <cstdint>
#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

class ThreadPool;

/// One weight matrix [rows, cols] with its descale.
struct WeightMatrix {
  const void* data = nullptr;
  int32_t dtype = FP8ATTN_DTYPE_F32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;  // elements
  int64_t col_stride = 0;  // elements
  float descale = 1.0f;

  /// Element (r, c) times the descale, as float.
  float at(int64_t r, int64_t c) const;
  /// True when rows are dense F32 with unit column stride and descale 1, so BLAS can read the
  /// block in place.
  /// NOTE: BLAS takes int sizes; a row stride above INT32_MAX goes through the copy instead of
  /// being narrowed into a negative lda.
  bool blas_ready() const {
    return dtype == FP8ATTN_DTYPE_F32 && col_stride == 1 && row_stride >= cols && row_stride <= INT32_MAX &&
           descale == 1.0f;
  }
};

/// Shapes of a QK spectral problem.
struct QkShape {
  int32_t num_heads_q = 0;
  int32_t num_heads_kv = 0;
  int32_t head_dim = 0;
  int64_t d_model = 0;
  int32_t group_size() const { return num_heads_q / num_heads_kv; }
};

/// Checks head counts and sizes (BAD_HEADS, BAD_SHAPE).
void check_qk_shape(const QkShape& shape);

/// Validates `t` as a rank-2 weight of `rows` × d_model on `device` in F32, BF16 or E4M3, and
/// returns its view. Throws Error naming `what`.
WeightMatrix make_weight_matrix(const fp8attn_tensor* t, const std::string& what, int64_t rows, int64_t d_model,
                                int32_t device, float descale);

/// Copies rows [row0, row0 + count) of `w` into `out` (dense, count × cols, F32), in parallel
/// over rows on `pool`.
void load_rows_f32(const WeightMatrix& w, int64_t row0, int64_t count, float* out, ThreadPool& pool);

}  // namespace fp8attn
