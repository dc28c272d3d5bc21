// FlashAttention-3's Table 3, reproduced on the CPU engine: RMSE against an FP64 oracle on the
// unquantized inputs, for FlashAttention-3's outlier distribution N(0,1) + N(0,100)·Bernoulli(0.001)
// in Q, K and V, with BF16 inputs and with E4M3 inputs quantized by fp8attn_quantize per tensor,
// per block, with incoherent processing, and with both. Everything goes through the C ABI:
// fp8attn_quantize for the casts, fp8attn_attention_forward (tools/common's runner) for attention.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fp8attn::table3 {

struct Table3Options {
  int heads = 16;
  int64_t seqlen = 4096;
  int head_dim = 128;
  int64_t batch = 1;
  uint64_t input_seed = 0;     ///< seed of the outlier inputs
  uint64_t rotation_seed = 0;  ///< seed of D, shared by Q and K
  int threads = 0;             ///< CPU threads for the engine and the oracle; 0 = all cores
};

struct Table3Row {
  std::string method;
  double rmse = 0.0;
  std::string reference;  ///< FlashAttention-3's figure for this row, or empty
};

struct Table3Result {
  std::vector<Table3Row> rows;  ///< BF16; FP8 per-tensor; per-block; rotation; both
  int32_t block_m = 0, block_n = 0;  ///< the plan's tiles, which the per-block descales follow
  double q_amax = 0.0, q_amax_rotated = 0.0;  ///< per-tensor amax of Q before and after rotation
};

/// Runs the five configurations. Throws std::runtime_error when a C API call fails.
Table3Result run_table3(const Table3Options& options);

/// The result as a markdown table, with the setup and the improvement ratio below it.
std::string table3_markdown(const Table3Result& result, const Table3Options& options);

/// RMSE of FP8 per-tensor without rotation over RMSE of FP8 with per-block descales and rotation.
double improvement_ratio(const Table3Result& result);

/// One draw of the inputs: its seed and its result.
struct Table3Draw {
  uint64_t input_seed = 0;
  Table3Result result;
};

/// The improvement ratio over several draws of the inputs, as a markdown table with the smallest
/// and largest ratio below it: one draw's ratio depends on where its outliers fall.
std::string draws_markdown(const std::vector<Table3Draw>& draws, const Table3Options& options);

}  // namespace fp8attn::table3
