// Support of the paged forward's emulator tests: one case (sequences, page size, mask) as packed
// contiguous K and V and as a paged cache holding the same rows in pages of a random order
// (NaN codes in the unused slots, garbage past each table row's last page), and the
// Hopper plan run on both through the SIMT emulator.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/emu/runtime.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::paged_test {

struct PagedCase {
  const char* name = "";
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int head_dim = 128, heads_q = 2, heads_kv = 1;
  int64_t page_size = 16;
  std::vector<int64_t> q_lens, k_lens;  ///< per sequence; k_lens are the seqused_k values
  bool causal = false;
  int64_t window_left = -1, window_right = -1, sink_tokens = 0;
  int64_t shared_pages = 0;  ///< sequence 1's first pages are sequence 0's (same keys)
  int64_t bound_extra = 0;   ///< max_seqlen_k = the longest sequence + this
};

/// The inputs of a case in both layouts.
struct PagedInputs {
  int64_t elem = 1, total_q = 0, total_k = 0, max_q = 0, max_k = 0;
  std::vector<uint8_t> q, k, v;  ///< packed [total, heads, dim]
  std::vector<int32_t> cu_q, cu_k;
  std::vector<uint8_t> k_cache, v_cache;  ///< [num_pages, page_size, heads_kv, head_dim]
  int64_t num_pages = 0, max_pages = 0, table_stride = 0;
  std::vector<int32_t> table, seqused;  ///< table: [batch, max_pages] with row stride table_stride
};

/// Random finite values of the case's dtype, as bytes.
inline void fill_random(std::vector<uint8_t>& bytes, int32_t dtype, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.5f);
  if (dtype == FP8ATTN_DTYPE_BF16) {
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      const uint16_t b = num::float_to_bf16(normal(rng));
      std::memcpy(&bytes[i], &b, 2);
    }
  } else {
    for (uint8_t& b : bytes) b = num::float_to_e4m3(normal(rng));
  }
}

