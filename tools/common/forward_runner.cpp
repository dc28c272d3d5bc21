#include "tools/common/forward_runner.hpp"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/numerics/bfloat16.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::workloads {
namespace {

fp8attn_tensor seq_tensor(void* data, int32_t dtype, bool packed, int64_t batch, int64_t seqlen, int heads, int dim) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  if (packed) {
    t.rank = 3;
    t.shape[0] = seqlen, t.shape[1] = heads, t.shape[2] = dim;
    t.stride[0] = static_cast<int64_t>(heads) * dim, t.stride[1] = dim, t.stride[2] = 1;
  } else {
    t.rank = 4;
    t.shape[0] = batch, t.shape[1] = seqlen, t.shape[2] = heads, t.shape[3] = dim;
    t.stride[0] = seqlen * heads * dim, t.stride[1] = static_cast<int64_t>(heads) * dim, t.stride[2] = dim,
    t.stride[3] = 1;
  }
  return t;
}

fp8attn_tensor descale_tensor(const std::vector<float>& d, int64_t batch, int heads_kv, bool broadcast_batch) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = const_cast<float*>(d.data());
  t.dtype = FP8ATTN_DTYPE_F32;
  t.rank = 2;
  t.shape[0] = batch, t.shape[1] = heads_kv;
  t.stride[0] = broadcast_batch ? 0 : heads_kv, t.stride[1] = 1;
  return t;
}

fp8attn_tensor block_descale_tensor(const std::vector<float>& d, int64_t batch, int heads, int64_t blocks) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  if (d.empty()) return t;  // absent (data NULL): per-block descales of the other tensors only
  t.data = const_cast<float*>(d.data());
  t.dtype = FP8ATTN_DTYPE_F32;
  t.rank = 3;
  t.shape[0] = batch, t.shape[1] = heads, t.shape[2] = blocks;
  t.stride[0] = heads * blocks, t.stride[1] = blocks, t.stride[2] = 1;
  return t;
}

void check(int32_t status, const fp8attn_error& err, const char* what) {
  if (status != FP8ATTN_OK)
    throw std::runtime_error(std::string(what) + " failed: " + fp8attn_status_name(status) + ": " + err.message);
}

/// The caller-side buffers and args of one forward call, built as a host program would.
struct ForwardCall {
  fp8attn_attention_args args{};
  std::vector<unsigned char> out_bytes;
  std::vector<uint8_t> v_transposed;  ///< V with keys contiguous, when the options ask for it
  ForwardResult result;
  int64_t batch = 0, max_q = 0, max_k = 0;
  bool f32_out = false;

  ForwardCall(const fp8attn_attention_desc& desc, const AttentionShape& s,
              const QuantizedInputs& in, const ForwardOptions& o) {
    const bool packed = o.cu_seqlens_q != nullptr;
    batch = packed ? static_cast<int64_t>(o.cu_seqlens_q->size()) - 1 : s.batch;
    max_q = s.seqlen_q, max_k = s.seqlen_k;
    if (packed) {
      max_q = max_k = 1;
      for (int64_t b = 0; b < batch; ++b) {
        max_q = std::max<int64_t>(max_q, (*o.cu_seqlens_q)[b + 1] - (*o.cu_seqlens_q)[b]);
        max_k = std::max<int64_t>(max_k, (*o.cu_seqlens_k)[b + 1] - (*o.cu_seqlens_k)[b]);
      }
    }
    f32_out = desc.output_dtype == FP8ATTN_DTYPE_F32;
    const size_t out_elems = static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim);
    out_bytes.assign(out_elems * (f32_out ? 4 : 2), 0xFF);  // poison: NaN in F32 and BF16
    result.lse.assign(static_cast<size_t>(s.batch * s.heads_q * s.seqlen_q), -12345.0f);

