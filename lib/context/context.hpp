// A context: the chosen backend, the CPU worker threads and the logger. Created from
// fp8attn_context_options by the one constructor that resolves AUTO.
#pragma once

#include <memory>

#include "fp8attn/fp8attn.h"
#include "lib/backend/backend.hpp"
#include "lib/core/log.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn {

struct DeviceRuntimeCounters;
class DeviceAmaxPickup;

class Context {
 public:
  /// `options` is a full-size, checked copy. Throws Error (4xxx when CUDA was asked for and
  /// cannot be had).
  explicit Context(const fp8attn_context_options& options);
  ~Context();

  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }
  ThreadPool& pool() { return pool_; }
  const Log& log() const { return log_; }
  int num_threads() const { return pool_.size(); }
  /// The device runtime's call counters (EMULATOR backend only; null otherwise).
  const DeviceRuntimeCounters* runtime_counters() const { return runtime_counters_.get(); }
  /// The stream-ordered pickup of device amaxes (device backends: CUDA, emulator); null on the
  /// host backends, whose amaxes are host memory.
  DeviceAmaxPickup* amax_pickup() { return amax_pickup_.get(); }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  Log log_;
  ThreadPool pool_;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<DeviceRuntimeCounters> runtime_counters_;
  std::unique_ptr<DeviceAmaxPickup> amax_pickup_;  ///< after backend_: released before it
};

}  // namespace fp8attn

/// The ABI's opaque handle type.
struct fp8attn_context_t {
  fp8attn::Context impl;
  explicit fp8attn_context_t(const fp8attn_context_options& options) : impl(options) {}
};