/// Pages in a random order; sequence 1's first `shared_pages` pages are sequence 0's.
inline PagedInputs make_paged_inputs(const PagedCase& c, std::mt19937_64& rng) {
  PagedInputs in;
  in.elem = c.dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1;
  const int64_t batch = static_cast<int64_t>(c.q_lens.size()), p = c.page_size;
  const int64_t row = c.heads_kv * c.head_dim * in.elem;  // bytes of one key (all KV heads)
  in.cu_q = {0};
  in.cu_k = {0};
  for (int64_t b = 0; b < batch; ++b) {
    in.cu_q.push_back(in.cu_q.back() + static_cast<int32_t>(c.q_lens[b]));
    in.cu_k.push_back(in.cu_k.back() + static_cast<int32_t>(c.k_lens[b]));
    in.max_q = std::max(in.max_q, c.q_lens[b]);
    in.max_k = std::max(in.max_k, c.k_lens[b]);
  }
  in.total_q = in.cu_q.back();
  in.total_k = in.cu_k.back();
  in.q.resize(static_cast<size_t>(in.total_q * c.heads_q * c.head_dim * in.elem));
  in.k.resize(static_cast<size_t>(in.total_k * row));
  in.v.resize(in.k.size());
  fill_random(in.q, c.dtype, rng);
  fill_random(in.k, c.dtype, rng);
  fill_random(in.v, c.dtype, rng);
  if (c.shared_pages > 0) {  // the shared prefix holds the same keys in both sequences
    const int64_t bytes = c.shared_pages * p * row;
    std::memcpy(&in.k[static_cast<size_t>(in.cu_k[1] * row)], in.k.data(), static_cast<size_t>(bytes));
    std::memcpy(&in.v[static_cast<size_t>(in.cu_k[1] * row)], in.v.data(), static_cast<size_t>(bytes));
  }
  const int64_t bound = in.max_k + c.bound_extra;
  in.max_pages = std::max<int64_t>((bound + p - 1) / p, 1);
  in.table_stride = in.max_pages + 3;
  int64_t needed = 0;
  for (int64_t b = 0; b < batch; ++b) needed += (c.k_lens[b] + p - 1) / p - (b == 1 ? c.shared_pages : 0);
  in.num_pages = needed + 3;  // a few pages no sequence uses
  std::vector<int32_t> order(static_cast<size_t>(in.num_pages));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  in.k_cache.resize(static_cast<size_t>(in.num_pages * p * row));
  in.v_cache.resize(in.k_cache.size());
  // NaN codes in the slots no key uses (an uninitialized cache holds them): they must never
  // reach O, where 0 · NaN would show.
  for (std::vector<uint8_t>* cache : {&in.k_cache, &in.v_cache})
    for (size_t i = 0; i < cache->size(); ++i)
      (*cache)[i] = c.dtype == FP8ATTN_DTYPE_BF16 ? (i % 2 == 0 ? 0xC1 : 0x7F) : 0x7F;  // BF16 0x7FC1, E4M3 0x7F
  // Entries past each row's last page (and the row padding) are out of range: the kernel must
  // not read them (a read would be flagged as a fault).
  in.table.assign(static_cast<size_t>(batch * in.table_stride), static_cast<int32_t>(in.num_pages + 1000));
  size_t next = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t pages = (c.k_lens[b] + p - 1) / p;
    for (int64_t j = 0; j < pages; ++j) {
      const bool shared = b == 1 && j < c.shared_pages;
      const int32_t page = shared ? in.table[static_cast<size_t>(j)] : order[next++];
      in.table[static_cast<size_t>(b * in.table_stride + j)] = page;
      const int64_t keys = std::min(p, c.k_lens[b] - j * p);
      const size_t src = static_cast<size_t>((in.cu_k[b] + j * p) * row), dst = static_cast<size_t>(page * p * row);
      std::memcpy(&in.k_cache[dst], &in.k[src], static_cast<size_t>(keys * row));
      std::memcpy(&in.v_cache[dst], &in.v[src], static_cast<size_t>(keys * row));
    }
  }
  in.seqused.assign(c.k_lens.begin(), c.k_lens.end());
  return in;
}

/// Outputs of one run: BF16 O bytes and the F32 LSE, poisoned before the run.
struct RunResult {
  std::vector<uint16_t> out;
  std::vector<float> lse;
  sm90::FwdPagedFaults faults{};
};

inline fp8attn_attention_desc paged_desc(const PagedCase& c) {
  fp8attn_attention_desc d{};
  fp8attn_attention_desc_init(&d);
  d.input_dtype = c.dtype;
  d.output_dtype = FP8ATTN_DTYPE_BF16;
  d.head_dim = c.head_dim;
  d.num_heads_q = c.heads_q;
  d.num_heads_kv = c.heads_kv;
  d.causal = c.causal ? 1 : 0;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.sink_tokens = static_cast<int32_t>(c.sink_tokens);
  return d;
}

/// The emulator schedules of a paged run: round-robin and one shuffle seed.
inline std::vector<emu::LaunchConfig> paged_schedules(uint64_t seed) {
  emu::LaunchConfig round_robin, shuffled;
  shuffled.shuffle = true;
  shuffled.seed = seed;
  for (emu::LaunchConfig* s : {&round_robin, &shuffled}) {
    s->host_threads = 2;
    s->proxy_fence_check = true;  // the gather path's generic writes reach the wgmma through a fence
  }
  return {round_robin, shuffled};
}

/// One problem of the case: packed contiguous K and V, or (paged) the cache and its table.
struct PagedRun {
  AttentionConfig config;
  AttentionProblem problem;
  RunResult result;
  std::vector<uint64_t> workspace = std::vector<uint64_t>(32, 0xCDCDCDCDCDCDCDCDull);  // 256 bytes

