// The trials of the stabilized-softmax bias study, shared by the tool (main.cpp) and its test:
// per draw, fresh tied-maximum inputs (tied_max_inputs.hpp), the FP64 oracle, the engine with
// the standard and the stabilized softmax, and optionally the all-BF16 flash reference.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "tools/stabilized_bias_study/bias_statistics.hpp"
#include "tools/stabilized_bias_study/tied_max_inputs.hpp"

namespace fp8attn::study {

struct BiasStudyOptions {
  int64_t rows = 1024, keys = 512;
  int heads = 4, head_dim = 64, draws = 3;
  TiedMaxOptions inputs;
  uint64_t seed = 20261123;
  bool bf16_reference = true;  ///< also run the all-BF16 flash reference (slow: scalar FP64 loops)
};

enum BiasVariant { kEngineStandard = 0, kEngineStabilized = 1, kBf16FlashStandard = 2, kBf16FlashStabilized = 3 };
inline constexpr const char* kBiasVariantNames[4] = {"standard", "stabilized", "standard (all-BF16 flash)",
                                                     "stabilized (all-BF16 flash)"};

struct BiasStudyResult {
  BiasStatistics stats[4];
  int block_n = 0;
};

/// Runs every draw. `on_draw(draw, seed, variant, stats)` sees each draw's statistics (the CSV);
/// `on_step` names the step now running (a progress line). Throws std::runtime_error when a
/// forward call fails.
BiasStudyResult run_bias_trials(const BiasStudyOptions& o,
                                const std::function<void(int, uint64_t, int, const BiasStatistics&)>& on_draw = {},
                                const std::function<void(const std::string&)>& on_step = {});

}  // namespace fp8attn::study
