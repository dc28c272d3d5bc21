// Support of the emulated FP8 attention kernel's tests: one case (shape, description, inputs)
// run through the C API on the CPU backend and on FP8ATTN_BACKEND_EMULATOR under a given
// schedule, compared bit for bit (outputs, LSE, telemetry).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/common/forward_runner.hpp"

namespace fp8attn::testing {

/// The emulator schedules every case runs under: round-robin and three shuffle seeds.
inline std::vector<std::string> emulator_schedules(uint64_t seed) {
  return {"round-robin", "shuffle:" + std::to_string(seed), "shuffle:" + std::to_string(seed + 1),
          "shuffle:" + std::to_string(seed + 2)};
}

/// Bitwise differences between two float vectors (NaN payloads included).
inline int64_t bit_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return static_cast<int64_t>(a.size() > b.size() ? a.size() : b.size());
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

/// Runs `desc` on the emulator under `schedule` (the environment variable is set for the
/// context's creation only).
inline workloads::ForwardResult run_emulated(const fp8attn_attention_desc& desc, const workloads::AttentionShape& shape,
                                             const workloads::QuantizedInputs& inputs, const std::string& schedule,
                                             workloads::ForwardOptions options = {}) {
  setenv("FP8ATTN_EMULATOR_SCHEDULE", schedule.c_str(), 1);
  options.backend = FP8ATTN_BACKEND_EMULATOR;
  workloads::ForwardResult r = workloads::run_forward(desc, shape, inputs, options);
  unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
  return r;
}

/// The CPU engine and the emulated kernel on the same inputs, under every schedule: equal bits.
inline void expect_emulator_matches_engine(const fp8attn_attention_desc& desc, const workloads::AttentionShape& shape,
                                           const workloads::QuantizedInputs& inputs, uint64_t seed,
                                           const workloads::ForwardOptions& options = {}, const char* what = "") {
  workloads::ForwardOptions cpu = options;
  cpu.backend = FP8ATTN_BACKEND_CPU;
  const workloads::ForwardResult engine = workloads::run_forward(desc, shape, inputs, cpu);
  ASSERT_EQ(engine.status, FP8ATTN_OK) << what;
  for (const std::string& schedule : emulator_schedules(seed)) {
    const workloads::ForwardResult kernel = run_emulated(desc, shape, inputs, schedule, options);
    ASSERT_EQ(kernel.status, FP8ATTN_OK) << what << " schedule " << schedule;
    const int64_t out_diff = bit_mismatches(engine.out, kernel.out), lse_diff = bit_mismatches(engine.lse, kernel.lse);
    EXPECT_EQ(out_diff, 0) << what << ": outputs differ, schedule " << schedule << ", seed " << seed;
    EXPECT_EQ(lse_diff, 0) << what << ": LSE differs, schedule " << schedule << ", seed " << seed;
    if (desc.telemetry) {
      EXPECT_EQ(engine.telemetry.p_positive, kernel.telemetry.p_positive) << what << " " << schedule;
      EXPECT_EQ(engine.telemetry.p_underflow, kernel.telemetry.p_underflow) << what << " " << schedule;
      EXPECT_EQ(std::memcmp(&engine.telemetry.max_abs_scaled_logit, &kernel.telemetry.max_abs_scaled_logit, 4), 0)
          << what << " " << schedule << ": " << engine.telemetry.max_abs_scaled_logit << " vs "
          << kernel.telemetry.max_abs_scaled_logit;
    }
    std::printf("%s [%s]: %zu outputs, %lld differ; %zu LSE, %lld differ\n", what, schedule.c_str(), engine.out.size(),
                static_cast<long long>(out_diff), engine.lse.size(), static_cast<long long>(lse_diff));
  }
}

}  // namespace fp8attn::testing
