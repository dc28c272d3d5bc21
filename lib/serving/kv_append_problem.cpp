#include "lib/serving/kv_append_problem.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor.hpp"
#include "lib/quantize/hadamard_rotation.hpp"

namespace fp8attn::serving {
namespace {

using sm90::kv::CacheType;
using sm90::kv::InputType;
using sm90::kv::KvAppendParams;
using sm90::kv::KvSide;
using sm90::kv::Scale;

/// The bytes a tensor's elements can touch, [begin, end); empty for a tensor with no element.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
};
ByteRange byte_range(const fp8attn_tensor& t, const char* what) {
  const int64_t reach = tensor_reach(t, what);
  if (reach < 0 || t.data == nullptr) return {};
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data);
  const size_t size = dtype_size(t.dtype, what);
  return {begin, begin + (static_cast<uintptr_t>(reach) + 1) * size};
}

/// NOTE: by address ranges, not by elements: an output must not share a byte with another
/// tensor of the call, whatever its layout (the caches are written by many threads at once).
void require_apart(const fp8attn_tensor& out, const char* out_name, const fp8attn_tensor& other, const char* other_name) {
  const ByteRange a = byte_range(out, out_name), b = byte_range(other, other_name);
  if (a.begin == a.end || b.begin == b.end) return;
  FP8ATTN_REQUIRE(a.end <= b.begin || b.end <= a.begin, FP8ATTN_STATUS_BAD_STRIDE,
                  std::string(out_name) + " overlaps " + other_name + " (their address ranges intersect)");
}

InputType input_type(int32_t dtype) {
  switch (dtype) {
    case FP8ATTN_DTYPE_F32: return InputType::F32;
    case FP8ATTN_DTYPE_BF16: return InputType::BF16;
    case FP8ATTN_DTYPE_E4M3: return InputType::E4M3;
    default:
      throw Error(FP8ATTN_STATUS_BAD_DTYPE, "args->k has dtype " + dtype_name(dtype) + "; the KV append takes BF16, F32 or E4M3");
  }
}

void copy_strides(const fp8attn_tensor& t, int64_t* out) {
  for (int i = 0; i < t.rank; ++i) out[i] = t.stride[i];
}

/// K or V: the new rows [tokens, heads, dim] and the cache [num_pages, page_size, heads, dim].
KvSide check_side(const fp8attn_tensor& in, const fp8attn_tensor& cache, const char* in_name, const char* cache_name,
                  int32_t device) {
  check_tensor(in, in_name, {3, 0, device, false});
  check_tensor(cache, cache_name, {4, 0, device, false});
  require_no_overlap(cache, cache_name);
  KvSide s;
  s.input = in.data;
  s.cache = cache.data;
  copy_strides(in, s.in_stride);
  copy_strides(cache, s.cache_stride);
  s.dim = in.shape[2];
  require_extent(cache, cache_name, 3, s.dim, std::string(in_name) + "'s head_dim");
  require_extent(cache, cache_name, 2, in.shape[1], std::string(in_name) + "'s heads_kv");
  return s;
}

/// PER_HEAD: F32 [heads], read; finite and > 0 where the host can read it.
void check_head_descales(const fp8attn_tensor& d, const char* what, int64_t heads, int32_t device, KvSide& s) {
  check_tensor(d, what, {1, FP8ATTN_DTYPE_F32, device, false});
  require_extent(d, what, 0, heads, "heads_kv");
  s.descale = static_cast<float*>(d.data);
  s.descale_stride[2] = d.stride[0];
  if (device != FP8ATTN_DEVICE_HOST) return;
  for (int64_t h = 0; h < heads; ++h) {
    const float v = s.descale[h * d.stride[0]];
    FP8ATTN_REQUIRE(std::isfinite(v) && v > 0.0f, FP8ATTN_STATUS_BAD_SCALE,
                    std::string(what) + "[" + std::to_string(h) + "] is " + std::to_string(v) +
                        "; a descale must be finite and > 0");
  }
}

