#include "tools/common/backward_runner.hpp"

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

#include "kernels/numerics/bfloat16.hpp"

namespace fp8attn::workloads {
namespace {

fp8attn_tensor seq_tensor(const void* data, int32_t dtype, bool packed, int64_t batch, int64_t seqlen, int heads,
                          int dim) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = const_cast<void*>(data);
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  if (packed) {
    t.rank = 3;
    t.shape[0] = seqlen, t.shape[1] = heads, t.shape[2] = dim;
    t.stride[0] = int64_t{heads} * dim, t.stride[1] = dim, t.stride[2] = 1;
  } else {
    t.rank = 4;
    t.shape[0] = batch, t.shape[1] = seqlen, t.shape[2] = heads, t.shape[3] = dim;
    t.stride[0] = seqlen * heads * dim, t.stride[1] = int64_t{heads} * dim, t.stride[2] = dim, t.stride[3] = 1;
  }
  return t;
}

fp8attn_tensor cu_tensor(const std::vector<int32_t>* cu) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  if (!cu) return t;
  t.data = const_cast<int32_t*>(cu->data());
  t.dtype = FP8ATTN_DTYPE_I32;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = 1;
  t.shape[0] = static_cast<int64_t>(cu->size());
  t.stride[0] = 1;
  return t;
}

void check(int32_t status, const fp8attn_error& err, const char* what) {
  if (status != FP8ATTN_OK)
    throw std::runtime_error(std::string(what) + " failed: " + fp8attn_status_name(status) + ": " + err.message);
}

std::vector<float> widen(const std::vector<unsigned char>& bytes, int32_t dtype) {
  if (dtype == FP8ATTN_DTYPE_F32) {
    std::vector<float> x(bytes.size() / 4);
    std::memcpy(x.data(), bytes.data(), bytes.size());
    return x;
  }
  std::vector<float> x(bytes.size() / 2);
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t b;
    std::memcpy(&b, bytes.data() + 2 * i, 2);
    x[i] = num::bf16_to_float(b);
  }
  return x;
}

}  // namespace

BackwardSession::BackwardSession(const fp8attn_attention_desc& desc, const AttentionShape& s,
                                 const QuantizedInputs& in, const std::vector<uint16_t>& dout,
                                 const BackwardOptions& o)
    : q_(in.q), k_(in.k), v_(in.v), dout_(dout), dq_dtype_(o.dq_dtype), out_dtype_(o.out_dtype) {
  err_.struct_size = sizeof err_;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = o.backend;
  co.num_threads = o.num_threads;
  check(fp8attn_context_create(&co, &ctx_, &err_), err_, "fp8attn_context_create");
  check(fp8attn_plan_create(ctx_, &desc, &plan_, &err_), err_, "fp8attn_plan_create");

  const bool packed = o.cu_seqlens_q != nullptr;
  const int64_t batch = packed ? static_cast<int64_t>(o.cu_seqlens_q->size()) - 1 : s.batch;
  int64_t max_q = s.seqlen_q, max_k = s.seqlen_k;
  if (packed) {
    max_q = max_k = 1;
    for (int64_t b = 0; b < batch; ++b) {
      max_q = std::max<int64_t>(max_q, (*o.cu_seqlens_q)[b + 1] - (*o.cu_seqlens_q)[b]);
      max_k = std::max<int64_t>(max_k, (*o.cu_seqlens_k)[b + 1] - (*o.cu_seqlens_k)[b]);
    }
  }
  const int64_t rows_q = s.batch * s.seqlen_q;
  const bool out_f32 = o.out_dtype == FP8ATTN_DTYPE_F32;
  const size_t out_size = static_cast<size_t>(rows_q * s.heads_q * s.head_dim);
  if (out_f32) {
    out_f32_.assign(out_size, 0.0f);
    dout_f32_.resize(dout_.size());
    for (size_t i = 0; i < dout_.size(); ++i) dout_f32_[i] = num::bf16_to_float(dout_[i]);
  } else {
    out_.assign(out_size, 0);
  }
  lse_.assign(static_cast<size_t>(rows_q * s.heads_q), 0.0f);
  const size_t dq_size = static_cast<size_t>(rows_q * s.heads_q * s.head_dim);
  dq_.assign(dq_size * (o.dq_dtype == FP8ATTN_DTYPE_F32 ? 4 : 2), kGradientPoison);
  dk_.assign(static_cast<size_t>(s.batch * s.seqlen_k * s.heads_kv * s.head_dim) * 2, kGradientPoison);
  dv_.assign(dk_.size(), kGradientPoison);

  size_t fwd_bytes = 0, bwd_bytes = 0;
  check(fp8attn_plan_workspace_size(plan_, batch, max_q, max_k, &fwd_bytes, &err_), err_,
        "fp8attn_plan_workspace_size");
  // NOTE: the reference backend has no backward (its refusal is tested through try_backward).
  if (o.backend != FP8ATTN_BACKEND_REFERENCE)
    check(fp8attn_plan_backward_workspace_size(plan_, batch, max_q, max_k, &bwd_bytes, &err_), err_,
          "fp8attn_plan_backward_workspace_size");
  workspace_.assign(std::max(fwd_bytes, bwd_bytes), 0);
  backward_workspace_bytes_ = bwd_bytes;

  const int32_t bf16 = FP8ATTN_DTYPE_BF16;
  const int64_t sb = s.batch;
  fwd_args_.struct_size = sizeof fwd_args_;
  fwd_args_.q = seq_tensor(q_.data(), bf16, packed, sb, s.seqlen_q, s.heads_q, s.head_dim);
  fwd_args_.k = seq_tensor(k_.data(), bf16, packed, sb, s.seqlen_k, s.heads_kv, s.head_dim);
  fwd_args_.v = seq_tensor(v_.data(), bf16, packed, sb, s.seqlen_k, s.heads_kv, s.head_dim);
  const int32_t out_dtype = out_f32 ? FP8ATTN_DTYPE_F32 : bf16;
  fwd_args_.out = seq_tensor(out_f32 ? static_cast<void*>(out_f32_.data()) : out_.data(), out_dtype, packed, sb,
                             s.seqlen_q, s.heads_q, s.head_dim);
  fp8attn_tensor lse{};
  lse.struct_size = sizeof lse;
  lse.data = lse_.data();
  lse.dtype = FP8ATTN_DTYPE_F32;
  lse.device = FP8ATTN_DEVICE_HOST;
  if (packed) {
    lse.rank = 2, lse.shape[0] = s.heads_q, lse.shape[1] = s.seqlen_q, lse.stride[0] = s.seqlen_q, lse.stride[1] = 1;
  } else {
    lse.rank = 3, lse.shape[0] = sb, lse.shape[1] = s.heads_q, lse.shape[2] = s.seqlen_q;
    lse.stride[0] = s.heads_q * s.seqlen_q, lse.stride[1] = s.seqlen_q, lse.stride[2] = 1;
  }
  fwd_args_.lse = lse;
  fwd_args_.cu_seqlens_q = cu_tensor(o.cu_seqlens_q);
  fwd_args_.cu_seqlens_k = cu_tensor(o.cu_seqlens_k);

  args_.struct_size = sizeof args_;
  args_.q = fwd_args_.q;
  args_.k = fwd_args_.k;
  args_.v = fwd_args_.v;
  args_.out = fwd_args_.out;
  args_.dout = seq_tensor(out_f32 ? static_cast<const void*>(dout_f32_.data()) : dout_.data(), out_dtype, packed, sb,
                          s.seqlen_q, s.heads_q, s.head_dim);
  args_.lse = lse;
  args_.dq = seq_tensor(dq_.data(), o.dq_dtype, packed, sb, s.seqlen_q, s.heads_q, s.head_dim);
  args_.dk = seq_tensor(dk_.data(), bf16, packed, sb, s.seqlen_k, s.heads_kv, s.head_dim);
  args_.dv = seq_tensor(dv_.data(), bf16, packed, sb, s.seqlen_k, s.heads_kv, s.head_dim);
  args_.cu_seqlens_q = fwd_args_.cu_seqlens_q;
  args_.cu_seqlens_k = fwd_args_.cu_seqlens_k;
  args_.deterministic = o.deterministic;
}

