// Shared pieces of the KV append tests: a random problem (fresh inputs, a permutation of slots
// with padding, caches poisoned with NaN bits), a call through the C ABI on any backend, and a
// reference written from the header's definition, one element at a time.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "tests/common/host_api_support.hpp"

namespace fp8attn::kv_testing {

using api_testing::Context;
using api_testing::make_tensor;
using api_testing::test_seed;

struct Shape {
  int64_t tokens = 5, heads = 2, dim = 64, dim_v = 64, num_pages = 3, page_size = 4;
  int32_t in_dtype = FP8ATTN_DTYPE_F32, cache_dtype = FP8ATTN_DTYPE_E4M3;
  int32_t granularity = FP8ATTN_KV_SCALE_NONE;
  bool rotate = false;
  int64_t pad = 3;  ///< extra elements between input tokens (a strided view)
};

inline size_t elem_size(int32_t dtype) {
  return dtype == FP8ATTN_DTYPE_F32 ? 4 : dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1;
}

/// One append: inputs (values exact in the input dtype), slots and poisoned outputs.
struct Problem {
  Shape s;
  uint64_t rotation_seed = 0;
  std::vector<float> k_values, v_values;  ///< [tokens, heads, dim] logical values
  std::vector<uint8_t> k_in, v_in;        ///< the input tensors' bytes (token stride padded)
  std::vector<int64_t> slots;
  std::vector<uint8_t> k_cache, v_cache;  ///< poisoned with 0xFF (NaN in E4M3 and BF16)
  std::vector<float> k_descale, v_descale;  ///< PER_HEAD: [heads] read; PER_TOKEN_HEAD: poisoned NaN

  int64_t in_token_stride(int64_t dim) const { return s.heads * dim + s.pad; }
  int64_t slots_total() const { return s.num_pages * s.page_size; }
};

inline float random_value(std::mt19937_64& rng, int32_t dtype) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (dtype == FP8ATTN_DTYPE_E4M3) {
    uint8_t b;
    do b = static_cast<uint8_t>(rng()); while ((b & 0x7F) == 0x7F);  // no NaN
    return num::e4m3_to_float(b);
  }
  // NOTE: a log-uniform magnitude spread over 2^-8 .. 2^6, so rows have varied amaxes and some
  // elements land in E4M3's subnormals after scaling.
  const float v = normal(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 15) - 8);
  return dtype == FP8ATTN_DTYPE_BF16 ? num::round_to_bf16(v) : v;
}

inline void store_input(std::vector<uint8_t>& bytes, int32_t dtype, size_t index, float v) {
  if (dtype == FP8ATTN_DTYPE_F32) std::memcpy(&bytes[index * 4], &v, 4);
  else if (dtype == FP8ATTN_DTYPE_BF16) {
    const uint16_t b = num::float_to_bf16(v);
    std::memcpy(&bytes[index * 2], &b, 2);
  } else bytes[index] = num::float_to_e4m3(v);
}