/// PER_TOKEN_HEAD: F32 [num_pages, page_size, heads], written at the slots.
void check_token_descales(const fp8attn_tensor& d, const char* what, const fp8attn_tensor& cache, KvSide& s,
                          int32_t device) {
  check_tensor(d, what, {3, FP8ATTN_DTYPE_F32, device, false});
  for (int i = 0; i < 3; ++i) require_extent(d, what, i, cache.shape[i], "the cache's extent");
  require_no_overlap(d, what);
  s.descale = static_cast<float*>(d.data);
  copy_strides(d, s.descale_stride);
}

void check_slots(const KvAppendParams& p, const fp8attn_tensor& t, int32_t device) {
  if (device != FP8ATTN_DEVICE_HOST) return;  // the kernel skips what it cannot place
  const int64_t slots = sm90::kv::slot_count(p);
  for (int64_t i = 0; i < p.tokens; ++i) {
    const int64_t slot = p.slot_mapping[i * t.stride[0]];
    FP8ATTN_REQUIRE(slot < slots, FP8ATTN_STATUS_INVALID_ARGUMENT,
                    "args->slot_mapping[" + std::to_string(i) + "] is " + std::to_string(slot) + ", past the cache's " +
                        std::to_string(slots) + " slots (num_pages · page_size)");
  }
}

}  // namespace

