#include "lib/attention/paged_kv_problem.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"

namespace fp8attn {
namespace {

/// The bytes every extension struct starts with.
constexpr size_t kTagEnd = offsetof(fp8attn_paged_kv, struct_type) + sizeof(int32_t);
static_assert(offsetof(fp8attn_paged_kv, next) == sizeof(size_t), "extension header: struct_size, next, struct_type");

std::string at2(int64_t b, int64_t i) { return "[" + std::to_string(b) + ", " + std::to_string(i) + "]"; }

/// A descale of a paged cache: finite and > 0 (BAD_SCALE), naming the element by its `n` indices.
void require_descale(float x, std::string_view what, std::initializer_list<int64_t> index) {
  if (std::isfinite(x) && x > 0.0f) return;
  std::string m(what);
  const char* sep = "[";
  for (const int64_t i : index) {
    m += sep;
    m += std::to_string(i);
    sep = ", ";
  }
  m += "] must be finite and > 0, got ";
  m += std::to_string(x);
  throw Error(FP8ATTN_STATUS_BAD_SCALE, m);
}

/// A scale cache of the granularity `g`: PER_HEAD F32 [heads_kv], PER_TOKEN_HEAD F32 [num_pages,
/// page_size, heads_kv]; values checked on the host for the tokens in use.
PagedKv::ScaleCache read_scale_cache(const fp8attn_tensor& t, std::string_view what, int32_t g, const PagedKv& kv,
                                     int heads_kv, int32_t device) {
  PagedKv::ScaleCache s;
  const bool host = device == FP8ATTN_DEVICE_HOST;
  if (g == FP8ATTN_KV_SCALE_PER_HEAD) {
    check_tensor(t, what, {1, FP8ATTN_DTYPE_F32, device, false});
    require_extent(t, what, 0, heads_kv, "num_heads_kv (scale_granularity PER_HEAD)");
    s = {static_cast<const float*>(t.data), 0, 0, t.stride[0]};
    if (host) {
      s.largest = 0.0f;
      for (int h = 0; h < heads_kv; ++h) {
        require_descale(s.at(0, 0, h), what, {h});
        s.largest = std::max(s.largest, s.at(0, 0, h));
      }
    }
    return s;
  }
  check_tensor(t, what, {3, FP8ATTN_DTYPE_F32, device, false});
  require_extent(t, what, 0, kv.num_pages, "the caches' page count (scale_granularity PER_TOKEN_HEAD)");
  require_extent(t, what, 1, kv.page_size, "desc.page_size");
  require_extent(t, what, 2, heads_kv, "num_heads_kv");
  s = {static_cast<const float*>(t.data), t.stride[0], t.stride[1], t.stride[2]};
  return s;
}

}  // namespace

ForwardExtensions read_forward_extensions(const AttentionConfig& cfg, const void* next) {
  ForwardExtensions ext;
  for (const void* node = next; node != nullptr;) {
    size_t size = 0;
    std::memcpy(&size, node, sizeof size);
    FP8ATTN_REQUIRE(size >= kTagEnd, FP8ATTN_STATUS_BAD_STRUCT_SIZE,
                    "a struct on args.next has struct_size " + std::to_string(size) +
                        ", too small for its header (struct_size, next, struct_type: " + std::to_string(kTagEnd) +
                        " bytes)");
    int32_t type = 0;
    std::memcpy(&type, static_cast<const unsigned char*>(node) + offsetof(fp8attn_paged_kv, struct_type), sizeof type);
    FP8ATTN_REQUIRE(type == FP8ATTN_STRUCT_TYPE_PAGED_KV, FP8ATTN_STATUS_BAD_EXTENSION,
                    "a struct on args.next has struct_type " + std::to_string(type) +
                        ", which the forward does not take (FP8ATTN_STRUCT_TYPE_PAGED_KV = 1)");
    // NOTE: a second node of a known type is refused, so a chain that loops back ends here too.
    FP8ATTN_REQUIRE(!ext.paged, FP8ATTN_STATUS_BAD_EXTENSION,
                    "args.next chains two fp8attn_paged_kv structs (or the chain loops); chain one");
    FP8ATTN_REQUIRE(size >= sizeof(fp8attn_paged_kv), FP8ATTN_STATUS_BAD_STRUCT_SIZE,
                    "fp8attn_paged_kv.struct_size is " + std::to_string(size) + ", smaller than its layout (" +
                        std::to_string(sizeof(fp8attn_paged_kv)) + " bytes)");
    std::memcpy(static_cast<void*>(&ext.paged_kv), node, sizeof(fp8attn_paged_kv));
    ext.paged = true;
    node = ext.paged_kv.next;
  }
  FP8ATTN_REQUIRE(!ext.paged || cfg.paged(), FP8ATTN_STATUS_BAD_EXTENSION,
                  "args.next carries an fp8attn_paged_kv, but the plan's desc.page_size is 0 (K and V not paged): "
                  "create the plan with desc.page_size equal to the caches' page size");
  FP8ATTN_REQUIRE(ext.paged || !cfg.paged(), FP8ATTN_STATUS_BAD_EXTENSION,
                  "the plan's desc.page_size is " + std::to_string(cfg.page_size) +
                      " (a paged KV cache), but args.next carries no fp8attn_paged_kv (struct_type "
                      "FP8ATTN_STRUCT_TYPE_PAGED_KV): chain one with the caches, the block table and seqused_k");
  return ext;
}

void fill_paged_kv(const AttentionConfig& cfg, const fp8attn_paged_kv& kv, const fp8attn_attention_args& a,
                   AttentionProblem* p, int32_t device) {
  FP8ATTN_REQUIRE(a.k.data == nullptr && a.v.data == nullptr && a.cu_seqlens_k.data == nullptr,
                  FP8ATTN_STATUS_INVALID_ARGUMENT,
                  "args.k, args.v and args.cu_seqlens_k must be absent (NULL data) with a paged KV cache: K and V "
                  "come from the fp8attn_paged_kv on args.next (k_cache, v_cache, block_table, seqused_k)");
  check_tensor(kv.k_cache, "paged_kv.k_cache", {4, cfg.kv_dtype, device, false});
  check_tensor(kv.v_cache, "paged_kv.v_cache", {4, cfg.kv_dtype, device, false});
  PagedKv& pk = p->paged;
  pk.present = true;
  pk.page_size = cfg.page_size;
  pk.num_pages = kv.k_cache.shape[0];
  require_extent(kv.k_cache, "paged_kv.k_cache", 1, cfg.page_size, "desc.page_size");
  require_extent(kv.k_cache, "paged_kv.k_cache", 2, cfg.num_heads_kv, "num_heads_kv");
  require_extent(kv.k_cache, "paged_kv.k_cache", 3, cfg.head_dim, "head_dim");
  require_extent(kv.v_cache, "paged_kv.v_cache", 0, pk.num_pages, "paged_kv.k_cache's page count");
  require_extent(kv.v_cache, "paged_kv.v_cache", 1, cfg.page_size, "desc.page_size");
  require_extent(kv.v_cache, "paged_kv.v_cache", 2, cfg.num_heads_kv, "num_heads_kv");
  require_extent(kv.v_cache, "paged_kv.v_cache", 3, cfg.head_dim_v, "head_dim_v");
  // NOTE: a cache is an input here, but fp8attn_kv_append_async() writes it: two tokens on one
  // address would make a page's contents depend on the order of the writes.
  require_no_overlap(kv.k_cache, "paged_kv.k_cache");
  require_no_overlap(kv.v_cache, "paged_kv.v_cache");

  check_tensor(kv.block_table, "paged_kv.block_table", {2, FP8ATTN_DTYPE_I32, device, false});
  require_extent(kv.block_table, "paged_kv.block_table", 0, p->batch, "batch");
  pk.max_pages_per_seq = kv.block_table.shape[1];
  pk.block_table = static_cast<const int32_t*>(kv.block_table.data);
  pk.table_batch_stride = kv.block_table.stride[0];
  pk.table_page_stride = kv.block_table.stride[1];
  check_tensor(kv.seqused_k, "paged_kv.seqused_k", {1, FP8ATTN_DTYPE_I32, device, false});
  require_extent(kv.seqused_k, "paged_kv.seqused_k", 0, p->batch, "batch");
  pk.seqused_k = static_cast<const int32_t*>(kv.seqused_k.data);
  pk.seqused_stride = kv.seqused_k.stride[0];
  FP8ATTN_REQUIRE(kv.max_seqlen_k >= 0 && kv.max_seqlen_k <= FP8ATTN_MAX_SEQLEN, FP8ATTN_STATUS_BAD_SHAPE,
                  "paged_kv.max_seqlen_k must be in [0, FP8ATTN_MAX_SEQLEN = 2^30], got " +
                      std::to_string(kv.max_seqlen_k));
  p->max_seqlen_k = kv.max_seqlen_k;
  p->padded_seqlen_k = 0;
  p->total_k = 0;
  p->cu_seqlens_k = nullptr;
  p->k = {kv.k_cache.data, kv.k_cache.dtype, kv.k_cache.stride[0], kv.k_cache.stride[1], kv.k_cache.stride[2],
          kv.k_cache.stride[3]};
  p->v = {kv.v_cache.data, kv.v_cache.dtype, kv.v_cache.stride[0], kv.v_cache.stride[1], kv.v_cache.stride[2],
          kv.v_cache.stride[3]};

  const bool host = device == FP8ATTN_DEVICE_HOST;
  if (host) {
    // NOTE: only the pages a sequence uses are read, so entries past them may hold anything
    // (vLLM pads its block tables with stale or −1 entries).
    for (int64_t b = 0; b < p->batch; ++b) {
      const int64_t used = pk.seqused_k[b * pk.seqused_stride];
      FP8ATTN_REQUIRE(used >= 0 && used <= kv.max_seqlen_k, FP8ATTN_STATUS_BAD_SEQLENS,
                      "paged_kv.seqused_k[" + std::to_string(b) + "] = " + std::to_string(used) +
                          " is outside [0, paged_kv.max_seqlen_k = " + std::to_string(kv.max_seqlen_k) + "]");
      const int64_t pages = ceil_div(used, pk.page_size);
      FP8ATTN_REQUIRE(pages <= pk.max_pages_per_seq, FP8ATTN_STATUS_BAD_SEQLENS,
                      "paged_kv.seqused_k[" + std::to_string(b) + "] = " + std::to_string(used) + " needs " +
                          std::to_string(pages) + " pages of " + std::to_string(pk.page_size) +
                          ", but the block table has " + std::to_string(pk.max_pages_per_seq) + " per sequence");
      for (int64_t i = 0; i < pages; ++i) {
        const int64_t page = pk.block_table[b * pk.table_batch_stride + i * pk.table_page_stride];
        FP8ATTN_REQUIRE(page >= 0 && page < pk.num_pages, FP8ATTN_STATUS_INVALID_ARGUMENT,
                        "paged_kv.block_table" + at2(b, i) + " = " + std::to_string(page) +
                            " is outside [0, num_pages = " + std::to_string(pk.num_pages) + ")");
      }
    }
  }

  const int32_t g = kv.scale_granularity;
  FP8ATTN_REQUIRE(g == FP8ATTN_KV_SCALE_NONE || g == FP8ATTN_KV_SCALE_PER_HEAD || g == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD,
                  FP8ATTN_STATUS_BAD_OPTION,
                  "paged_kv.scale_granularity must be FP8ATTN_KV_SCALE_NONE, _PER_HEAD or _PER_TOKEN_HEAD, got " +
                      std::to_string(g));
  pk.scale_granularity = g;
  if (g == FP8ATTN_KV_SCALE_NONE) {
    FP8ATTN_REQUIRE(kv.k_descale.data == nullptr && kv.v_descale.data == nullptr, FP8ATTN_STATUS_BAD_OPTION,
                    "paged_kv.k_descale or v_descale is set but paged_kv.scale_granularity is NONE: set the "
                    "granularity they have (PER_HEAD or PER_TOKEN_HEAD), or pass args.k_descale/v_descale");
    return;
  }
  FP8ATTN_REQUIRE(cfg.kv_dtype == FP8ATTN_DTYPE_E4M3, FP8ATTN_STATUS_BAD_OPTION,
                  "paged_kv.scale_granularity is set but the cache is " + dtype_name(cfg.kv_dtype) +
                      ": scale caches go with an E4M3 cache");
  FP8ATTN_REQUIRE(a.k_descale.data == nullptr && a.v_descale.data == nullptr, FP8ATTN_STATUS_BAD_OPTION,
                  "args.k_descale/v_descale and paged_kv.scale_granularity are both set: with a scale granularity "
                  "K's and V's descales come from paged_kv.k_descale and v_descale only");
  pk.k_scale = read_scale_cache(kv.k_descale, "paged_kv.k_descale", g, pk, cfg.num_heads_kv, device);
  pk.v_scale = read_scale_cache(kv.v_descale, "paged_kv.v_descale", g, pk, cfg.num_heads_kv, device);
  if (g == FP8ATTN_KV_SCALE_PER_HEAD || !host) return;
  // PER_TOKEN_HEAD: the descales of the tokens in use, through the block table.
  pk.k_scale.largest = pk.v_scale.largest = 0.0f;
  for (int64_t b = 0; b < p->batch; ++b) {
    const int64_t used = pk.seqused_k[b * pk.seqused_stride];
    for (int64_t j = 0; j < used; ++j) {
      const int64_t page = pk.page(b, j), token = j % pk.page_size;
      for (int h = 0; h < cfg.num_heads_kv; ++h) {
        const float k = pk.k_scale.at(page, token, h), v = pk.v_scale.at(page, token, h);
        require_descale(k, "paged_kv.k_descale", {page, token, h});
        require_descale(v, "paged_kv.v_descale", {page, token, h});
        pk.k_scale.largest = std::max(pk.k_scale.largest, k);
        pk.v_scale.largest = std::max(pk.v_scale.largest, v);
      }
    }
  }
  if (pk.k_scale.largest == 0.0f) pk.k_scale.largest = pk.v_scale.largest = 1.0f;  // no token in use
}

void apply_paged_descales(AttentionProblem* p) {
  // NOTE: a per-head descale is the per-sequence one with a batch stride of 0: the engine, the
  // oracle and the range checks read it as they read args.k_descale.
  if (p->paged.scale_granularity != FP8ATTN_KV_SCALE_PER_HEAD) return;
  p->k_descale = {p->paged.k_scale.data, 0, p->paged.k_scale.head_stride};
  p->v_descale = {p->paged.v_scale.data, 0, p->paged.v_scale.head_stride};
}

}  // namespace fp8attn