    fp8attn_attention_args& a = args;
    a.struct_size = sizeof a;
    const int32_t dt = in.dtype;
    a.q = seq_tensor(const_cast<uint8_t*>(in.q.data()), dt, packed, s.batch, s.seqlen_q, s.heads_q, s.head_dim);
    a.k = seq_tensor(const_cast<uint8_t*>(in.k.data()), dt, packed, s.batch, s.seqlen_k, s.heads_kv, s.head_dim);
    a.v = seq_tensor(const_cast<uint8_t*>(in.v.data()), dt, packed, s.batch, s.seqlen_k, s.heads_kv, s.head_dim);
    a.out = seq_tensor(out_bytes.data(), desc.output_dtype, packed, s.batch, s.seqlen_q, s.heads_q, s.head_dim);
    if (o.v_keys_contiguous && !packed) transpose_v(in, s);
    a.lse.struct_size = sizeof(fp8attn_tensor);
    a.lse.data = result.lse.data();
    a.lse.dtype = FP8ATTN_DTYPE_F32;
    if (packed) {
      a.lse.rank = 2;
      a.lse.shape[0] = s.heads_q, a.lse.shape[1] = s.seqlen_q;
      a.lse.stride[0] = s.seqlen_q, a.lse.stride[1] = 1;
      for (auto* t : {&a.cu_seqlens_q, &a.cu_seqlens_k}) {
        const std::vector<int32_t>* cu = t == &a.cu_seqlens_q ? o.cu_seqlens_q : o.cu_seqlens_k;
        t->struct_size = sizeof(fp8attn_tensor);
        t->data = const_cast<int32_t*>(cu->data());
        t->dtype = FP8ATTN_DTYPE_I32;
        t->rank = 1;
        t->shape[0] = static_cast<int64_t>(cu->size());
        t->stride[0] = 1;
      }
    } else {
      a.lse.rank = 3;
      a.lse.shape[0] = s.batch, a.lse.shape[1] = s.heads_q, a.lse.shape[2] = s.seqlen_q;
      a.lse.stride[0] = s.heads_q * s.seqlen_q, a.lse.stride[1] = s.seqlen_q, a.lse.stride[2] = 1;
    }
    a.q_descale = descale_tensor(in.q_descale, batch, s.heads_kv, packed);
    a.k_descale = descale_tensor(in.k_descale, batch, s.heads_kv, packed);
    a.v_descale = descale_tensor(in.v_descale, batch, s.heads_kv, packed);
    if (!in.q_block_descale.empty()) {
      a.q_block_descale = block_descale_tensor(in.q_block_descale, batch, s.heads_q, in.q_blocks);
      a.k_block_descale = block_descale_tensor(in.k_block_descale, batch, s.heads_kv, in.kv_blocks);
      a.v_block_descale = block_descale_tensor(in.v_block_descale, batch, s.heads_kv, in.kv_blocks);
    }
    result.telemetry.struct_size = sizeof result.telemetry;
    a.telemetry = &result.telemetry;
  }

  /// Lays V out as [batch, heads, dim, keys] (rows padded to 16 keys) and points args.v at it.
  void transpose_v(const QuantizedInputs& in, const AttentionShape& s) {
    const size_t e = in.dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2;
    const int64_t pitch = (s.seqlen_k + 15) / 16 * 16, d = s.head_dim, h = s.heads_kv;
    v_transposed.assign(static_cast<size_t>(s.batch * h * d * pitch) * e, 0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t k = 0; k < s.seqlen_k; ++k)
        for (int64_t hh = 0; hh < h; ++hh)
          for (int64_t x = 0; x < d; ++x)
            std::memcpy(&v_transposed[static_cast<size_t>(((b * h + hh) * d + x) * pitch + k) * e],
                        &in.v[static_cast<size_t>(((b * s.seqlen_k + k) * h + hh) * d + x) * e], e);
    args.v.data = v_transposed.data();
    args.v.stride[0] = h * d * pitch, args.v.stride[1] = 1, args.v.stride[2] = d * pitch, args.v.stride[3] = pitch;
  }

  /// Widens the output buffer into result.out.
  ForwardResult finish() {
    const size_t n = out_bytes.size() / (f32_out ? 4 : 2);
    result.out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (f32_out) {
        std::memcpy(&result.out[i], &out_bytes[4 * i], 4);
      } else {
        uint16_t h;
        std::memcpy(&h, &out_bytes[2 * i], 2);
        result.out[i] = num::bf16_to_float(h);
      }
    }
    return std::move(result);
  }
};

}  // namespace

