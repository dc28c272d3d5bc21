#include "lib/attention/attention_backward_problem.hpp"

#include <string>
#include <string_view>

#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"

namespace fp8attn {
namespace {

/// The [batch, seq, head, dim] view of a gradient tensor whose layout (padded or packed) is the
/// forward's: the same mapping as make_attention_problem applies to q, k, v and out.
SeqTensor seq_view(const fp8attn_tensor& t, bool varlen) {
  if (varlen) return {t.data, t.dtype, 0, t.stride[0], t.stride[1], t.stride[2]};
  return {t.data, t.dtype, t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
}

/// A gradient (or dout) has exactly the shape of its tensor.
/// NOTE: the message is built only on a mismatch: a passing call allocates nothing.
void require_same_shape(const fp8attn_tensor& grad, std::string_view grad_name, const fp8attn_tensor& of,
                        std::string_view of_name) {
  for (int i = 0; i < of.rank; ++i)
    if (grad.shape[i] != of.shape[i])
      require_extent(grad, grad_name, i, of.shape[i], std::string(of_name) + "'s extent " + std::to_string(i));
}

/// Checks one output gradient: rank and device, a dtype in {want, also}, the shape of `of`, and no
/// overlapping elements.
void check_gradient(const fp8attn_tensor& g, std::string_view name, const fp8attn_tensor& of, std::string_view of_name,
                    int32_t device, int32_t want, int32_t also) {
  check_tensor(g, name, {of.rank, 0, device, false});
  FP8ATTN_REQUIRE(g.dtype == want || g.dtype == also, FP8ATTN_STATUS_BAD_DTYPE,
                  std::string(name) + " has dtype " + dtype_name(g.dtype) + ", expected " + dtype_name(want) +
                      (also != want ? " or " + dtype_name(also) : std::string()));
  require_same_shape(g, name, of, of_name);
  require_no_overlap(g, name);
}

}  // namespace

AttentionBackwardProblem make_attention_backward_problem(const AttentionConfig& cfg,
                                                         const fp8attn_attention_bwd_args& a, int32_t device) {
  FP8ATTN_REQUIRE(cfg.input_dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_UNSUPPORTED_DTYPE,
                  "the attention backward takes BF16 inputs; this plan's input_dtype is " +
                      dtype_name(cfg.input_dtype) + " (create the plan with input_dtype = FP8ATTN_DTYPE_BF16)");
  // NOTE: a serving layout has no training use: the backward takes contiguous BF16 K and V.
  FP8ATTN_REQUIRE(!cfg.paged() && !cfg.mixed_kv_dtype(), FP8ATTN_STATUS_UNSUPPORTED,
                  "the attention backward takes contiguous K and V in Q's dtype; this plan has desc.page_size = " +
                      std::to_string(cfg.page_size) + " and desc.kv_dtype = " + dtype_name(cfg.kv_dtype));
  FP8ATTN_REQUIRE(a.deterministic == 0 || a.deterministic == 1, FP8ATTN_STATUS_BAD_OPTION,
                  "args.deterministic must be 0 or 1, got " + std::to_string(a.deterministic));
  // NOTE: an empty lse (no query row) may have NULL data, as any required tensor.
  FP8ATTN_REQUIRE(a.lse.data != nullptr || describes_no_element(a.lse), FP8ATTN_STATUS_NULL_POINTER,
                  "args.lse.data is NULL: the backward recomputes P from the forward's log-sum-exp");

  // q, k, v, out, lse and cu_seqlens are checked exactly as the forward checks them.
  fp8attn_attention_args f{};
  f.struct_size = sizeof f;
  f.q = a.q;
  f.k = a.k;
  f.v = a.v;
  f.out = a.out;
  f.lse = a.lse;
  f.cu_seqlens_q = a.cu_seqlens_q;
  f.cu_seqlens_k = a.cu_seqlens_k;
  AttentionBackwardProblem p;
  p.fwd = make_attention_problem(cfg, f, device);

  check_tensor(a.dout, "args.dout", {a.out.rank, cfg.output_dtype, device, false});
  require_same_shape(a.dout, "args.dout", a.out, "args.out");
  check_gradient(a.dq, "args.dq", a.q, "args.q", device, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32);
  check_gradient(a.dk, "args.dk", a.k, "args.k", device, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  check_gradient(a.dv, "args.dv", a.v, "args.v", device, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);

  p.dout = seq_view(a.dout, p.fwd.varlen);
  p.dq = seq_view(a.dq, p.fwd.varlen);
  p.dk = seq_view(a.dk, p.fwd.varlen);
  p.dv = seq_view(a.dv, p.fwd.varlen);
  p.deterministic = a.deterministic != 0;
  return p;
}

}  // namespace fp8attn
