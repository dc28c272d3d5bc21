// Shared by the paged KV cache tests: a page pool filled with fresh random codes in a shuffled
// page order (unused slots hold NaN codes, so a read outside the block table shows), its block
// table and seqused_k, the packed contiguous K and V it stands for (gathered here, plainly), and
// forward calls through the C ABI with poisoned outputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::paged_test {

using workloads::dense_host_tensor;

inline constexpr float kPoison = -777.0f;

/// How the pages are laid out.
struct PagedLayout {
  int64_t page_size = 16;
  std::vector<int64_t> seqlen_k;  ///< keys in use per sequence (seqused_k)
  int64_t shared_pages = 0;       ///< sequence 1 starts with sequence 0's first pages (prefix sharing)
  int64_t extra_pages = 2;        ///< pages of the pool no sequence uses
  int64_t table_pad = 3;          ///< block-table row stride = max_pages_per_seq + table_pad
  bool transposed_table = false;  ///< the table stored column-major: strides [1, batch]
  int64_t max_seqlen_k = -1;      ///< −1: the largest seqlen_k
};

inline size_t dtype_bytes(int32_t dtype) { return dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1; }

/// Random codes of N(0, 1) values (E4M3 or BF16), n elements, raw bytes.
inline std::vector<uint8_t> random_codes(int32_t dtype, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> x(n * dtype_bytes(dtype));
  for (size_t i = 0; i < n; ++i) {
    if (dtype == FP8ATTN_DTYPE_E4M3) {
      x[i] = num::float_to_e4m3(normal(rng));
    } else {
      const uint16_t c = num::float_to_bf16(normal(rng));
      std::memcpy(&x[2 * i], &c, 2);
    }
  }
  return x;
}

/// A page pool and the contiguous K and V it holds.
struct PagedKvData {
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int heads_kv = 1, head_dim = 64;
  int64_t batch = 0, page_size = 0, num_pages = 0, max_pages = 0, max_seqlen_k = 0;
  std::vector<uint8_t> k_cache, v_cache;  ///< [num_pages, page_size, heads_kv, head_dim]
  std::vector<int32_t> table;             ///< storage of the block table
  int64_t table_stride0 = 0, table_stride1 = 0;
  std::vector<int32_t> seqused;
  std::vector<uint8_t> k_packed, v_packed;  ///< [total_k, heads_kv, head_dim]
  std::vector<int32_t> cu_seqlens_k;

  int32_t& entry(int64_t b, int64_t i) { return table[b * table_stride0 + i * table_stride1]; }
  size_t row_bytes() const { return static_cast<size_t>(heads_kv) * head_dim * dtype_bytes(dtype); }

  fp8attn_paged_kv paged() {
    fp8attn_paged_kv p{};
    p.struct_size = sizeof p;
    p.struct_type = FP8ATTN_STRUCT_TYPE_PAGED_KV;
    p.k_cache = dense_host_tensor(k_cache.data(), dtype, {num_pages, page_size, heads_kv, head_dim});
    p.v_cache = dense_host_tensor(v_cache.data(), dtype, {num_pages, page_size, heads_kv, head_dim});
    p.block_table = dense_host_tensor(table.data(), FP8ATTN_DTYPE_I32, {batch, max_pages});
    p.block_table.stride[0] = table_stride0;
    p.block_table.stride[1] = table_stride1;
    p.seqused_k = dense_host_tensor(seqused.data(), FP8ATTN_DTYPE_I32, {batch});
    p.max_seqlen_k = max_seqlen_k;
    return p;
  }
};

/// Fills sequence b's key j: K's and V's row of every KV head, row_bytes() each.
using RowSource = std::function<void(int64_t b, int64_t j, uint8_t* k_row, uint8_t* v_row)>;

