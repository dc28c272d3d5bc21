// Runs the BF16 forward and fp8attn_attention_backward through the C API on host inputs, the
// way a training host would: context, plan, workspace queries, forward (out, lse), then the
// backward with poisoned gradient buffers. For tests and tools; not part of libfp8attn.
#pragma once

#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/common/attention_inputs.hpp"

namespace fp8attn::workloads {

struct BackwardOptions {
  int32_t backend = FP8ATTN_BACKEND_CPU;
  int32_t num_threads = 0;
  /// Packed layout: the shape's batch must be 1 and its seqlens the totals.
  const std::vector<int32_t>* cu_seqlens_q = nullptr;
  const std::vector<int32_t>* cu_seqlens_k = nullptr;
  int32_t dq_dtype = FP8ATTN_DTYPE_BF16;  ///< BF16 or F32
  /// The desc's output_dtype, BF16 or F32: out and dout are passed in it (dout widened from the
  /// BF16 bits the session is given).
  int32_t out_dtype = FP8ATTN_DTYPE_BF16;
  int32_t deterministic = 1;
};

/// The byte every gradient buffer is filled with before a backward call: 0x7F7F is BF16's largest
/// finite value and 0x7F7F7F7F an F32 value, both ≈ 3.39e38, so an element the call leaves
/// unwritten is far from any gradient.
inline constexpr unsigned char kGradientPoison = 0x7F;

/// A context, plan and caller buffers for BF16 inputs (desc.input_dtype must be BF16): call
/// forward() once, then backward() as often as wanted. Throws std::runtime_error naming the
/// failing call and its status.
class BackwardSession {
 public:
  /// `in` holds BF16 q, k, v (quantize(..., FP8ATTN_DTYPE_BF16, ...)); `dout` BF16 bits in the
  /// layout of out.
  BackwardSession(const fp8attn_attention_desc& desc, const AttentionShape& shape, const QuantizedInputs& in,
                  const std::vector<uint16_t>& dout, const BackwardOptions& options = {});
  ~BackwardSession();
  BackwardSession(const BackwardSession&) = delete;
  BackwardSession& operator=(const BackwardSession&) = delete;

  void forward();
  /// Takes out and lse from another session of the same shape instead of running forward(): the
  /// emulated backward's tests feed it the CPU engine's forward.
  void copy_forward_from(const BackwardSession& other);
  /// Poisons dq, dk, dv, then runs the backward; returns its status (err holds the message).
  int32_t try_backward();
  /// try_backward() that throws on any status but OK.
  void backward();

  /// Valid arguments over this session's buffers, for tests that break one field.
  fp8attn_attention_bwd_args args() const { return args_; }
  /// Runs the backward with the given arguments and workspace size (the session's workspace).
  int32_t backward_with(const fp8attn_attention_bwd_args& args, size_t workspace_bytes);
  size_t workspace_bytes() const { return workspace_.size(); }
  /// What fp8attn_plan_backward_workspace_size asked for (the session's workspace is the larger
  /// of that and the forward's).
  size_t backward_workspace_bytes() const { return backward_workspace_bytes_; }
  const fp8attn_error& error() const { return err_; }
  fp8attn_plan plan() const { return plan_; }

  /// Gradients widened to F32, in the layouts of q, k, v.
  std::vector<float> dq() const;
  std::vector<float> dk() const;
  std::vector<float> dv() const;
  /// Raw gradient bytes (to check bit equality or that a failed call left them untouched).
  const std::vector<unsigned char>& dq_bytes() const { return dq_; }
  const std::vector<unsigned char>& dk_bytes() const { return dk_; }
  const std::vector<unsigned char>& dv_bytes() const { return dv_; }
  /// The forward's BF16 output (empty when out_dtype is F32) and F32 LSE.
  const std::vector<uint16_t>& out() const { return out_; }
  /// The forward's output widened to F32, whatever its dtype.
  std::vector<float> out_f32() const;
  const std::vector<float>& lse() const { return lse_; }

 private:
  fp8attn_context ctx_ = nullptr;
  fp8attn_plan plan_ = nullptr;
  fp8attn_error err_{};
  std::vector<uint8_t> q_, k_, v_;
  std::vector<uint16_t> dout_, out_;
  std::vector<float> dout_f32_, out_f32_;  // used when out_dtype is F32
  std::vector<float> lse_;
  std::vector<unsigned char> dq_, dk_, dv_;
  std::vector<unsigned char> workspace_;
  size_t backward_workspace_bytes_ = 0;
  fp8attn_attention_args fwd_args_{};
  fp8attn_attention_bwd_args args_{};
  int32_t dq_dtype_ = FP8ATTN_DTYPE_BF16;
  int32_t out_dtype_ = FP8ATTN_DTYPE_BF16;
};

/// BF16 bits of N(0, 1) values, `count` of them.
std::vector<uint16_t> normal_bf16(size_t count, uint64_t seed);

}  // namespace fp8attn::workloads
