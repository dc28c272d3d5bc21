#include "lib/combine/combine_problem.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"

namespace fp8attn::combine {
namespace {

using sm90::combine::CombineParams;

/// The bytes [begin, end) a tensor's elements span; empty for a tensor with no element.
struct ByteSpan {
  uintptr_t begin = 0, end = 0;
};
ByteSpan byte_span(const fp8attn_tensor& t) {
  if (t.data == nullptr || describes_no_element(t)) return {};
  const auto begin = reinterpret_cast<uintptr_t>(t.data);
  const auto bytes = static_cast<uintptr_t>(tensor_reach(t, "tensor") + 1) * dtype_size(t.dtype, "tensor");
  return {begin, begin + bytes};
}

/// NOTE: a byte-range test: two tensors that interleave without sharing an element are refused
/// too. An output that shares memory with an input would be read after a worker wrote it.
void require_apart(const fp8attn_tensor& out, const char* out_name, const fp8attn_tensor& other, const char* other_name) {
  const ByteSpan a = byte_span(out), b = byte_span(other);
  const bool meet = a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
  FP8ATTN_REQUIRE(!meet, FP8ATTN_STATUS_BAD_STRIDE,
                  std::string(out_name) + " overlaps " + other_name + ": outputs must not share memory with another tensor");
}

void require_o_dtype(const fp8attn_tensor& t, const char* what) {
  FP8ATTN_REQUIRE(t.dtype == FP8ATTN_DTYPE_F32 || t.dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_BAD_DTYPE,
                  std::string(what) + " is " + dtype_name(t.dtype) + "; it must be F32 or BF16");
}

/// A call checks every tensor in full; the workspace query only ranks, extents and dtypes
/// (its data pointers may be NULL). Returns false for an absent optional tensor.
bool check_view(const fp8attn_tensor& t, const char* what, const TensorCheck& check, bool full) {
  if (full) return check_tensor(t, what, check);
  if (check.optional && t.data == nullptr) return false;
  FP8ATTN_REQUIRE(t.rank == check.rank, FP8ATTN_STATUS_BAD_SHAPE,
                  std::string(what) + ".rank is " + std::to_string(t.rank) + ", expected " + std::to_string(check.rank));
  for (int i = 0; i < t.rank; ++i)
    FP8ATTN_REQUIRE(t.shape[i] >= 0, FP8ATTN_STATUS_BAD_SHAPE, std::string(what) + " has a negative extent");
  FP8ATTN_REQUIRE(check.dtype == 0 || t.dtype == check.dtype, FP8ATTN_STATUS_BAD_DTYPE,
                  std::string(what) + " has dtype " + dtype_name(t.dtype) + ", expected " + dtype_name(check.dtype));
  return true;
}

}  // namespace

CombineParams make_combine_params(const fp8attn_combine_args& a, int32_t device, bool check_outputs) {
  check_view(a.partial_out, "args.partial_out", {4, 0, device, false}, check_outputs);
  require_o_dtype(a.partial_out, "args.partial_out");
  check_view(a.partial_lse, "args.partial_lse", {3, FP8ATTN_DTYPE_F32, device, false}, check_outputs);
  const int64_t parts = a.partial_out.shape[0];
  FP8ATTN_REQUIRE(parts >= 1 && parts <= FP8ATTN_MAX_COMBINE_PARTS, FP8ATTN_STATUS_BAD_SHAPE,
                  "args.partial_out has " + std::to_string(parts) + " parts; num_parts must be 1.." +
                      std::to_string(FP8ATTN_MAX_COMBINE_PARTS));
  FP8ATTN_REQUIRE(a.partial_lse.shape[0] == parts, FP8ATTN_STATUS_BAD_SHAPE,
                  "args.partial_lse has " + std::to_string(a.partial_lse.shape[0]) + " parts but args.partial_out has " +
                      std::to_string(parts));
  const int64_t tokens = a.partial_out.shape[1], heads = a.partial_out.shape[2], head_dim = a.partial_out.shape[3];
  require_extent(a.partial_lse, "args.partial_lse", 1, tokens, "partial_out's tokens");
  require_extent(a.partial_lse, "args.partial_lse", 2, heads, "partial_out's heads");
  require_at_most(tokens, FP8ATTN_MAX_SEQLEN, "the token count", FP8ATTN_STATUS_BAD_SHAPE);
  require_at_most(heads, FP8ATTN_MAX_HEADS, "the head count", FP8ATTN_STATUS_BAD_SHAPE);
  require_at_most(head_dim, FP8ATTN_MAX_HEAD_DIM, "head_dim", FP8ATTN_STATUS_BAD_SHAPE);

  check_view(a.out, "args.out", {3, 0, device, false}, check_outputs);
  require_o_dtype(a.out, "args.out");
  require_extent(a.out, "args.out", 0, tokens, "partial_out's tokens");
  require_extent(a.out, "args.out", 1, heads, "partial_out's heads");
  require_extent(a.out, "args.out", 2, head_dim, "partial_out's head_dim");
  const bool have_lse = check_view(a.lse, "args.lse", {2, FP8ATTN_DTYPE_F32, device, true}, check_outputs);
  if (have_lse) {
    require_extent(a.lse, "args.lse", 0, tokens, "partial_out's tokens");
    require_extent(a.lse, "args.lse", 1, heads, "partial_out's heads");
  }

  CombineParams p;
  p.num_parts = static_cast<int32_t>(parts);
  p.tokens = tokens;
  p.heads = heads;
  p.head_dim = head_dim;
  p.partial_out = a.partial_out.data;
  p.partial_out_bf16 = a.partial_out.dtype == FP8ATTN_DTYPE_BF16;
  std::copy_n(a.partial_out.stride, 4, p.po_stride);
  p.partial_lse = static_cast<const float*>(a.partial_lse.data);
  std::copy_n(a.partial_lse.stride, 3, p.pl_stride);
  p.out = a.out.data;
  p.out_bf16 = a.out.dtype == FP8ATTN_DTYPE_BF16;
  std::copy_n(a.out.stride, 3, p.out_stride);
  if (have_lse) {
    p.lse = static_cast<float*>(a.lse.data);
    std::copy_n(a.lse.stride, 2, p.lse_stride);
  }
  if (!check_outputs) return p;

  require_no_overlap(a.out, "args.out");
  require_apart(a.out, "args.out", a.partial_out, "args.partial_out");
  require_apart(a.out, "args.out", a.partial_lse, "args.partial_lse");
  if (have_lse) {
    require_no_overlap(a.lse, "args.lse");
    require_apart(a.lse, "args.lse", a.partial_out, "args.partial_out");
    require_apart(a.lse, "args.lse", a.partial_lse, "args.partial_lse");
    require_apart(a.lse, "args.lse", a.out, "args.out");
  }
  return p;
}

}  // namespace fp8attn::combine