inline PagedKvData make_paged_kv(const PagedLayout& l, int32_t dtype, int heads_kv, int head_dim, std::mt19937_64& rng,
                                 const RowSource& source = {}) {
  PagedKvData kv;
  kv.dtype = dtype;
  kv.heads_kv = heads_kv;
  kv.head_dim = head_dim;
  kv.batch = static_cast<int64_t>(l.seqlen_k.size());
  kv.page_size = l.page_size;
  std::vector<int64_t> pages(kv.batch);
  int64_t distinct = l.extra_pages;
  for (int64_t b = 0; b < kv.batch; ++b) {
    pages[b] = (l.seqlen_k[b] + l.page_size - 1) / l.page_size;
    kv.max_pages = std::max(kv.max_pages, pages[b]);
    distinct += pages[b];
    kv.max_seqlen_k = std::max(kv.max_seqlen_k, l.seqlen_k[b]);
  }
  if (l.max_seqlen_k >= 0) kv.max_seqlen_k = l.max_seqlen_k;
  const int64_t shared = l.shared_pages;
  distinct -= shared;
  kv.num_pages = distinct;
  // The table: padded rows, garbage where no page is listed (never read).
  const int64_t cols = kv.max_pages + l.table_pad;
  kv.table.assign(static_cast<size_t>(std::max<int64_t>(kv.batch * cols, 1)), 1 << 30);
  kv.table_stride0 = l.transposed_table ? 1 : cols;
  kv.table_stride1 = l.transposed_table ? kv.batch : 1;
  std::vector<int32_t> perm(static_cast<size_t>(kv.num_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  size_t next = 0;
  for (int64_t b = 0; b < kv.batch; ++b)
    for (int64_t i = 0; i < pages[b]; ++i) kv.entry(b, i) = (b == 1 && i < shared) ? kv.entry(0, i) : perm[next++];
  // NaN codes everywhere, then fresh codes in the slots in use.
  const size_t slots = static_cast<size_t>(kv.num_pages * kv.page_size);
  const size_t rb = kv.row_bytes();
  kv.k_cache.assign(slots * rb, 0x7F);  // E4M3 NaN; 0x7F7F is BF16's largest finite value
  kv.v_cache.assign(slots * rb, 0x7F);
  std::vector<uint8_t> filled(slots, 0);
  kv.cu_seqlens_k.assign(1, 0);
  for (int64_t b = 0; b < kv.batch; ++b) {
    kv.seqused.push_back(static_cast<int32_t>(l.seqlen_k[b]));
    kv.cu_seqlens_k.push_back(kv.cu_seqlens_k.back() + static_cast<int32_t>(l.seqlen_k[b]));
    for (int64_t j = 0; j < l.seqlen_k[b]; ++j) {
      const size_t slot = static_cast<size_t>(kv.entry(b, j / l.page_size) * kv.page_size + j % l.page_size);
      if (!filled[slot] && source) {
        source(b, j, &kv.k_cache[slot * rb], &kv.v_cache[slot * rb]);
        filled[slot] = 1;
      } else if (!filled[slot]) {
        const auto k = random_codes(dtype, static_cast<size_t>(heads_kv) * head_dim, rng);
        const auto v = random_codes(dtype, static_cast<size_t>(heads_kv) * head_dim, rng);
        std::memcpy(&kv.k_cache[slot * rb], k.data(), rb);
        std::memcpy(&kv.v_cache[slot * rb], v.data(), rb);
        filled[slot] = 1;
      }
      kv.k_packed.insert(kv.k_packed.end(), kv.k_cache.begin() + slot * rb, kv.k_cache.begin() + (slot + 1) * rb);
      kv.v_packed.insert(kv.v_packed.end(), kv.v_cache.begin() + slot * rb, kv.v_cache.begin() + (slot + 1) * rb);
    }
  }
  return kv;
}

/// Queries: packed rows [total_q, heads_q, head_dim]; in the padded layout every sequence has
/// seqlen_q[0] rows and the same memory is viewed as [batch, seqlen_q, heads_q, head_dim].
struct Queries {
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int heads_q = 1, head_dim = 64;
  std::vector<int64_t> seqlen_q;
  bool padded = false;
  std::vector<uint8_t> q;
  std::vector<int32_t> cu_seqlens_q;
  int64_t total() const { return cu_seqlens_q.back(); }
  int64_t batch() const { return static_cast<int64_t>(seqlen_q.size()); }
  int64_t max_len() const { return seqlen_q.empty() ? 0 : *std::max_element(seqlen_q.begin(), seqlen_q.end()); }
};

inline Queries make_queries(int32_t dtype, int heads_q, int head_dim, std::vector<int64_t> seqlen_q, bool padded,
                            std::mt19937_64& rng) {
  Queries q;
  q.dtype = dtype;
  q.heads_q = heads_q;
  q.head_dim = head_dim;
  q.seqlen_q = std::move(seqlen_q);
  q.padded = padded;
  q.cu_seqlens_q.assign(1, 0);
  for (int64_t s : q.seqlen_q) q.cu_seqlens_q.push_back(q.cu_seqlens_q.back() + static_cast<int32_t>(s));
  q.q = random_codes(dtype, static_cast<size_t>(q.total()) * heads_q * head_dim, rng);
  return q;
}

/// A forward's outputs: out [total_q, heads_q, head_dim] F32 and lse [heads_q, total_q] F32
/// (the padded layout's [batch, heads_q, seqlen_q] is viewed onto the same memory).
struct Outputs {
  int32_t status = -1;
  std::string message;
  std::vector<float> out, lse;
  bool untouched() const {
    auto poisoned = [](const std::vector<float>& x) {
      return std::all_of(x.begin(), x.end(), [](float e) { return std::memcmp(&e, &kPoison, sizeof e) == 0; });
    };
    return poisoned(out) && poisoned(lse);
  }
};

/// The args of a forward over `q` with out and lse pointing into `o` (poisoned here).
inline fp8attn_attention_args query_args(Queries& q, Outputs& o, int head_dim_v) {
  const int64_t total = q.total();
  o.out.assign(static_cast<size_t>(total) * q.heads_q * head_dim_v, kPoison);
  o.lse.assign(static_cast<size_t>(total) * q.heads_q, kPoison);
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  if (q.padded) {
    const int64_t b = q.batch(), s = q.seqlen_q.empty() ? 0 : q.seqlen_q[0];
    a.q = dense_host_tensor(q.q.data(), q.dtype, {b, s, q.heads_q, q.head_dim});
    a.out = dense_host_tensor(o.out.data(), FP8ATTN_DTYPE_F32, {b, s, q.heads_q, head_dim_v});
    a.lse = dense_host_tensor(o.lse.data(), FP8ATTN_DTYPE_F32, {b, q.heads_q, s});
    a.lse.stride[0] = s, a.lse.stride[1] = total, a.lse.stride[2] = 1;
  } else {
    a.q = dense_host_tensor(q.q.data(), q.dtype, {total, q.heads_q, q.head_dim});
    a.out = dense_host_tensor(o.out.data(), FP8ATTN_DTYPE_F32, {total, q.heads_q, head_dim_v});
    a.lse = dense_host_tensor(o.lse.data(), FP8ATTN_DTYPE_F32, {q.heads_q, total});
    a.cu_seqlens_q = dense_host_tensor(q.cu_seqlens_q.data(), FP8ATTN_DTYPE_I32, {q.batch() + 1});
  }
  return a;
}

/// Creates a context and plan on `backend`, queries the workspace and runs the forward; the
/// status and message come back in `o`.
inline void run_forward(int32_t backend, const fp8attn_attention_desc& desc, const fp8attn_attention_args& args,
                        int64_t batch, int64_t max_q, int64_t max_k, Outputs& o, int threads = 2) {
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_context_options opt{};
  opt.struct_size = sizeof opt;
  opt.backend = backend;
  opt.num_threads = threads;
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  o.status = fp8attn_context_create(&opt, &ctx, &err);
  if (o.status == FP8ATTN_OK) o.status = fp8attn_plan_create(ctx, &desc, &plan, &err);
  size_t bytes = 0;
  if (o.status == FP8ATTN_OK) o.status = fp8attn_plan_workspace_size(plan, batch, max_q, max_k, &bytes, &err);
  if (o.status == FP8ATTN_OK) {
    std::vector<unsigned char> ws(bytes + 1, 0xA5);
    o.status = fp8attn_attention_forward(plan, &args, ws.data(), bytes, nullptr, &err);
  }
  o.message = err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

/// Bit equality of two float vectors; the first difference in `where`.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b, std::string* where) {
  if (a.size() != b.size()) {
    *where = "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      *where = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      return false;
    }
  return true;
}

}  // namespace fp8attn::paged_test
