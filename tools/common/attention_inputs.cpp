#include "tools/common/attention_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/kv_schedule.hpp"

namespace fp8attn::workloads {
namespace {

size_t elements(const AttentionShape& s, int64_t seqlen, int heads, int dim) {
  return static_cast<size_t>(s.batch * seqlen * heads * dim);
}

AttentionInputs allocate(const AttentionShape& s) {
  AttentionInputs in;
  in.shape = s;
  in.q.resize(elements(s, s.seqlen_q, s.heads_q, s.head_dim));
  in.k.resize(elements(s, s.seqlen_k, s.heads_kv, s.head_dim));
  in.v.resize(elements(s, s.seqlen_k, s.heads_kv, s.head_dim));
  return in;
}

/// Indices of one tensor that belong to (b, kv head g): for Q, the query heads of group g.
template <class F>
void for_slice(const AttentionShape& s, int64_t seqlen, int heads, int group_size, int64_t b, int g, F&& f) {
  for (int64_t t = 0; t < seqlen; ++t)
    for (int h = g * group_size; h < (g + 1) * group_size; ++h)
      for (int e = 0; e < s.head_dim; ++e) f(((b * seqlen + t) * heads + h) * s.head_dim + e);
}

void quantize_tensor(const std::vector<float>& x, std::vector<uint8_t>& out, std::vector<float>& descale,
                     const AttentionShape& s, int64_t seqlen, int heads, int group_size, int32_t dtype,
                     ScaleGranularity granularity) {
  const size_t esize = dtype == FP8ATTN_DTYPE_E4M3 ? 1 : 2;
  out.resize(x.size() * esize);
  descale.assign(static_cast<size_t>(s.batch * s.heads_kv), 1.0f);
  if (dtype == FP8ATTN_DTYPE_E4M3 && granularity != ScaleGranularity::Unit) {
    float global_amax = 0.0f;
    for (float v : x) global_amax = std::max(global_amax, std::fabs(v));
    for (int64_t b = 0; b < s.batch; ++b)
      for (int g = 0; g < s.heads_kv; ++g) {
        float amax = 0.0f;
        if (granularity == ScaleGranularity::PerHead)
          for_slice(s, seqlen, heads, group_size, b, g, [&](size_t i) { amax = std::max(amax, std::fabs(x[i])); });
        else
          amax = global_amax;
        descale[b * s.heads_kv + g] = amax > 0.0f ? amax / num::kE4M3Max : 1.0f;
      }
  }
  for (int64_t b = 0; b < s.batch; ++b)
    for (int g = 0; g < s.heads_kv; ++g) {
      const float scale = 1.0f / descale[b * s.heads_kv + g];
      for_slice(s, seqlen, heads, group_size, b, g, [&](size_t i) {
        if (dtype == FP8ATTN_DTYPE_E4M3) {
          out[i] = num::float_to_e4m3(x[i] * scale);
        } else {
          const uint16_t h = num::float_to_bf16(x[i]);
          out[2 * i] = static_cast<uint8_t>(h & 0xFF);
          out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        }
      });
    }
}

std::vector<double> dequantize_tensor(const std::vector<uint8_t>& bytes, const std::vector<float>& descale,
                                      const AttentionShape& s, int64_t seqlen, int heads, int group_size, int32_t dtype) {
  std::vector<double> out(static_cast<size_t>(s.batch * seqlen * heads * s.head_dim));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int g = 0; g < s.heads_kv; ++g) {
      const double d = descale[b * s.heads_kv + g];
      for_slice(s, seqlen, heads, group_size, b, g, [&](size_t i) {
        const float v = dtype == FP8ATTN_DTYPE_E4M3
                            ? num::e4m3_to_float(bytes[i])
                            : num::bf16_to_float(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
        out[i] = d * v;
      });
    }
  return out;
}

}  // namespace

AttentionInputs normal_inputs(const AttentionShape& s, uint64_t seed, float stddev) {
  AttentionInputs in = allocate(s);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, stddev);
  for (auto* t : {&in.q, &in.k, &in.v})
    for (float& x : *t) x = n(rng);
  return in;
}