inline Problem make_problem(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem p;
  p.s = s;
  p.rotation_seed = rng();
  auto fill = [&](int64_t dim, std::vector<float>& values, std::vector<uint8_t>& bytes) {
    values.resize(static_cast<size_t>(s.tokens * s.heads * dim));
    bytes.assign(static_cast<size_t>(std::max<int64_t>(1, s.tokens * p.in_token_stride(dim))) * elem_size(s.in_dtype), 0xA5);
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t i = 0; i < s.heads * dim; ++i) {
        const float v = random_value(rng, s.in_dtype);
        values[static_cast<size_t>(t * s.heads * dim + i)] = v;
        store_input(bytes, s.in_dtype, static_cast<size_t>(t * p.in_token_stride(dim) + i), v);
      }
  };
  fill(s.dim, p.k_values, p.k_in);
  fill(s.dim_v, p.v_values, p.v_in);
  // A random permutation of the slots; about one token in five is padding (a negative slot).
  std::vector<int64_t> all(static_cast<size_t>(p.slots_total()));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  for (int64_t t = 0; t < s.tokens; ++t)
    p.slots.push_back(rng() % 5 == 0 ? -1 - static_cast<int64_t>(rng() % 1000) : all[static_cast<size_t>(t)]);
  const size_t cache_elems = static_cast<size_t>(p.slots_total() * s.heads);
  p.k_cache.assign(cache_elems * static_cast<size_t>(s.dim) * elem_size(s.cache_dtype), 0xFF);
  p.v_cache.assign(cache_elems * static_cast<size_t>(s.dim_v) * elem_size(s.cache_dtype), 0xFF);
  if (s.granularity == FP8ATTN_KV_SCALE_PER_HEAD) {
    // NOTE: a layer descale of (largest row L2 norm of the head) / 448 times 1 .. 1.5: no element,
    // rotated or not (|rotated element| ≤ the row's L2 norm), saturates.
    std::uniform_real_distribution<float> u(1.0f, 1.5f);
    auto layer_descale = [&](const std::vector<float>& values, int64_t dim, int64_t h) {
      double largest = 0.0;
      for (int64_t t = 0; t < s.tokens; ++t) {
        double n2 = 0.0;
        for (int64_t e = 0; e < dim; ++e) n2 += std::pow(values[static_cast<size_t>((t * s.heads + h) * dim + e)], 2);
        largest = std::max(largest, std::sqrt(n2));
      }
      return largest > 0.0 ? static_cast<float>(largest / 448.0) * u(rng) : 1.0f;
    };
    for (int64_t h = 0; h < s.heads; ++h)
      p.k_descale.push_back(layer_descale(p.k_values, s.dim, h)), p.v_descale.push_back(layer_descale(p.v_values, s.dim_v, h));
  } else if (s.granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD) {
    p.k_descale.assign(cache_elems, std::nanf("7"));
    p.v_descale.assign(cache_elems, std::nanf("7"));
  }
  return p;
}

/// The call's arguments over the problem's buffers.
inline fp8attn_kv_append_args make_args(Problem& p) {
  const Shape& s = p.s;
  fp8attn_kv_append_args a{};
  a.struct_size = sizeof a;
  a.k = make_tensor(p.k_in.data(), s.in_dtype, {s.tokens, s.heads, s.dim}, {p.in_token_stride(s.dim), s.dim, 1});
  a.v = make_tensor(p.v_in.data(), s.in_dtype, {s.tokens, s.heads, s.dim_v}, {p.in_token_stride(s.dim_v), s.dim_v, 1});
  a.k_cache = make_tensor(p.k_cache.data(), s.cache_dtype, {s.num_pages, s.page_size, s.heads, s.dim},
                          {s.page_size * s.heads * s.dim, s.heads * s.dim, s.dim, 1});
  a.v_cache = make_tensor(p.v_cache.data(), s.cache_dtype, {s.num_pages, s.page_size, s.heads, s.dim_v},
                          {s.page_size * s.heads * s.dim_v, s.heads * s.dim_v, s.dim_v, 1});
  a.slot_mapping = make_tensor(p.slots.data(), FP8ATTN_DTYPE_I64, {s.tokens}, {1});
  a.scale_granularity = s.granularity;
  a.rotate = s.rotate ? 1u : 0u;
  a.seed = p.rotation_seed;
  if (s.granularity == FP8ATTN_KV_SCALE_PER_HEAD) {
    a.k_descale = make_tensor(p.k_descale.data(), FP8ATTN_DTYPE_F32, {s.heads}, {1});
    a.v_descale = make_tensor(p.v_descale.data(), FP8ATTN_DTYPE_F32, {s.heads}, {1});
  } else if (s.granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD) {
    a.k_descale = make_tensor(p.k_descale.data(), FP8ATTN_DTYPE_F32, {s.num_pages, s.page_size, s.heads},
                              {s.page_size * s.heads, s.heads, 1});
    a.v_descale = make_tensor(p.v_descale.data(), FP8ATTN_DTYPE_F32, {s.num_pages, s.page_size, s.heads},
                              {s.page_size * s.heads, s.heads, 1});
  }
  return a;
}

inline int32_t append(fp8attn_context ctx, Problem& p, fp8attn_error* err = nullptr) {
  const fp8attn_kv_append_args a = make_args(p);
  return fp8attn_kv_append_async(ctx, &a, nullptr, err);
}

/// The bytes of every output, to compare two runs or a run with the untouched state.
inline std::vector<uint8_t> outputs(const Problem& p) {
  std::vector<uint8_t> all(p.k_cache);
  all.insert(all.end(), p.v_cache.begin(), p.v_cache.end());
  for (const auto* d : {&p.k_descale, &p.v_descale}) {
    const auto* b = reinterpret_cast<const uint8_t*>(d->data());
    all.insert(all.end(), b, b + d->size() * sizeof(float));
  }
  return all;
}