fp8attn_attention_desc make_desc(const AttentionShape& s, int32_t input_dtype, int32_t output_dtype) {
  fp8attn_attention_desc d{};
  fp8attn_attention_desc_init(&d);
  d.input_dtype = input_dtype;
  d.output_dtype = output_dtype;
  d.head_dim = s.head_dim;
  d.num_heads_q = s.heads_q;
  d.num_heads_kv = s.heads_kv;
  return d;
}

struct ForwardSession::State {
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  std::unique_ptr<ForwardCall> call;
  std::vector<unsigned char> workspace;
  ~State() {
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
  }
};

ForwardSession::ForwardSession(const fp8attn_attention_desc& desc, const AttentionShape& s, const QuantizedInputs& in,
                               const ForwardOptions& o)
    : state_(std::make_unique<State>()) {
  fp8attn_error err{sizeof err, 0, {0}};
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = o.backend;
  co.num_threads = o.num_threads;
  check(fp8attn_context_create(&co, &state_->ctx, &err), err, "fp8attn_context_create");
  check(fp8attn_plan_create(state_->ctx, &desc, &state_->plan, &err), err, "fp8attn_plan_create");
  state_->call = std::make_unique<ForwardCall>(desc, s, in, o);
  size_t ws_bytes = 0;
  check(fp8attn_plan_workspace_size(state_->plan, state_->call->batch, state_->call->max_q, state_->call->max_k,
                                    &ws_bytes, &err),
        err, "fp8attn_plan_workspace_size");
  state_->workspace.resize(ws_bytes);
}

ForwardSession::~ForwardSession() = default;

void ForwardSession::run() {
  fp8attn_error err{sizeof err, 0, {0}};
  ForwardCall& call = *state_->call;
  call.result.status = fp8attn_attention_forward(state_->plan, &call.args, state_->workspace.data(),
                                                 state_->workspace.size(), nullptr, &err);
  check(call.result.status, err, "fp8attn_attention_forward");
}

ForwardResult ForwardSession::result() { return state_->call->finish(); }

ForwardResult run_forward(const fp8attn_attention_desc& desc, const AttentionShape& s, const QuantizedInputs& in,
                          const ForwardOptions& o) {
  ForwardSession session(desc, s, in, o);
  session.run();
  return session.result();
}

ForwardResult run_forward_on_plan(fp8attn_plan plan, const fp8attn_attention_desc& desc, const AttentionShape& s,
                                  const QuantizedInputs& in) {
  fp8attn_error err{sizeof err, 0, {0}};
  ForwardCall call(desc, s, in, {});
  size_t ws_bytes = 0;
  check(fp8attn_plan_workspace_size(plan, call.batch, call.max_q, call.max_k, &ws_bytes, &err), err,
        "fp8attn_plan_workspace_size");
  std::vector<unsigned char> workspace(ws_bytes);
  call.result.status = fp8attn_attention_forward(plan, &call.args, workspace.data(), workspace.size(), nullptr, &err);
  check(call.result.status, err, "fp8attn_attention_forward");
  return call.finish();
}

ForwardResult run_engine_with_hooks(const fp8attn_attention_desc& desc, const AttentionShape& s,
                                    const QuantizedInputs& in, const engine::EngineHooks& hooks,
                                    int num_threads) {
  const AttentionConfig config = make_attention_config(desc);
  ForwardCall call(desc, s, in, {});
  const AttentionProblem problem = make_attention_problem(config, call.args, FP8ATTN_DEVICE_HOST);
  ThreadPool pool(num_threads);
  std::vector<unsigned char> workspace(
      engine::tile_engine_workspace_size(config, pool.size(), problem.batch, problem.max_seqlen_k));
  engine::tile_engine_forward(config, problem, pool, workspace.data(), hooks);
  return call.finish();
}

}  // namespace fp8attn::workloads
