// Where the FP8 error of the Table 3 study comes from: the FP64 oracle run on inputs of which
// only some were quantized (fp8attn_quantize, then multiplied back by the descale), against the
// oracle on the real-valued inputs. No P cast and no FP32 accumulation enter these figures, so
// they isolate the input quantization of Q·Kᵀ and of V.
#pragma once

#include <string>
#include <vector>

#include "tools/fa3_table3/table3_study.hpp"

namespace fp8attn::table3 {

struct ErrorSource {
  std::string what;
  double rmse = 0.0;
};

/// Three rows: Q and K per-tensor E4M3 (V exact); Q and K rotated by H·D, then per-tensor E4M3
/// (V exact; the oracle works in the rotated basis, where Q·Kᵀ is unchanged); V per-tensor E4M3
/// (Q and K exact). Throws std::runtime_error when a C API call fails.
std::vector<ErrorSource> decompose_fp8_error(const Table3Options& options);

/// The rows as a markdown table.
std::string error_sources_markdown(const std::vector<ErrorSource>& sources);

}  // namespace fp8attn::table3
