// libFuzzer target: fp8attn_kv_append_async with fuzzed dtypes, shapes, strides, slots (padding,
// slots past the cache, INT64_MAX), granularities, rotation and descale and input values (NaN and
// infinities included), and aliasing between the outputs. Invariants: a refused call leaves every
// output untouched; a successful call writes only the slots the mapping names (checked where the
// caches are dense), and every per-(token, head) descale it writes is > 0.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {
constexpr int64_t kElems = 1 << 14;   // elements of each input buffer (F32 at most)
constexpr int64_t kCache = 1 << 15;   // bytes of each cache buffer
constexpr int64_t kScales = 2048;     // floats of each descale buffer

void dense(fp8attn_tensor& t) {
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.stride[i] = stride;
    stride = next_dense_stride(stride, t.shape[i]);
  }
}

int64_t elem_bytes(int32_t dtype) { return dtype == FP8ATTN_DTYPE_F32 ? 4 : dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const int32_t in_dtypes[] = {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F16, 99};
  const int32_t cache_dtypes[] = {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32};
  const int32_t in_dtype = in_dtypes[r.pick(5) % 5 == 4 ? 4 : r.pick(3)];
  const int32_t cache_dtype = cache_dtypes[r.pick(8) == 0 ? 2 : r.pick(2)];
  fp8attn_kv_append_args a{};
  a.struct_size = r.pick(16) == 0 ? r.pick(400) : sizeof a;
  a.scale_granularity = static_cast<int32_t>(r.pick(4)) - (r.pick(16) == 0 ? 2 : 0);
  a.rotate = r.pick(4) == 0 ? 1u : r.pick(32) == 0 ? 2u : 0u;
  a.seed = r.take<uint64_t>();

  const int64_t dims[] = {64, 128, 16, 3, 256, 512, 1, 32};
  const int64_t tokens = r.extent(12), heads = 1 + r.pick(4);
  const int64_t dim = r.pick(8) == 0 ? r.extent(64) : dims[r.pick(8)];
  const int64_t dim_v = r.pick(2) == 0 ? dim : dims[r.pick(8)];
  const int64_t pages = r.extent(6), page_size = r.extent(8);

  std::vector<uint8_t> k(kElems * 4), v(kElems * 4);
  for (std::vector<uint8_t>* in : {&k, &v})
    for (int64_t i = 0; i < kElems; ++i) {
      const float x = r.number();
      std::memcpy(&(*in)[static_cast<size_t>(i) * 4], &x, 4);  // BF16 and E4M3 read these bytes as theirs
    }
  std::vector<int64_t> slots(64);
  for (int64_t& s : slots) {
    const uint32_t mode = r.pick(16);
    s = mode < 12 ? static_cast<int64_t>(r.pick(64)) : mode < 14 ? -1 - static_cast<int64_t>(r.pick(5)) : r.extent(64);
  }
  std::vector<uint8_t> kc(kCache, 0xA5), vc(kCache, 0x5A);
  std::vector<float> kd(kScales), vd(kScales);
  for (float& d : kd) d = r.number();
  for (float& d : vd) d = r.number();

  a.k = tensor(k.data(), in_dtype, 3);
  a.v = tensor(v.data(), r.pick(32) == 0 ? FP8ATTN_DTYPE_F32 : in_dtype, 3);
  a.k_cache = tensor(kc.data(), cache_dtype, 4);
  a.v_cache = tensor(vc.data(), cache_dtype, 4);
  a.slot_mapping = tensor(slots.data(), r.pick(16) == 0 ? FP8ATTN_DTYPE_I32 : FP8ATTN_DTYPE_I64, 1);
  const int64_t kshape[] = {tokens, heads, dim}, vshape[] = {tokens, heads, dim_v};
  const int64_t kcshape[] = {pages, page_size, heads, dim}, vcshape[] = {pages, page_size, heads, dim_v};
  for (int i = 0; i < 3; ++i) a.k.shape[i] = kshape[i], a.v.shape[i] = vshape[i];
  for (int i = 0; i < 4; ++i) a.k_cache.shape[i] = kcshape[i], a.v_cache.shape[i] = vcshape[i];
  a.slot_mapping.shape[0] = tokens;
  const bool token_scales = r.pick(2) == 0;
  a.k_descale = tensor(kd.data(), FP8ATTN_DTYPE_F32, token_scales ? 3 : 1);
  a.v_descale = tensor(vd.data(), FP8ATTN_DTYPE_F32, token_scales ? 3 : 1);
  for (fp8attn_tensor* d : {&a.k_descale, &a.v_descale}) {
    if (token_scales) d->shape[0] = pages, d->shape[1] = page_size, d->shape[2] = heads;
    else d->shape[0] = heads;
  }
  fp8attn_tensor* all[] = {&a.k, &a.v, &a.k_cache, &a.v_cache, &a.slot_mapping, &a.k_descale, &a.v_descale};
  for (fp8attn_tensor* t : all) dense(*t);
  const bool dense_caches = r.pick(3) != 0;
  if (!dense_caches) {
    fp8attn_tensor* t = all[r.pick(7)];
    t->stride[r.pick(static_cast<uint32_t>(t->rank))] = r.extent(300);
  }
  switch (r.pick(24)) {  // aliasing: each must be refused
    case 0: a.v_cache.data = a.k_cache.data; break;
    case 1: a.k_descale.data = a.v_cache.data; break;
    case 2: a.slot_mapping.data = a.k_cache.data; break;
    case 3: a.k_cache.data = a.k.data; break;
    default: break;
  }
  if (r.pick(32) == 0) a.k_cache.data = nullptr;

  // Memory the harness owns: a descriptor beyond it is never handed to the library.
  const int64_t owned[] = {kElems * 4 / elem_bytes(a.k.dtype), kElems * 4 / elem_bytes(a.v.dtype),
                           kCache / elem_bytes(cache_dtype), kCache / elem_bytes(cache_dtype),
                           static_cast<int64_t>(slots.size()) * (a.slot_mapping.dtype == FP8ATTN_DTYPE_I32 ? 2 : 1),
                           kScales, kScales};
  bool must_refuse = false;
  for (int i = 0; i < 7; ++i) {
    const int64_t reach = reach_of(*all[i]);
    if (reach < 0) must_refuse = true;
    if (reach > owned[i]) return 0;
  }

  const std::vector<uint8_t> kc_before = kc, vc_before = vc;
  const std::vector<float> kd_before = kd, vd_before = vd;
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_kv_append_async(shared_context(), &a, nullptr, &err);
  if (must_refuse && s == FP8ATTN_OK) broken("a tensor whose reach overflows int64 was accepted", err);
  if (s != FP8ATTN_OK) {
    if (kc != kc_before || vc != vc_before || std::memcmp(kd.data(), kd_before.data(), kScales * 4) != 0 ||
        std::memcmp(vd.data(), vd_before.data(), kScales * 4) != 0)
      broken("a refused append wrote an output", err);
    return 0;
  }
  if (!dense_caches || a.k_cache.data != kc.data() || a.v_cache.data != vc.data() || a.k_descale.data != kd.data())
    return 0;
  std::set<int64_t> named;
  for (int64_t t = 0; t < tokens; ++t)
    if (slots[static_cast<size_t>(t)] >= 0) named.insert(slots[static_cast<size_t>(t)]);
  for (int side = 0; side < 2; ++side) {
    const std::vector<uint8_t>& cache = side == 0 ? kc : vc;
    const std::vector<uint8_t>& before = side == 0 ? kc_before : vc_before;
    const int64_t slot_bytes = heads * (side == 0 ? dim : dim_v) * elem_bytes(cache_dtype);
    for (int64_t slot = 0; slot < pages * page_size; ++slot)
      if (named.count(slot) == 0 &&
          !std::equal(cache.begin() + slot * slot_bytes, cache.begin() + (slot + 1) * slot_bytes, before.begin() + slot * slot_bytes))
        broken("an append wrote a slot the mapping does not name", err);
    if (std::equal(cache.begin() + pages * page_size * slot_bytes, cache.end(), before.begin() + pages * page_size * slot_bytes) == false)
      broken("an append wrote past the cache", err);
  }
  if (a.scale_granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD)
    for (const auto* d : {&kd, &vd})
      for (int64_t slot : named)
        for (int64_t h = 0; h < heads; ++h)
          if (!((*d)[static_cast<size_t>(slot * heads + h)] > 0.0f)) broken("a written descale is not > 0", err);
  return 0;
}
