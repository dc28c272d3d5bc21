// The P cast at a static scale S_p that the engine cannot express. The engine and the kernel
// add log2 S_p inside the exp2 and so accept only powers of two (p_scale_log2 0..8); E4M3's own
// maximum, S_p = 448 = 256·1.75, is not one. This emulation replays the engine's online softmax
// in FP64 (same KV schedule, same running max per block, same row sum of P̃ before the cast) and
// casts P̃ to E4M3 with the library's converter, for any real S_p. It is validated against the
// engine at the powers of two (the study writes both).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/p_collapse_study/p_collapse_point.hpp"

namespace fp8attn::study {

class CastPointEmulation {
 public:
  /// Computes the logits of the case once, in FP64 from the E4M3 inputs. `c` must outlive this
  /// object.
  explicit CastPointEmulation(const SinkCase& c);

  /// Replays the forward at S_p = `p_scale` (> 0). Predictions are filled with predict().
  PointResult run(double p_scale, int32_t kv_order, bool sink_isolation, int threads = 2) const;

 private:
  const SinkCase& case_;
  std::vector<double> logits_;  ///< [rows][keys], raw S = q·k (descales are 1)
  std::vector<double> v_;       ///< [keys][dim]
};

}  // namespace fp8attn::study