  PagedRun(const PagedCase& c, PagedInputs& in, bool paged) : config(make_attention_config(paged_desc(c))) {
    const int64_t batch = static_cast<int64_t>(c.q_lens.size());
    result.out.assign(static_cast<size_t>(in.total_q * c.heads_q * c.head_dim), 0x7FC1);  // NaN
    result.lse.assign(static_cast<size_t>(c.heads_q * in.total_q), std::numeric_limits<float>::quiet_NaN());
    using workloads::dense_host_tensor;
    fp8attn_attention_args a{};
    a.struct_size = sizeof a;
    a.q = dense_host_tensor(in.q.data(), c.dtype, {in.total_q, c.heads_q, c.head_dim});
    a.k = dense_host_tensor(in.k.data(), c.dtype, {in.total_k, c.heads_kv, c.head_dim});
    a.v = dense_host_tensor(in.v.data(), c.dtype, {in.total_k, c.heads_kv, c.head_dim});
    a.out = dense_host_tensor(result.out.data(), FP8ATTN_DTYPE_BF16, {in.total_q, c.heads_q, c.head_dim});
    a.lse = dense_host_tensor(result.lse.data(), FP8ATTN_DTYPE_F32, {c.heads_q, in.total_q});
    a.cu_seqlens_q = dense_host_tensor(in.cu_q.data(), FP8ATTN_DTYPE_I32, {batch + 1});
    a.cu_seqlens_k = dense_host_tensor(in.cu_k.data(), FP8ATTN_DTYPE_I32, {batch + 1});
    problem = make_attention_problem(config, a, FP8ATTN_DEVICE_HOST);
    if (!paged) return;
    // NOTE: the view the C API's validation builds for a paged cache (attention_problem.hpp):
    // k and v hold the caches with batch_stride = the page stride, seq_stride = the token stride.
    const int64_t token = c.heads_kv * c.head_dim;
    for (auto [t, data] : {std::pair{&problem.k, in.k_cache.data()}, std::pair{&problem.v, in.v_cache.data()}})
      *t = SeqTensor{data, c.dtype, c.page_size * token, token, c.head_dim, 1};
    problem.cu_seqlens_k = nullptr;
    problem.max_seqlen_k = in.max_k + c.bound_extra;
    PagedKv& kv = problem.paged;
    kv.present = true;
    kv.page_size = c.page_size;
    kv.num_pages = in.num_pages;
    kv.max_pages_per_seq = in.max_pages;
    kv.block_table = in.table.data();
    kv.table_batch_stride = in.table_stride;
    kv.table_page_stride = 1;
    kv.seqused_k = in.seqused.data();
    kv.seqused_stride = 1;
  }

  sm90::FwdLaunch plan() { return gpu::plan_attention_fwd(config, problem, workspace.data(), 3); }

  /// Runs `launch` (this run's plan, or an earlier one: graph replay) under `schedule`.
  void launch(const sm90::FwdLaunch& l, emu::LaunchConfig schedule) {
    std::fill(result.out.begin(), result.out.end(), uint16_t{0x7FC1});
    std::fill(result.lse.begin(), result.lse.end(), std::numeric_limits<float>::quiet_NaN());
    if (l.args.paged.faults != nullptr) *l.args.paged.faults = {};  // as the backend zeroes them
    schedule.mma_model = l.mma_model;
    sm90::launch_attention_fwd_emulated(l, schedule);
    if (l.args.paged.faults != nullptr) result.faults = *l.args.paged.faults;
  }
};

inline int64_t mismatches(const RunResult& a, const RunResult& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.out.size(); ++i) n += a.out[i] != b.out[i];
  for (size_t i = 0; i < a.lse.size(); ++i) n += std::memcmp(&a.lse[i], &b.lse[i], 4) != 0;
  return n + static_cast<int64_t>(a.out.size() != b.out.size() || a.lse.size() != b.lse.size());
}

}  // namespace fp8attn::paged_test