KvAppendParams make_kv_append_params(const fp8attn_kv_append_args& a, int32_t device) {
  KvAppendParams p;
  p.k = check_side(a.k, a.k_cache, "args->k", "args->k_cache", device);
  p.v = check_side(a.v, a.v_cache, "args->v", "args->v_cache", device);
  p.input_type = input_type(a.k.dtype);
  FP8ATTN_REQUIRE(a.v.dtype == a.k.dtype, FP8ATTN_STATUS_BAD_DTYPE,
                  "args->v has dtype " + dtype_name(a.v.dtype) + ", args->k " + dtype_name(a.k.dtype) + "; they must agree");
  FP8ATTN_REQUIRE(a.k_cache.dtype == FP8ATTN_DTYPE_E4M3 || a.k_cache.dtype == FP8ATTN_DTYPE_BF16, FP8ATTN_STATUS_BAD_DTYPE,
                  "args->k_cache has dtype " + dtype_name(a.k_cache.dtype) + "; a paged cache is E4M3 or BF16");
  FP8ATTN_REQUIRE(a.v_cache.dtype == a.k_cache.dtype, FP8ATTN_STATUS_BAD_DTYPE,
                  "args->v_cache has dtype " + dtype_name(a.v_cache.dtype) + ", args->k_cache " +
                      dtype_name(a.k_cache.dtype) + "; they must agree");
  p.cache_type = a.k_cache.dtype == FP8ATTN_DTYPE_E4M3 ? CacheType::E4M3 : CacheType::BF16;
  FP8ATTN_REQUIRE(p.input_type != InputType::E4M3 || p.cache_type == CacheType::E4M3, FP8ATTN_STATUS_BAD_DTYPE,
                  "E4M3 input is copied as it is, so its cache must be E4M3, not BF16");

  // Shapes: tokens and heads from K; pages from K's cache.
  p.tokens = a.k.shape[0];
  p.heads = a.k.shape[1];
  require_extent(a.v, "args->v", 0, p.tokens, "args->k's tokens");
  require_extent(a.v, "args->v", 1, p.heads, "args->k's heads_kv");
  p.num_pages = a.k_cache.shape[0];
  p.page_size = a.k_cache.shape[1];
  FP8ATTN_REQUIRE(p.page_size >= 1, FP8ATTN_STATUS_BAD_SHAPE, "args->k_cache.shape[1] (page_size) must be ≥ 1, got 0");
  require_extent(a.v_cache, "args->v_cache", 0, p.num_pages, "args->k_cache's num_pages");
  require_extent(a.v_cache, "args->v_cache", 1, p.page_size, "args->k_cache's page_size");
  checked_mul(p.num_pages, p.page_size, "the cache's slots (num_pages · page_size)", FP8ATTN_STATUS_BAD_SHAPE);
  check_tensor(a.slot_mapping, "args->slot_mapping", {1, FP8ATTN_DTYPE_I64, device, false});
  require_extent(a.slot_mapping, "args->slot_mapping", 0, p.tokens, "args->k's tokens");
  p.slot_mapping = static_cast<const int64_t*>(a.slot_mapping.data);
  p.slot_stride = a.slot_mapping.stride[0];

  // Options.
  FP8ATTN_REQUIRE(a.scale_granularity >= FP8ATTN_KV_SCALE_NONE && a.scale_granularity <= FP8ATTN_KV_SCALE_PER_TOKEN_HEAD,
                  FP8ATTN_STATUS_BAD_OPTION, "args->scale_granularity is unknown: " + std::to_string(a.scale_granularity));
  p.scale = static_cast<Scale>(a.scale_granularity);
  FP8ATTN_REQUIRE(p.cache_type == CacheType::E4M3 || p.scale == Scale::None, FP8ATTN_STATUS_BAD_OPTION,
                  "a BF16 cache has no descales: args->scale_granularity must be FP8ATTN_KV_SCALE_NONE");
  FP8ATTN_REQUIRE(p.input_type != InputType::E4M3 || p.scale != Scale::PerTokenHead, FP8ATTN_STATUS_BAD_OPTION,
                  "E4M3 input is copied as it is: no per-(token, head) descale can be computed for it");
  FP8ATTN_REQUIRE(a.rotate <= 1, FP8ATTN_STATUS_BAD_OPTION, "args->rotate must be 0 or 1, got " + std::to_string(a.rotate));
  FP8ATTN_REQUIRE(a.rotate == 0 || p.input_type != InputType::E4M3, FP8ATTN_STATUS_BAD_OPTION,
                  "E4M3 input is copied as it is and cannot be rotated; rotate BF16 or F32 input");
  if (a.rotate == 1) {
    const int log2 = quant::exact_log2(p.k.dim);
    FP8ATTN_REQUIRE(log2 >= 0 && p.k.dim <= FP8ATTN_MAX_ROTATION_DIM, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
                    "rotation needs a power-of-two head_dim ≤ FP8ATTN_MAX_ROTATION_DIM = 256, got " +
                        std::to_string(p.k.dim));
    p.k.rotate = true;
    p.log2_head_dim = log2;
    p.seed = a.seed;
  }
  if (p.scale == Scale::PerHead) {
    check_head_descales(a.k_descale, "args->k_descale", p.heads, device, p.k);
    check_head_descales(a.v_descale, "args->v_descale", p.heads, device, p.v);
  } else if (p.scale == Scale::PerTokenHead) {
    check_token_descales(a.k_descale, "args->k_descale", a.k_cache, p.k, device);
    check_token_descales(a.v_descale, "args->v_descale", a.v_cache, p.v, device);
  }

  // Outputs apart from each other and from every input.
  const fp8attn_tensor* outs[] = {&a.k_cache, &a.v_cache, &a.k_descale, &a.v_descale};
  const char* out_names[] = {"args->k_cache", "args->v_cache", "args->k_descale", "args->v_descale"};
  const int n_outs = p.scale == Scale::PerTokenHead ? 4 : 2;
  const fp8attn_tensor* all[] = {&a.k, &a.v, &a.slot_mapping, &a.k_cache, &a.v_cache, &a.k_descale, &a.v_descale};
  const char* all_names[] = {"args->k",       "args->v",         "args->slot_mapping", "args->k_cache",
                             "args->v_cache", "args->k_descale", "args->v_descale"};
  const int n_all = p.scale == Scale::None ? 5 : 7;
  for (int i = 0; i < n_outs; ++i)
    for (int j = 0; j < n_all; ++j)
      if (all[j] != outs[i]) require_apart(*outs[i], out_names[i], *all[j], all_names[j]);
  check_slots(p, a.slot_mapping, device);
  return p;
}

}  // namespace fp8attn::serving
