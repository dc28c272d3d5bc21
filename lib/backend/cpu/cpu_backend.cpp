#include "lib/backend/cpu/cpu_backend.hpp"

#include "lib/attention/engine/backward_engine.hpp"
#include "lib/attention/engine/decode_engine.hpp"
#include "lib/attention/engine/tile_engine.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(ThreadPool& pool) : pool_(pool) {}
  int32_t kind() const override { return FP8ATTN_BACKEND_CPU; }
  int32_t tensor_device() const override { return FP8ATTN_DEVICE_HOST; }
  bool runs_paged_kv(const AttentionConfig&) const override { return true; }
  bool runs_mixed_kv_dtype(const AttentionConfig&) const override { return true; }
  bool measures_forward_amax() const override { return true; }

  size_t attention_workspace_size(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                  int64_t max_seqlen_k) const override {
    // NOTE: the decode path also keeps each split's partial O (F32) and LSE for the combine.
    if (config.decode)
      return engine::decode_engine_workspace_size(config, pool_.size(), batch, max_seqlen_q, max_seqlen_k);
    // NOTE: the engine keeps one query tile's buffers and one (sequence, KV head)'s decoded K and V
    // per worker, and a work-item table of batch + 1 entries.
    return engine::tile_engine_workspace_size(config, pool_.size(), batch, max_seqlen_k);
  }

  void attention_forward(const AttentionConfig& config, const AttentionProblem& problem, void* workspace, size_t,
                         CUstream_st*) override {
    if (config.decode) return engine::decode_engine_forward(config, problem, pool_, workspace);
    engine::tile_engine_forward(config, problem, pool_, workspace);
  }

  size_t attention_backward_workspace_size(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                                           int64_t) const override {
    // NOTE: one tile's buffers per worker and the work-item tables, as the forward, plus the F32
    // dQ accumulator of every query row (D = rowsum(dO∘O) is recomputed per tile, not stored).
    return engine::backward_engine_workspace_size(config, pool_.size(), batch, max_seqlen_q);
  }

  void attention_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem, void* workspace,
                          size_t, CUstream_st*) override {
    engine::backward_engine_run(config, problem, pool_, workspace);
  }

 private:
  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(ThreadPool& pool) { return std::make_unique<CpuBackend>(pool); }

}  // namespace fp8attn
