#include "tools/fa3_table3/error_decomposition.hpp"

#include <cstdio>
#include <stdexcept>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/float8.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/host_tensor.hpp"
#include "tools/common/low_precision_reference.hpp"
#include "tools/fa3_table3/exact_attention.hpp"

namespace fp8attn::table3 {
namespace {

using workloads::dense_host_tensor;

/// x → E4M3 (per tensor, rotated when asked) → × descale, as floats; with `rotate_back`, each
/// head-dim row is then turned back into the original basis (D·H, in FP64).
std::vector<float> quantize_dequantize(fp8attn_context ctx, const std::vector<float>& x,
                                       const workloads::AttentionShape& s, int heads, bool rotate, uint64_t seed,
                                       bool rotate_back = false) {
  std::vector<uint8_t> bytes(x.size());
  float descale = 0.0f;
  const std::vector<int64_t> shape{s.batch, s.seqlen_q, heads, s.head_dim};
  const fp8attn_tensor in = dense_host_tensor(const_cast<float*>(x.data()), FP8ATTN_DTYPE_F32, shape);
  const fp8attn_tensor out = dense_host_tensor(bytes.data(), FP8ATTN_DTYPE_E4M3, shape);
  const fp8attn_tensor d = dense_host_tensor(&descale, FP8ATTN_DTYPE_F32, {1});
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  o.rotate = rotate ? 1u : 0u;
  o.seed = seed;
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_quantize(ctx, &in, nullptr, &o, &out, &d, nullptr, &err) != FP8ATTN_OK)
    throw std::runtime_error(std::string("fp8attn_quantize failed: ") + err.message);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = num::e4m3_to_float(bytes[i]) * descale;
  if (rotate_back) {
    const int log2_d = quant::exact_log2(s.head_dim);
    std::vector<double> row(static_cast<size_t>(s.head_dim));
    for (size_t r = 0; r < y.size(); r += row.size()) {
      for (size_t e = 0; e < row.size(); ++e) row[e] = y[r + e];
      quant::unrotate_row_f64(row.data(), log2_d, seed);
      for (size_t e = 0; e < row.size(); ++e) y[r + e] = static_cast<float>(row[e]);
    }
  }
  return y;
}

}  // namespace

std::vector<ErrorSource> decompose_fp8_error(const Table3Options& o) {
  const workloads::AttentionShape shape{o.batch, o.seqlen, o.seqlen, o.heads, o.heads, o.head_dim};
  const workloads::AttentionInputs inputs = workloads::outlier_inputs(shape, o.input_seed);
  const std::vector<float> oracle = exact_attention(inputs, o.threads);
  fp8attn_context ctx = nullptr;
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.num_threads = o.threads;
  co.backend = FP8ATTN_BACKEND_CPU;
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_context_create(&co, &ctx, &err) != FP8ATTN_OK)
    throw std::runtime_error(std::string("fp8attn_context_create failed: ") + err.message);
  std::vector<ErrorSource> sources;
  auto measure = [&](const char* what, bool qk, bool rotate, bool v, bool rotate_v = false) {
    workloads::AttentionInputs partly = inputs;
    if (qk) {
      partly.q = quantize_dequantize(ctx, inputs.q, shape, o.heads, rotate, o.rotation_seed);
      partly.k = quantize_dequantize(ctx, inputs.k, shape, o.heads, rotate, o.rotation_seed);
    }
    if (v) partly.v = quantize_dequantize(ctx, inputs.v, shape, o.heads, rotate_v, o.rotation_seed, rotate_v);
    sources.push_back({what, workloads::rmse(exact_attention(partly, o.threads), oracle)});
    std::fprintf(stderr, "  %-52s RMSE %.3e\n", what, sources.back().rmse);
  };
  try {
    measure("Q, K per-tensor E4M3; V exact", true, false, false);
    measure("Q, K rotated, per-tensor E4M3; V exact", true, true, false);
    measure("V per-tensor E4M3; Q, K exact", false, false, true);
    // NOTE: not an option of the library (the library rotates Q and K only): it shows that rotating V,
    // and the output back, would not lower V's share, since E4M3's rounding error is relative.
    measure("V rotated, per-tensor E4M3, rotated back; Q, K exact", false, false, true, true);
  } catch (...) {
    fp8attn_context_destroy(ctx);
    throw;
  }
  fp8attn_context_destroy(ctx);
  return sources;
}

std::string error_sources_markdown(const std::vector<ErrorSource>& sources) {
  std::string md = "| Inputs quantized (FP64 attention, no P cast) | RMSE vs FP64 |\n|---|---|\n";
  char line[256];
  for (const ErrorSource& s : sources) {
    std::snprintf(line, sizeof line, "| %s | %.2e |\n", s.what.c_str(), s.rmse);
    md += line;
  }
  return md;
}

}  // namespace fp8attn::table3
