#include "lib/quantize/quantize_problem.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "kernels/sm90/quantize/quantize_math.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"
#include "lib/quantize/hadamard_rotation.hpp"

namespace fp8attn::quant {
namespace {

using sm90::quant::Granularity;
using sm90::quant::QuantizeParams;

void check_options(const fp8attn_quantize_options& o, int64_t heads, int64_t head_dim) {
  FP8ATTN_REQUIRE(o.granularity >= FP8ATTN_QUANT_PER_TENSOR && o.granularity <= FP8ATTN_QUANT_PER_BLOCK,
          FP8ATTN_STATUS_BAD_OPTION, "options->granularity is unknown: " + std::to_string(o.granularity));
  FP8ATTN_REQUIRE(o.granularity != FP8ATTN_QUANT_PER_BLOCK || o.block_rows >= 1, FP8ATTN_STATUS_BAD_OPTION,
          "options->block_rows must be ≥ 1 for per-block descales, got " + std::to_string(o.block_rows));
  FP8ATTN_REQUIRE(o.leading_rows >= 0, FP8ATTN_STATUS_BAD_OPTION,
          "options->leading_rows must be ≥ 0, got " + std::to_string(o.leading_rows));
  FP8ATTN_REQUIRE(o.rotate <= 1, FP8ATTN_STATUS_BAD_OPTION, "options->rotate must be 0 or 1, got " + std::to_string(o.rotate));
  FP8ATTN_REQUIRE(o.margin >= 0 && o.margin <= sm90::quant::kMaxMargin, FP8ATTN_STATUS_BAD_OPTION,
          "options->margin must be in 0..64, got " + std::to_string(o.margin));
  FP8ATTN_REQUIRE(o.head_group >= 0, FP8ATTN_STATUS_BAD_HEADS,
          "options->head_group must be ≥ 0 (0 = 1), got " + std::to_string(o.head_group));
  const int64_t group = o.head_group == 0 ? 1 : o.head_group;
  FP8ATTN_REQUIRE(heads % group == 0, FP8ATTN_STATUS_BAD_HEADS,
          "options->head_group " + std::to_string(group) + " does not divide the " + std::to_string(heads) + " heads");
  FP8ATTN_REQUIRE(!o.rotate || exact_log2(head_dim) >= 0, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
          "rotation needs a power-of-two head_dim, got " + std::to_string(head_dim));
  // NOTE: the GPU kernel rotates in registers up to 256 (sm90::quant::kMaxRotatedHeadDim); the
  // CPU takes the same limit so that the backends agree.
  static_assert(FP8ATTN_MAX_ROTATION_DIM == sm90::quant::kMaxRotatedHeadDim);
  FP8ATTN_REQUIRE(!o.rotate || head_dim <= FP8ATTN_MAX_ROTATION_DIM, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
          "rotation takes head_dim up to FP8ATTN_MAX_ROTATION_DIM = 256 on every backend, got " +
              std::to_string(head_dim));
}

/// Reads cu_seqlens (I32 [batch + 1], from 0, non-decreasing, ending at `total`); returns the
/// longest sequence.
void check_cu_seqlens_tensor(const fp8attn_tensor& t, int32_t device) {
  check_tensor(t, "cu_seqlens", {1, FP8ATTN_DTYPE_I32, device, false});
  FP8ATTN_REQUIRE(t.shape[0] >= 2, FP8ATTN_STATUS_BAD_SHAPE,
          "cu_seqlens.shape[0] must be batch + 1 ≥ 2, got " + std::to_string(t.shape[0]));
  FP8ATTN_REQUIRE(t.stride[0] == 1, FP8ATTN_STATUS_BAD_STRIDE, "cu_seqlens must be contiguous (stride 1)");
  require_at_most(t.shape[0] - 1, FP8ATTN_MAX_BATCH, "the batch (cu_seqlens entries − 1)", FP8ATTN_STATUS_BAD_SHAPE);
}

int64_t check_cu_seqlens(const fp8attn_tensor& t, int64_t total) {
  check_cu_seqlens_tensor(t, FP8ATTN_DEVICE_HOST);
  const int32_t* cu = static_cast<const int32_t*>(t.data);
  FP8ATTN_REQUIRE(cu[0] == 0, FP8ATTN_STATUS_BAD_SEQLENS, "cu_seqlens[0] must be 0, got " + std::to_string(cu[0]));
  int64_t longest = 0;
  for (int64_t b = 0; b + 1 < t.shape[0]; ++b) {
    FP8ATTN_REQUIRE(cu[b + 1] >= cu[b], FP8ATTN_STATUS_BAD_SEQLENS,
            "cu_seqlens decreases at " + std::to_string(b + 1) + ": " + std::to_string(cu[b]) + " then " +
                std::to_string(cu[b + 1]));
    longest = std::max<int64_t>(longest, cu[b + 1] - cu[b]);
  }
  FP8ATTN_REQUIRE(cu[t.shape[0] - 1] == total, FP8ATTN_STATUS_BAD_SEQLENS,
          "cu_seqlens ends at " + std::to_string(cu[t.shape[0] - 1]) + ", but the input has " + std::to_string(total) +
              " rows");
  return longest;
}

/// The longest sequence of a packed input: read from cu_seqlens where it is host memory (and
/// checked against a caller's max_seqlen), taken from the caller where it is device memory.
int64_t packed_max_seqlen(const fp8attn_tensor& cu, int64_t total, const QuantizeDevice& where) {
  if (where.device != FP8ATTN_DEVICE_HOST) {
    check_cu_seqlens_tensor(cu, where.device);
    FP8ATTN_REQUIRE(where.max_seqlen >= 1, FP8ATTN_STATUS_BAD_SHAPE,
            "max_seqlen must be ≥ 1 for a packed input on the device, got " + std::to_string(where.max_seqlen));
    require_at_most(where.max_seqlen, FP8ATTN_MAX_SEQLEN, "max_seqlen", FP8ATTN_STATUS_BAD_SHAPE);
    return where.max_seqlen;
  }
  const int64_t longest = check_cu_seqlens(cu, total);
  if (where.max_seqlen == 0) return longest;
  FP8ATTN_REQUIRE(where.max_seqlen >= longest && where.max_seqlen <= FP8ATTN_MAX_SEQLEN, FP8ATTN_STATUS_BAD_SEQLENS,
          "max_seqlen " + std::to_string(where.max_seqlen) + " is below the longest sequence in cu_seqlens (" +
              std::to_string(longest) + ") or above FP8ATTN_MAX_SEQLEN");
  return where.max_seqlen;
}

}  // namespace

QuantizeParams make_quantize_params(const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens,
                                    const fp8attn_quantize_options& o, const fp8attn_tensor* output,
                                    const fp8attn_tensor* descale, const QuantizeDevice& where) {
  FP8ATTN_REQUIRE(input != nullptr, FP8ATTN_STATUS_NULL_POINTER, "input is NULL");
  FP8ATTN_REQUIRE(output != nullptr, FP8ATTN_STATUS_NULL_POINTER, "output is NULL");
  FP8ATTN_REQUIRE(descale != nullptr, FP8ATTN_STATUS_NULL_POINTER, "descale is NULL");
  const bool packed = cu_seqlens != nullptr && cu_seqlens->data != nullptr;
  const int32_t rank = packed ? 3 : 4;
  const int32_t device = where.device;
  check_tensor(*input, "input", {rank, 0, device, false});
  FP8ATTN_REQUIRE(input->dtype == FP8ATTN_DTYPE_BF16 || input->dtype == FP8ATTN_DTYPE_F32, FP8ATTN_STATUS_BAD_DTYPE,
          "input has dtype " + dtype_name(input->dtype) + "; the quantizer takes BF16 or F32");
  check_tensor(*output, "output", {rank, FP8ATTN_DTYPE_E4M3, device, false});
  for (int i = 0; i < rank; ++i) require_extent(*output, "output", i, input->shape[i], "the input's extent");
  require_no_overlap(*output, "output");

  QuantizeParams p;
  p.heads = input->shape[rank - 2];
  p.head_dim = input->shape[rank - 1];
  FP8ATTN_REQUIRE(p.heads >= 1, FP8ATTN_STATUS_BAD_SHAPE, "input has no heads (shape[" + std::to_string(rank - 2) + "] = 0)");
  FP8ATTN_REQUIRE(p.head_dim >= 1, FP8ATTN_STATUS_BAD_SHAPE, "input has head_dim 0");
  require_at_most(p.heads, FP8ATTN_MAX_HEADS, "the input's head count", FP8ATTN_STATUS_BAD_HEADS);
  require_at_most(p.head_dim, FP8ATTN_MAX_HEAD_DIM, "the input's head_dim", FP8ATTN_STATUS_BAD_SHAPE);
  check_options(o, p.heads, p.head_dim);

  int64_t max_seqlen = 0;
  if (packed) {
    max_seqlen = packed_max_seqlen(*cu_seqlens, input->shape[0], where);
    p.batch = cu_seqlens->shape[0] - 1;
    p.cu_seqlens = static_cast<const int32_t*>(cu_seqlens->data);
    p.in_stride[0] = 0, p.out_stride[0] = 0;
    for (int i = 0; i < 3; ++i) p.in_stride[i + 1] = input->stride[i], p.out_stride[i + 1] = output->stride[i];
  } else {
    p.batch = input->shape[0];
    p.seqlen = max_seqlen = input->shape[1];
    require_at_most(p.batch, FP8ATTN_MAX_BATCH, "the batch", FP8ATTN_STATUS_BAD_SHAPE);
    require_at_most(max_seqlen, FP8ATTN_MAX_SEQLEN, "seqlen", FP8ATTN_STATUS_BAD_SHAPE);
    for (int i = 0; i < 4; ++i) p.in_stride[i] = input->stride[i], p.out_stride[i] = output->stride[i];
  }
  p.input = input->data;
  p.input_is_bf16 = input->dtype == FP8ATTN_DTYPE_BF16;
  p.output = static_cast<uint8_t*>(output->data);
  p.granularity = static_cast<Granularity>(o.granularity);
  p.head_group = o.head_group == 0 ? 1 : o.head_group;
  p.rotate = o.rotate != 0;
  p.log2_head_dim = p.rotate ? exact_log2(p.head_dim) : 0;
  p.seed = o.seed;
  p.margin = o.margin;

  // The descale tensor's shape follows the granularity.
  const int64_t groups = p.heads / p.head_group;
  if (p.granularity == Granularity::PerBlock) {
    p.block_rows = o.block_rows;
    p.leading_rows = o.leading_rows;
    const int64_t after_leading = std::max<int64_t>(0, max_seqlen - p.leading_rows);
    p.num_blocks = p.leading_rows == 0 ? ceil_div(max_seqlen, p.block_rows) : 1 + ceil_div(after_leading, p.block_rows);
    p.unit_rows = p.block_rows;
    check_tensor(*descale, "descale", {3, FP8ATTN_DTYPE_F32, device, false});
    require_extent(*descale, "descale", 0, p.batch, "batch");
    require_extent(*descale, "descale", 1, groups, "heads / head_group");
    require_extent(*descale, "descale", 2, p.num_blocks,
                   p.leading_rows == 0 ? "ceil(max_seqlen / block_rows)"
                                       : "1 + ceil((max_seqlen − leading_rows) / block_rows)");
    for (int i = 0; i < 3; ++i) p.descale_stride[i] = descale->stride[i];
  } else if (p.granularity == Granularity::PerHead) {
    p.unit_rows = kDefaultUnitRows;
    check_tensor(*descale, "descale", {2, FP8ATTN_DTYPE_F32, device, false});
    require_extent(*descale, "descale", 0, p.batch, "batch");
    require_extent(*descale, "descale", 1, groups, "heads / head_group");
    for (int i = 0; i < 2; ++i) p.descale_stride[i] = descale->stride[i];
  } else {
    p.unit_rows = kDefaultUnitRows;
    check_tensor(*descale, "descale", {1, FP8ATTN_DTYPE_F32, device, false});
    require_extent(*descale, "descale", 0, 1, "1 (per-tensor)");
  }
  require_no_overlap(*descale, "descale");
  p.descale = static_cast<float*>(descale->data);
  // NOTE: per-block units are the descale blocks (scale_group relies on it), leading block included.
  p.units_per_head = p.granularity == Granularity::PerBlock ? p.num_blocks : ceil_div(max_seqlen, p.unit_rows);
  // batch ≤ 2^24, heads ≤ 2^12 and units ≤ 2^30: the unit count fits, but is checked anyway.
  checked_mul(checked_mul(p.batch, p.heads, "quantizer units"), p.units_per_head, "quantizer units");
  return p;
}

}  // namespace fp8attn::quant

