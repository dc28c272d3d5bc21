// The emulator's device runtime (FP8ATTN_BACKEND_EMULATOR): host memory stands in for device
// memory, launches run the kernel text on the SIMT emulator, and every call that a CUDA runtime
// would make is counted, so tests can assert that an execute call neither allocates nor
// synchronizes (a condition for CUDA graph capture).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "lib/backend/device_runtime.hpp"

namespace fp8attn {

/// How the emulator schedules the kernel's threads. Read from the environment variable
/// FP8ATTN_EMULATOR_SCHEDULE: "round-robin" (default) or "shuffle:SEED"; FP8ATTN_EMULATOR_SMS
/// sets the persistent grid's SM count (default 4, so CTAs loop over several tiles).
/// FP8ATTN_EMULATOR_FAIL=launch makes every launch fail before its kernel runs, as a CUDA launch
/// that returns an error does: the tests of the DEVICE_ERROR path (outputs untouched) use it.
struct EmulatorSchedule {
  bool shuffle = false;
  uint64_t seed = 0;
  int sm_count = 4;
  bool fail_launches = false;
};
/// Parses the three variables; throws Error(BAD_OPTION) on a malformed value.
EmulatorSchedule emulator_schedule_from_environment();

/// Calls an execute path made through the runtime, counted since creation.
struct DeviceRuntimeCounters {
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> synchronizations{0};
  std::atomic<uint64_t> launches{0};
  std::atomic<uint64_t> copies{0};
};

std::unique_ptr<DeviceRuntime> make_emulated_runtime(const EmulatorSchedule& schedule,
                                                     std::shared_ptr<DeviceRuntimeCounters> counters);

}  // namespace fp8attn
