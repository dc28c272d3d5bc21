// Shared helpers of the emulator tests: launch configurations over several schedules, and the
// seeds each test runs under (printed, so a failure can be replayed).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/emu/runtime.hpp"

namespace fp8attn::emu::testing {

// The schedules every kernel test runs under: round-robin, then shuffled with several seeds.
struct Schedule {
  bool shuffle;
  uint64_t seed;
};
inline std::vector<Schedule> schedules() {
  return {{false, 0}, {true, 1}, {true, 2}, {true, 0x5eed}, {true, 20261122}};
}

inline std::string schedule_name(const Schedule& s) {
  return s.shuffle ? "shuffled schedule, seed " + std::to_string(s.seed) : "round-robin schedule";
}

inline LaunchConfig config(Dim3 grid, Dim3 block, size_t smem, const Schedule& s) {
  LaunchConfig c;
  c.grid = grid;
  c.block = block;
  c.dynamic_smem_bytes = smem;
  c.seed = s.seed;
  c.shuffle = s.shuffle;
  return c;
}

// Runs `launch_it` expecting a KernelError; returns its message ("" if none was thrown).
template <class F>
std::string kernel_error_of(F&& launch_it) {
  try {
    launch_it();
  } catch (const KernelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace fp8attn::emu::testing
