// The decode path on libfp8attn_cuda (label `cuda`; skips without an sm_90 GPU): one paged
// decode call captured in a CUDA graph, replayed while seqused_k and the block table change in
// device memory between the replays. Each replay must give the bits of an eager call on the same
// device contents (the split count is decided on the device, so it follows the lengths), and
// agree with the CPU engine within the relative L2 of the forward's GPU check (1e-2: ex2.approx,
// logf and the tensor core's accumulator are modelled, not reproduced, on the CPU).
// NOTE: written without a GPU at hand; not run yet.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

fp8attn_tensor on_device(fp8attn_tensor t, void* data) {
  t.data = data;
  t.device = FP8ATTN_DEVICE_CUDA;
  return t;
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, std::max<size_t>(host.size() * sizeof(T), 16)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(d);
}

TEST(DecodeCudaGraph, decode_graph_replays_read_lengths_and_tables_from_device_memory) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) GTEST_SKIP() << "needs an sm_90 GPU: " << err.message;
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  PagedLayout layout;
  layout.page_size = 16;
  layout.seqlen_k = {5000, 3000, 900, 64};
  PagedKvData kv = make_paged_kv(layout, FP8ATTN_DTYPE_E4M3, 4, 128, rng);
  Queries q = make_queries(FP8ATTN_DTYPE_E4M3, 32, 128, {1, 1, 1, 1}, /*padded=*/true, rng);
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = FP8ATTN_DTYPE_E4M3;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = 128;
  d.num_heads_q = 32;
  d.num_heads_kv = 4;
  d.causal = 1;
  d.page_size = 16;
  d.decode = 1;
  d.num_splits = 0;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, &err), FP8ATTN_OK) << err.message;
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, q.batch(), 1, kv.max_seqlen_k, &bytes, &err), FP8ATTN_OK);
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, std::max<size_t>(bytes, 16)), cudaSuccess);
  uint8_t* k_dev = device_copy(kv.k_cache);
  uint8_t* v_dev = device_copy(kv.v_cache);
  uint8_t* q_dev = device_copy(q.q);
  int32_t* table_dev = device_copy(kv.table);
  int32_t* used_dev = device_copy(kv.seqused);
  Outputs host_out;
  fp8attn_attention_args a = query_args(q, host_out, 128);
  float* out_dev = device_copy(host_out.out);
  float* lse_dev = device_copy(host_out.lse);
  fp8attn_attention_args dev_args = a;
  dev_args.q = on_device(a.q, q_dev);
  dev_args.out = on_device(a.out, out_dev);
  dev_args.lse = on_device(a.lse, lse_dev);
  fp8attn_paged_kv pkv = kv.paged();
  fp8attn_paged_kv dev_kv = pkv;
  dev_kv.k_cache = on_device(pkv.k_cache, k_dev);
  dev_kv.v_cache = on_device(pkv.v_cache, v_dev);
  dev_kv.block_table = on_device(pkv.block_table, table_dev);
  dev_kv.seqused_k = on_device(pkv.seqused_k, used_dev);
  dev_args.next = &dev_kv;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  auto poison = [&] {
    std::vector<float> p(host_out.out.size(), kPoison);
    ASSERT_EQ(cudaMemcpy(out_dev, p.data(), p.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  };
  auto result = [&] {
    std::vector<float> r(host_out.out.size());
    EXPECT_EQ(cudaMemcpy(r.data(), out_dev, r.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return r;
  };
  // The states the replays see: the first as built, then two sequences swapped and shortened,
  // then all short (the heuristic's split count changes with the longest).
  const std::vector<int32_t> table0 = kv.table;
  auto set_state = [&](int state) {
    std::copy(table0.begin(), table0.end(), kv.table.begin());
    std::vector<int32_t> used = {5000, 3000, 900, 64};
    if (state == 1) {
      for (int64_t i = 0; i < kv.max_pages; ++i) std::swap(kv.entry(0, i), kv.entry(1, i));
      used = {2500, 4800, 300, 64};
    } else if (state == 2) {
      used = {200, 40, 17, 1};
    }
    std::copy(used.begin(), used.end(), kv.seqused.begin());
    ASSERT_EQ(cudaMemcpy(table_dev, kv.table.data(), kv.table.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(used_dev, kv.seqused.data(), kv.seqused.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  };
  std::vector<std::vector<float>> eager;
  for (int state = 0; state < 3; ++state) {
    set_state(state);
    poison();
    ASSERT_EQ(fp8attn_attention_forward(plan, &dev_args, ws, bytes, stream, &err), FP8ATTN_OK) << err.message;
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    eager.push_back(result());
  }
  set_state(0);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(fp8attn_attention_forward(plan, &dev_args, ws, bytes, stream, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int state = 0; state < 3; ++state) {
    SCOPED_TRACE("state " + std::to_string(state) + ", seed " + std::to_string(seed));
    set_state(state);
    poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<float> replay = result();
    std::string where;
    EXPECT_TRUE(same_bits(replay, eager[static_cast<size_t>(state)], &where)) << where;
    // The CPU engine on the same (host) contents.
    Outputs cpu;
    fp8attn_attention_args ca = query_args(q, cpu, 128);
    fp8attn_paged_kv ck = kv.paged();
    ca.next = &ck;
    run_forward(FP8ATTN_BACKEND_CPU, d, ca, q.batch(), 1, kv.max_seqlen_k, cpu);
    ASSERT_EQ(cpu.status, FP8ATTN_OK) << cpu.message;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < replay.size(); ++i) {
      num += (static_cast<double>(replay[i]) - cpu.out[i]) * (static_cast<double>(replay[i]) - cpu.out[i]);
      den += static_cast<double>(cpu.out[i]) * cpu.out[i];
    }
    EXPECT_LE(std::sqrt(num / std::max(den, 1e-30)), 1e-2);
  }
  std::string where;
  EXPECT_FALSE(same_bits(eager[0], eager[2], &where)) << "the states gave the same outputs";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  for (void* p : {static_cast<void*>(k_dev), static_cast<void*>(v_dev), static_cast<void*>(q_dev),
                  static_cast<void*>(table_dev), static_cast<void*>(used_dev), static_cast<void*>(out_dev),
                  static_cast<void*>(lse_dev), ws})
    cudaFree(p);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::paged_test