AttentionInputs outlier_inputs(const AttentionShape& s, uint64_t seed) {
  AttentionInputs in = allocate(s);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> base(0.0f, 1.0f), outlier(0.0f, 10.0f);  // N(0,100): stddev 10
  std::bernoulli_distribution rare(0.001);
  for (auto* t : {&in.q, &in.k, &in.v})
    for (float& x : *t) x = base(rng) + (rare(rng) ? outlier(rng) : 0.0f);
  return in;
}

SinkInputs sink_inputs(const AttentionShape& s, uint64_t seed, int k_sink, double delta, float softmax_scale) {
  AttentionInputs in = allocate(s);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  const int d = s.head_dim;
  // K's dimension 0 and Q's are both E4M3 values; pick the pair whose product realizes Δ most
  // closely (E4M3 has 3 mantissa bits, so a fixed key value could miss Δ by up to 6 %).
  float sink_key_value = 8.0f, best_error = INFINITY;
  for (int bits = 0x40; bits <= 0x58; ++bits) {  // E4M3 values 4 … 16
    const float k0 = num::e4m3_to_float(static_cast<uint8_t>(bits));
    const float q0 = num::round_to_e4m3(static_cast<float>(delta / (k0 * softmax_scale)));
    const float error = std::fabs(static_cast<float>(q0 * k0 * softmax_scale - delta));
    if (error < best_error) best_error = error, sink_key_value = k0;
  }
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < s.seqlen_k; ++j)
      for (int h = 0; h < s.heads_kv; ++h) {
        float* k = &in.k[((b * s.seqlen_k + j) * s.heads_kv + h) * d];
        float* v = &in.v[((b * s.seqlen_k + j) * s.heads_kv + h) * d];
        k[0] = j < k_sink ? sink_key_value : 0.0f;
        // NOTE: each key's random part has norm exactly √(d−1), so that for every key the logit
        // z over random unit queries has variance exactly 1; with raw N(0, I) rows a sink key's
        // norm (fixed for all rows) would shift the sink maximum by several percent per seed.
        double norm2 = 0.0;
        std::vector<double> g(d);
        for (int e = 1; e < d; ++e) {
          g[e] = n(rng);
          norm2 += g[e] * g[e];
        }
        const double to_unit_variance = std::sqrt((d - 1) / norm2);
        for (int e = 1; e < d; ++e) k[e] = static_cast<float>(g[e] * to_unit_variance);
        for (int e = 0; e < d; ++e) v[e] = static_cast<float>(n(rng));
      }
  const float q0 = num::round_to_e4m3(static_cast<float>(delta / (sink_key_value * softmax_scale)));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.seqlen_q; ++i)
      for (int h = 0; h < s.heads_q; ++h) {
        float* q = &in.q[((b * s.seqlen_q + i) * s.heads_q + h) * d];
        double norm2 = 0.0;
        std::vector<double> u(d);
        for (int e = 1; e < d; ++e) {
          u[e] = n(rng);
          norm2 += u[e] * u[e];
        }
        const double r = 1.0 / (std::sqrt(norm2) * softmax_scale);
        q[0] = q0;
        for (int e = 1; e < d; ++e) q[e] = static_cast<float>(u[e] * r);
      }
  return {std::move(in), static_cast<double>(q0) * sink_key_value * softmax_scale};
}

/// E4M3 with one scale per block of one head: [batch, heads, slots]. Blocks of `block` rows from
/// row 0, or, with `leading` > 0, rows [0, leading) and then blocks of `block` (sink isolation's
/// KV blocks, kernels/sm90/kv_schedule.hpp).
static void quantize_blocks(const std::vector<float>& x, std::vector<uint8_t>& out, std::vector<float>& block_descale,
                            const AttentionShape& s, int64_t seqlen, int heads, int block, int64_t leading) {
  const int64_t blocks = sm90::kv_descale_slots(seqlen, leading, block);
  out.resize(x.size());
  block_descale.assign(static_cast<size_t>(s.batch * heads * blocks), 1.0f);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int64_t n = 0; n < blocks; ++n) {
        const int64_t t0 = leading == 0 ? n * block : (n == 0 ? 0 : leading + (n - 1) * block);
        const int64_t t1 = std::min<int64_t>(seqlen, leading != 0 && n == 0 ? leading : t0 + block);
        auto index = [&](int64_t t, int e) { return static_cast<size_t>(((b * seqlen + t) * heads + h) * s.head_dim + e); };
        float amax = 0.0f;
        for (int64_t t = t0; t < t1; ++t)
          for (int e = 0; e < s.head_dim; ++e) amax = std::max(amax, std::fabs(x[index(t, e)]));
        const float descale = amax > 0.0f ? amax / num::kE4M3Max : 1.0f;
        block_descale[(b * heads + h) * blocks + n] = descale;
        for (int64_t t = t0; t < t1; ++t)
          for (int e = 0; e < s.head_dim; ++e) out[index(t, e)] = num::float_to_e4m3(x[index(t, e)] / descale);
      }
}