/// Checks the caches against the definition, element by element: written slots hold
/// cast(x / descale) (PER_HEAD, NONE), cast(x · 448/amax) with descale = amax/448's FP32 form
/// (PER_TOKEN_HEAD), BF16(x), or the E4M3 input's bits; K rotated first by quant::rotate_row;
/// every other slot keeps its poison. Returns the number of mismatches (reported, first ten).
inline int check_against_definition(const Problem& p) {
  const Shape& s = p.s;
  int bad = 0;
  auto report = [&](const char* what, int64_t t, int64_t h, int64_t e, double got, double want) {
    if (++bad <= 10) ADD_FAILURE() << what << " token " << t << " head " << h << " element " << e << ": " << got << " vs " << want;
  };
  std::vector<bool> written(static_cast<size_t>(p.slots_total()), false);
  for (int side = 0; side < 2; ++side) {
    const bool is_k = side == 0;
    const int64_t dim = is_k ? s.dim : s.dim_v;
    const std::vector<float>& values = is_k ? p.k_values : p.v_values;
    const std::vector<uint8_t>& cache = is_k ? p.k_cache : p.v_cache;
    const std::vector<float>& descale = is_k ? p.k_descale : p.v_descale;
    for (int64_t t = 0; t < s.tokens; ++t) {
      const int64_t slot = p.slots[static_cast<size_t>(t)];
      if (slot < 0) continue;
      written[static_cast<size_t>(slot)] = true;
      for (int64_t h = 0; h < s.heads; ++h) {
        std::vector<float> x(values.begin() + (t * s.heads + h) * dim, values.begin() + (t * s.heads + h + 1) * dim);
        if (is_k && s.rotate) quant::rotate_row(x.data(), quant::exact_log2(dim), p.rotation_seed);
        const size_t row = static_cast<size_t>((slot * s.heads + h) * dim);
        if (s.cache_dtype == FP8ATTN_DTYPE_BF16) {
          for (int64_t e = 0; e < dim; ++e) {
            uint16_t got;
            std::memcpy(&got, &cache[(row + e) * 2], 2);
            if (got != num::float_to_bf16(x[e])) report("BF16", t, h, e, num::bf16_to_float(got), x[e]);
          }
          continue;
        }
        if (s.in_dtype == FP8ATTN_DTYPE_E4M3) {
          for (int64_t e = 0; e < dim; ++e)
            if (cache[row + e] != num::float_to_e4m3(x[e])) report("E4M3 copy", t, h, e, cache[row + e], x[e]);
          continue;
        }
        float mul = 1.0f, div = 1.0f;
        if (s.granularity == FP8ATTN_KV_SCALE_PER_HEAD) div = descale[static_cast<size_t>(h)];
        if (s.granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD) {
          float amax = 0.0f;
          for (float v : x) amax = std::max(amax, std::fabs(v));
          mul = amax > 0.0f ? 448.0f / amax : 1.0f;
          const float got = descale[static_cast<size_t>(slot * s.heads + h)];
          if (!(got == 1.0f / mul)) report("descale", t, h, -1, got, 1.0f / mul);
        }
        for (int64_t e = 0; e < dim; ++e) {
          const uint8_t want = num::float_to_e4m3(s.granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD ? x[e] * mul : x[e] / div);
          if (cache[row + e] != want) report("E4M3", t, h, e, num::e4m3_to_float(cache[row + e]), num::e4m3_to_float(want));
        }
      }
    }
    // Untouched slots keep their poison, in the caches and the scale caches.
    for (int64_t slot = 0; slot < p.slots_total(); ++slot) {
      if (written[static_cast<size_t>(slot)]) continue;
      const size_t bytes = static_cast<size_t>(s.heads * dim) * elem_size(s.cache_dtype);
      for (size_t i = 0; i < bytes; ++i)
        if (cache[static_cast<size_t>(slot) * bytes + i] != 0xFF) {
          report("poison", -1, -1, slot, cache[static_cast<size_t>(slot) * bytes + i], 0xFF);
          break;
        }
      if (s.granularity == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD)
        for (int64_t h = 0; h < s.heads; ++h)
          if (!std::isnan(descale[static_cast<size_t>(slot * s.heads + h)])) report("descale poison", -1, h, slot, 0, 0);
    }
  }
  return bad;
}

}  // namespace fp8attn::kv_testing