namespace fp8attn::quant {

int64_t quantize_unit_count(const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens, int64_t max_seqlen,
                            const fp8attn_quantize_options& o) {
  FP8ATTN_REQUIRE(input != nullptr, FP8ATTN_STATUS_NULL_POINTER, "input is NULL");
  const bool packed = cu_seqlens != nullptr && cu_seqlens->data != nullptr;
  const int32_t rank = packed ? 3 : 4;
  FP8ATTN_REQUIRE(input->rank == rank, FP8ATTN_STATUS_BAD_SHAPE,
          "input.rank must be " + std::to_string(rank) + (packed ? " (packed)" : " (padded)") + ", got " +
              std::to_string(input->rank));
  for (int i = 0; i < rank; ++i)
    FP8ATTN_REQUIRE(input->shape[i] >= 0, FP8ATTN_STATUS_BAD_SHAPE, "input.shape[" + std::to_string(i) + "] is negative");
  const int64_t heads = input->shape[rank - 2], head_dim = input->shape[rank - 1];
  FP8ATTN_REQUIRE(heads >= 1 && head_dim >= 1, FP8ATTN_STATUS_BAD_SHAPE, "input has no heads or head_dim 0");
  require_at_most(heads, FP8ATTN_MAX_HEADS, "the input's head count", FP8ATTN_STATUS_BAD_HEADS);
  require_at_most(head_dim, FP8ATTN_MAX_HEAD_DIM, "the input's head_dim", FP8ATTN_STATUS_BAD_SHAPE);
  check_options(o, heads, head_dim);
  int64_t batch = 0;
  if (packed) {
    FP8ATTN_REQUIRE(cu_seqlens->rank == 1 && cu_seqlens->shape[0] >= 2, FP8ATTN_STATUS_BAD_SHAPE,
            "cu_seqlens must be rank 1 with batch + 1 ≥ 2 entries");
    batch = cu_seqlens->shape[0] - 1;
    FP8ATTN_REQUIRE(max_seqlen >= 1, FP8ATTN_STATUS_BAD_SHAPE,
            "max_seqlen must be ≥ 1 for a packed input, got " + std::to_string(max_seqlen));
  } else {
    batch = input->shape[0];
    max_seqlen = input->shape[1];
  }
  require_at_most(batch, FP8ATTN_MAX_BATCH, "the batch", FP8ATTN_STATUS_BAD_SHAPE);
  require_at_most(max_seqlen, FP8ATTN_MAX_SEQLEN, "seqlen", FP8ATTN_STATUS_BAD_SHAPE);
  int64_t units = 0;
  if (o.granularity == FP8ATTN_QUANT_PER_BLOCK)
    units = o.leading_rows == 0 ? ceil_div(max_seqlen, o.block_rows)
                                : 1 + ceil_div(std::max<int64_t>(0, max_seqlen - o.leading_rows), o.block_rows);
  else
    units = ceil_div(max_seqlen, kDefaultUnitRows);
  return checked_mul(checked_mul(batch, heads, "quantizer units"), units, "quantizer units");
}

}  // namespace fp8attn::quant
