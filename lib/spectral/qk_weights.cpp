#include "lib/spectral/qk_weights.hpp"

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn {

float WeightMatrix::at(int64_t r, int64_t c) const {
  return num::load_as_float(data, dtype, r * row_stride + c * col_stride) * descale;
}

void check_qk_shape(const QkShape& s) {
  require(s.num_heads_q >= 1 && s.num_heads_kv >= 1, FP8ATTN_STATUS_BAD_HEADS,
          "num_heads_q and num_heads_kv must be ≥ 1, got " + std::to_string(s.num_heads_q) + " and " +
              std::to_string(s.num_heads_kv));
  require(s.num_heads_q % s.num_heads_kv == 0, FP8ATTN_STATUS_BAD_HEADS,
          "num_heads_q (" + std::to_string(s.num_heads_q) + ") must be a multiple of num_heads_kv (" +
              std::to_string(s.num_heads_kv) + ")");
  require(s.head_dim >= 1, FP8ATTN_STATUS_BAD_SHAPE, "head_dim must be ≥ 1, got " + std::to_string(s.head_dim));
  require(s.d_model >= 1, FP8ATTN_STATUS_BAD_SHAPE, "d_model must be ≥ 1, got " + std::to_string(s.d_model));
  // NOTE: the limits bound every buffer the spectral code sizes from these extents:
  // head_dim·d_model and heads·head_dim² then fit easily in size_t.
  require_at_most(s.num_heads_q, FP8ATTN_MAX_HEADS, "num_heads_q", FP8ATTN_STATUS_BAD_HEADS);
  require_at_most(s.head_dim, FP8ATTN_MAX_HEAD_DIM, "head_dim", FP8ATTN_STATUS_BAD_SHAPE);
  require_at_most(s.d_model, FP8ATTN_MAX_D_MODEL, "d_model", FP8ATTN_STATUS_BAD_SHAPE);
}

WeightMatrix make_weight_matrix(const fp8attn_tensor* t, const std::string& what, int64_t rows, int64_t d_model,
                                int32_t device, float descale) {
  require(t != nullptr, FP8ATTN_STATUS_NULL_POINTER, what + " is NULL");
  TensorCheck check;
  check.rank = 2;
  check.device = device;
  check_tensor(*t, what, check);
  require(t->dtype == FP8ATTN_DTYPE_F32 || t->dtype == FP8ATTN_DTYPE_BF16 || t->dtype == FP8ATTN_DTYPE_E4M3,
          FP8ATTN_STATUS_BAD_DTYPE, what + " has dtype " + dtype_name(t->dtype) + "; F32, BF16 or E4M3 expected");
  require_extent(*t, what, 0, rows, "heads·head_dim");
  require(t->shape[1] >= 1, FP8ATTN_STATUS_BAD_SHAPE, what + ".shape[1] (d_model) must be ≥ 1");
  if (d_model > 0) require_extent(*t, what, 1, d_model, "d_model");
  WeightMatrix w;
  w.data = t->data;
  w.dtype = t->dtype;
  w.rows = t->shape[0];
  w.cols = t->shape[1];
  w.row_stride = t->stride[0];
  w.col_stride = t->stride[1];
  w.descale = descale;
  return w;
}

void load_rows_f32(const WeightMatrix& w, int64_t row0, int64_t count, float* out, ThreadPool& pool) {
  pool.parallel_for(count, [&](int64_t i, int) {
    float* dst = out + i * w.cols;
    for (int64_t c = 0; c < w.cols; ++c) dst[c] = w.at(row0 + i, c);
  });
}

}  // namespace fp8attn
