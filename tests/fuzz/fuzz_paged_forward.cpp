// libFuzzer target: the paged forward (an fp8attn_paged_kv on args.next), from fuzzed page sizes,
// cache shapes and strides, block tables (entries outside the pool included), seqused_k, bounds,
// scale caches, query layouts and extension headers. Invariants: a refused call leaves out and lse
// untouched; an accepted call had every block-table entry its sequences use inside the pool and
// every seqused_k within its bounds (checked here independently), and wrote finite outputs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {

constexpr int64_t kElems = 1 << 15;  // elements of each buffer the harness owns
constexpr int64_t kTableElems = 256;
constexpr int64_t kWorkBudget = int64_t{1} << 17;
constexpr size_t kWorkspaceCap = size_t{1} << 30;

bool fits(const fp8attn_tensor& t, int64_t elems, bool* must_refuse) {
  if (t.data == nullptr) return true;
  const int64_t reach = reach_of(t);
  if (reach < 0) *must_refuse = true;
  return reach <= elems;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  fp8attn_context ctx = shared_context();
  fp8attn_attention_desc desc{};
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  const uint8_t edits = r.take<uint8_t>();
  if (edits & 1) desc.input_dtype = FP8ATTN_DTYPE_BF16;
  if (edits & 2) desc.kv_dtype = r.pick(2) ? FP8ATTN_DTYPE_E4M3 : FP8ATTN_DTYPE_BF16;
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  desc.head_dim = 64;
  desc.num_heads_kv = 1 + static_cast<int32_t>(r.pick(2));
  desc.num_heads_q = desc.num_heads_kv * (1 + static_cast<int32_t>(r.pick(3)));
  desc.causal = r.pick(2);
  if (edits & 4) desc.window_left = static_cast<int32_t>(r.extent(20) - 1), desc.window_right = static_cast<int32_t>(r.pick(4));
  if (edits & 8) desc.sink_tokens = static_cast<int32_t>(r.pick(6));
  desc.page_size = static_cast<int32_t>(r.extent(24));
  fp8attn_plan plan = nullptr;
  fp8attn_error err = fresh_error();
  if (fp8attn_plan_create(ctx, &desc, &plan, &err) != FP8ATTN_OK) return 0;
  struct PlanGuard {
    fp8attn_plan p;
    ~PlanGuard() { fp8attn_plan_destroy(p); }
  } guard{plan};
  const int32_t kv_dtype = desc.kv_dtype == 0 ? desc.input_dtype : desc.kv_dtype;
  const int64_t hq = desc.num_heads_q, hkv = desc.num_heads_kv, d = desc.head_dim;
  const size_t q_bytes = desc.input_dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2, kv_bytes = kv_dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2;

  // Caches [num_pages, page_size, hkv, d] with dense or fuzzed strides.
  std::vector<uint8_t> k_cache(kElems * kv_bytes), v_cache(kElems * kv_bytes), q(kElems * q_bytes);
  for (std::vector<uint8_t>* x : {&k_cache, &v_cache, &q})
    for (size_t i = 0; i < x->size(); ++i) (*x)[i] = static_cast<uint8_t>((i * 73 + 11) % 251);
  for (std::vector<uint8_t>* x : {&k_cache, &v_cache, &q})  // finite, moderate codes
    for (size_t i = 0; i < x->size(); ++i) (*x)[i] &= (x == &q ? q_bytes : kv_bytes) == 1 ? 0xB7 : 0xBF;
  fp8attn_paged_kv pk{};
  pk.struct_size = sizeof pk;
  pk.struct_type = FP8ATTN_STRUCT_TYPE_PAGED_KV;
  const int64_t num_pages = r.extent(12), page = r.pick(8) == 0 ? r.extent(24) : desc.page_size;
  const bool fuzz_strides = r.pick(3) == 0;
  for (fp8attn_tensor* t : {&pk.k_cache, &pk.v_cache}) {
    *t = tensor(t == &pk.k_cache ? k_cache.data() : v_cache.data(), r.pick(16) == 0 ? FP8ATTN_DTYPE_F32 : kv_dtype, 4);
    const int64_t shape[] = {num_pages, page, hkv, d};
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) t->shape[i] = shape[i], t->stride[i] = stride, stride = next_dense_stride(stride, shape[i]);
    if (fuzz_strides)
      for (int i = 0; i < 4; ++i)
        if (r.pick(3) == 0) t->stride[i] = r.extent(256);
  }
  // Block table [batch, max_pages] (row stride fuzzed), seqused_k [batch], the bound.
  const int64_t batch = 1 + r.pick(4), max_pages = r.extent(6);
  std::vector<int32_t> table(kTableElems), seqused(8);
  for (int32_t& e : table) e = static_cast<int32_t>(r.pick(static_cast<uint32_t>(std::max<int64_t>(num_pages, 0) % 64 + 3))) - 1;
  for (int32_t& s : seqused) {
    s = static_cast<int32_t>(std::clamp<int64_t>(r.extent(48), INT32_MIN + 64, INT32_MAX));
    if (r.pick(16) == 0) s -= 50;  // a negative length
  }
  pk.block_table = tensor(table.data(), FP8ATTN_DTYPE_I32, 2);
  pk.block_table.shape[0] = r.pick(12) == 0 ? batch + 1 : batch, pk.block_table.shape[1] = max_pages;
  pk.block_table.stride[0] = max_pages + r.pick(4), pk.block_table.stride[1] = 1;
  if (r.pick(4) == 0) pk.block_table.stride[0] = 1, pk.block_table.stride[1] = batch;  // column-major
  pk.seqused_k = tensor(seqused.data(), FP8ATTN_DTYPE_I32, 1);
  pk.seqused_k.shape[0] = batch, pk.seqused_k.stride[0] = 1;
  pk.max_seqlen_k = r.extent(48);
  // Scale caches: a fuzzed granularity over fuzzed numbers.
  std::vector<float> scales(kElems);
  for (size_t i = 0; i < 64; ++i) scales[i] = r.number();
  for (size_t i = 64; i < scales.size(); ++i) scales[i] = scales[i % 64];
  pk.scale_granularity = static_cast<int32_t>(r.pick(4));
  if (pk.scale_granularity != 0 || r.pick(8) == 0) {
    const bool per_head = pk.scale_granularity == FP8ATTN_KV_SCALE_PER_HEAD;
    for (fp8attn_tensor* t : {&pk.k_descale, &pk.v_descale}) {
      *t = tensor(scales.data(), FP8ATTN_DTYPE_F32, per_head ? 1 : 3);
      if (per_head) {
        t->shape[0] = hkv, t->stride[0] = 1;
      } else {
        t->shape[0] = num_pages, t->shape[1] = page, t->shape[2] = hkv;
        t->stride[2] = 1, t->stride[1] = hkv, t->stride[0] = next_dense_stride(hkv, page);
      }
    }
  }
  // The extension header, sometimes broken.
  const void* self_loop = &pk;
  if (r.pick(16) == 0) pk.struct_type = static_cast<int32_t>(r.extent(4));
  if (r.pick(16) == 0) pk.struct_size = static_cast<size_t>(r.extent(200));
  if (r.pick(32) == 0) pk.next = self_loop;

  // Queries: padded [batch, sq, hq, d] or packed with cu_seqlens_q.
  const bool packed = r.pick(3) == 0;
  std::vector<int32_t> cu_q(batch + 1, 0);
  int64_t max_q = 0, rows = 0;
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.next = r.pick(32) == 0 ? nullptr : &pk;
  std::vector<uint8_t> out(kElems * 4, 0xA5), lse(kElems * 4, 0xA5);
  if (packed) {
    for (int64_t b = 1; b <= batch; ++b) {
      const int64_t len = r.pick(12);
      cu_q[b] = static_cast<int32_t>(cu_q[b - 1] + len);
      max_q = std::max(max_q, len);
    }
    rows = cu_q[batch];
    a.q = tensor(q.data(), desc.input_dtype, 3);
    a.q.shape[0] = rows, a.q.shape[1] = hq, a.q.shape[2] = d, a.q.stride[0] = hq * d, a.q.stride[1] = d, a.q.stride[2] = 1;
    a.out = a.q, a.out.data = out.data(), a.out.dtype = FP8ATTN_DTYPE_F32;
    a.cu_seqlens_q = tensor(cu_q.data(), FP8ATTN_DTYPE_I32, 1);
    a.cu_seqlens_q.shape[0] = batch + 1, a.cu_seqlens_q.stride[0] = 1;
    a.lse = tensor(lse.data(), FP8ATTN_DTYPE_F32, 2);
    a.lse.shape[0] = hq, a.lse.shape[1] = rows, a.lse.stride[0] = rows, a.lse.stride[1] = 1;
  } else {
    max_q = r.pick(12);
    rows = batch * max_q;
    a.q = tensor(q.data(), desc.input_dtype, 4);
    a.q.shape[0] = batch, a.q.shape[1] = max_q, a.q.shape[2] = hq, a.q.shape[3] = d;
    a.q.stride[3] = 1, a.q.stride[2] = d, a.q.stride[1] = hq * d, a.q.stride[0] = max_q * hq * d;
    a.out = a.q, a.out.data = out.data(), a.out.dtype = FP8ATTN_DTYPE_F32;
    a.lse = tensor(lse.data(), FP8ATTN_DTYPE_F32, 3);
    a.lse.shape[0] = batch, a.lse.shape[1] = hq, a.lse.shape[2] = max_q;
    a.lse.stride[0] = hq * max_q, a.lse.stride[1] = max_q, a.lse.stride[2] = 1;
  }
  if (r.pick(16) == 0) a.k = a.q;  // contiguous K beside the cache: refused

  bool must_refuse = false;
  for (const fp8attn_tensor* t : {&a.q, &a.out, &pk.k_cache, &pk.v_cache, &pk.k_descale, &pk.v_descale})
    if (!fits(*t, kElems, &must_refuse)) return 0;  // memory the harness does not own: not a valid call
  if (!fits(pk.block_table, kTableElems, &must_refuse)) return 0;
  int64_t work = 0;
  if (__builtin_mul_overflow(rows, std::max<int64_t>(pk.max_seqlen_k, 1), &work) ||
      __builtin_mul_overflow(work, std::max<int64_t>(hq, 1), &work) || work > kWorkBudget)
    return 0;

  size_t bytes = 0;
  std::vector<uint8_t> workspace;
  if (fp8attn_plan_workspace_size(plan, batch, std::max<int64_t>(max_q, 1), std::max<int64_t>(pk.max_seqlen_k, 1),
                                  &bytes, nullptr) != FP8ATTN_OK)
    return 0;
  // NOTE: the workspace grows with max_seqlen_k (the engine decodes each worker's KV blocks into
  // it) even when no query row exists; a query whose answer is past this is a valid call that
  // the harness cannot afford, not a finding.
  if (bytes > kWorkspaceCap) return 0;
  workspace.resize(bytes);
  const std::vector<uint8_t> out_before = out, lse_before = lse;
  const int32_t s = fp8attn_attention_forward(plan, &a, workspace.data(), workspace.size(), nullptr, &err);
  if (s != FP8ATTN_OK && (out != out_before || lse != lse_before)) broken("a refused paged forward wrote its outputs", err);
  if (s != FP8ATTN_OK) return 0;
  if (must_refuse) broken("a tensor whose reach overflows int64 was accepted", err);
  // Accepted: every page in use was inside the pool, every length within its bounds.
  if (desc.page_size < 1) broken("a forward with a paged cache was accepted on a plan with page_size 0", err);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = seqused[b];
    if (used < 0 || used > pk.max_seqlen_k || used > max_pages * desc.page_size)
      broken("a seqused_k outside its bounds was accepted", err);
    for (int64_t i = 0; i * desc.page_size < used; ++i) {
      const int64_t e = table[b * pk.block_table.stride[0] + i * pk.block_table.stride[1]];
      if (e < 0 || e >= num_pages) broken("a block-table entry outside the pool was accepted", err);
    }
  }
  for (int64_t i = 0; i < rows * hq * d; ++i) {
    float x;
    std::memcpy(&x, out.data() + 4 * i, 4);
    if (!std::isfinite(x)) broken("an accepted paged forward wrote a non-finite output", err);
  }
  return 0;
}