QuantizedInputs quantize(const AttentionInputs& in, int32_t dtype, ScaleGranularity granularity, int block_m,
                         int block_n, int64_t sink_tokens) {
  const AttentionShape& s = in.shape;
  QuantizedInputs out;
  out.dtype = dtype;
  if (granularity == ScaleGranularity::PerBlock) {
    out.q_descale.assign(static_cast<size_t>(s.batch * s.heads_kv), 1.0f);
    out.k_descale = out.v_descale = out.q_descale;
    quantize_blocks(in.q, out.q, out.q_block_descale, s, s.seqlen_q, s.heads_q, block_m, 0);
    quantize_blocks(in.k, out.k, out.k_block_descale, s, s.seqlen_k, s.heads_kv, block_n, sink_tokens);
    quantize_blocks(in.v, out.v, out.v_block_descale, s, s.seqlen_k, s.heads_kv, block_n, sink_tokens);
    out.q_blocks = (s.seqlen_q + block_m - 1) / block_m;
    out.kv_blocks = sm90::kv_descale_slots(s.seqlen_k, sink_tokens, block_n);
    out.block_m = block_m;
    out.block_n = block_n;
    out.kv_leading = sink_tokens;
    return out;
  }
  const int group = s.heads_q / s.heads_kv;
  quantize_tensor(in.q, out.q, out.q_descale, s, s.seqlen_q, s.heads_q, group, dtype, granularity);
  quantize_tensor(in.k, out.k, out.k_descale, s, s.seqlen_k, s.heads_kv, 1, dtype, granularity);
  quantize_tensor(in.v, out.v, out.v_descale, s, s.seqlen_k, s.heads_kv, 1, dtype, granularity);
  return out;
}

DequantizedInputs dequantize(const AttentionInputs& in, const QuantizedInputs& qi) {
  const AttentionShape& s = in.shape;
  const int group = s.heads_q / s.heads_kv;
  if (!qi.q_block_descale.empty()) {
    auto blocks = [&](const std::vector<uint8_t>& bytes, const std::vector<float>& bd, int64_t seqlen, int heads,
                      int64_t nblocks, int block, int64_t leading) {
      std::vector<double> out(bytes.size());
      for (size_t i = 0; i < bytes.size(); ++i) {
        const int64_t e_h = static_cast<int64_t>(i) / s.head_dim;
        const int64_t h = e_h % heads, t = (e_h / heads) % seqlen, b = e_h / heads / seqlen;
        const int64_t slot = sm90::kv_descale_slot(t, leading, block);
        out[i] = num::e4m3_to_float(bytes[i]) * static_cast<double>(bd[(b * heads + h) * nblocks + slot]);
      }
      return out;
    };
    return {blocks(qi.q, qi.q_block_descale, s.seqlen_q, s.heads_q, qi.q_blocks, qi.block_m, 0),
            blocks(qi.k, qi.k_block_descale, s.seqlen_k, s.heads_kv, qi.kv_blocks, qi.block_n, qi.kv_leading),
            blocks(qi.v, qi.v_block_descale, s.seqlen_k, s.heads_kv, qi.kv_blocks, qi.block_n, qi.kv_leading)};
  }
  return {dequantize_tensor(qi.q, qi.q_descale, s, s.seqlen_q, s.heads_q, group, qi.dtype),
          dequantize_tensor(qi.k, qi.k_descale, s, s.seqlen_k, s.heads_kv, 1, qi.dtype),
          dequantize_tensor(qi.v, qi.v_descale, s, s.seqlen_k, s.heads_kv, 1, qi.dtype)};
}

}  // namespace fp8attn::workloads