BackwardSession::~BackwardSession() {
  fp8attn_plan_destroy(plan_);
  fp8attn_context_destroy(ctx_);
}

void BackwardSession::forward() {
  check(fp8attn_attention_forward(plan_, &fwd_args_, workspace_.data(), workspace_.size(), nullptr, &err_), err_,
        "fp8attn_attention_forward");
}

void BackwardSession::copy_forward_from(const BackwardSession& other) {
  if (other.out_.size() != out_.size() || other.lse_.size() != lse_.size())
    throw std::runtime_error("copy_forward_from: the sessions' shapes differ");
  out_ = other.out_;
  lse_ = other.lse_;
}

int32_t BackwardSession::backward_with(const fp8attn_attention_bwd_args& args, size_t workspace_bytes) {
  std::fill(dq_.begin(), dq_.end(), kGradientPoison);
  std::fill(dk_.begin(), dk_.end(), kGradientPoison);
  std::fill(dv_.begin(), dv_.end(), kGradientPoison);
  return fp8attn_attention_backward(plan_, &args, workspace_.data(), workspace_bytes, nullptr, &err_);
}

int32_t BackwardSession::try_backward() { return backward_with(args_, workspace_.size()); }

void BackwardSession::backward() { check(try_backward(), err_, "fp8attn_attention_backward"); }

std::vector<float> BackwardSession::out_f32() const {
  if (out_dtype_ == FP8ATTN_DTYPE_F32) return out_f32_;
  std::vector<float> x(out_.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = num::bf16_to_float(out_[i]);
  return x;
}

std::vector<float> BackwardSession::dq() const { return widen(dq_, dq_dtype_); }
std::vector<float> BackwardSession::dk() const { return widen(dk_, FP8ATTN_DTYPE_BF16); }
std::vector<float> BackwardSession::dv() const { return widen(dv_, FP8ATTN_DTYPE_BF16); }

std::vector<uint16_t> normal_bf16(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<uint16_t> x(count);
  for (auto& b : x) b = num::float_to_bf16(n(rng));
  return x;
}

}  // namespace fp8attn::workloads
