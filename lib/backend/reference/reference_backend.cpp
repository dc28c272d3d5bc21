#include "lib/backend/reference/reference_backend.hpp"

#include "lib/attention/oracle.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn {
namespace {

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(ThreadPool& pool) : pool_(pool) {}
  int32_t kind() const override { return FP8ATTN_BACKEND_REFERENCE; }
  int32_t tensor_device() const override { return FP8ATTN_DEVICE_HOST; }
  bool runs_paged_kv(const AttentionConfig&) const override { return true; }
  bool runs_mixed_kv_dtype(const AttentionConfig&) const override { return true; }
  void check_attention(const AttentionConfig& c) const override {
    FP8ATTN_REQUIRE(c.output_dtype != FP8ATTN_DTYPE_E4M3, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
                    "E4M3 output: the FP64 reference backend writes BF16 or F32 only; E4M3 output runs on the CPU, "
                    "emulator and CUDA backends");
  }

  size_t attention_workspace_size(const AttentionConfig& config, int64_t, int64_t, int64_t max_seqlen_k) const override {
    return oracle_workspace_size(config, max_seqlen_k, pool_.size());
  }

  void attention_forward(const AttentionConfig& c, const AttentionProblem& p, void* workspace, size_t,
                         CUstream_st*) override {
    oracle_attention(c, p, pool_, workspace, [&](int64_t b, int64_t row, int head, const double* o, double lse) {
      const int64_t r = p.span(b).q_offset + row;
      for (int e = 0; e < c.head_dim_v; ++e)
        num::store_from_float(p.out.data, p.out.dtype, element_offset(p.out, b, r, head, e), static_cast<float>(o[e]));
      if (p.lse.data)
        static_cast<float*>(p.lse.data)[b * p.lse.batch_stride + r * p.lse.seq_stride + head * p.lse.head_stride] =
            static_cast<float>(lse);
    });
    // NOTE: the oracle casts nothing, so it has no telemetry to report; a requested telemetry
    // struct is filled with zeros rather than left stale.
    if (p.telemetry) {
      p.telemetry->p_positive = 0;
      p.telemetry->p_underflow = 0;
      p.telemetry->max_abs_scaled_logit = 0.0f;
    }
  }

 private:
  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend(ThreadPool& pool) {
  return std::make_unique<ReferenceBackend>(pool);
}

}  // namespace fp8attn
