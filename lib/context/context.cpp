#include "lib/context/context.hpp"

#include <thread>

#include "lib/backend/cpu/cpu_backend.hpp"
#include "lib/backend/cuda_backend_loader.hpp"
#include "lib/backend/emulated_runtime.hpp"
#include "lib/backend/gpu/gpu_backend.hpp"
#include "lib/backend/reference/reference_backend.hpp"
#include "lib/core/error.hpp"
#include "lib/core/logging.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/scale/device_amax_pickup.hpp"

namespace fp8attn {
namespace {

int resolve_threads(int32_t requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

Context::Context(const fp8attn_context_options& o)
    : logger_(make_logger(o.log_level, o.log_callback, o.log_user_data)),
      log_(logger_.get()),
      pool_(resolve_threads(o.num_threads)) {
  switch (o.backend) {
    case FP8ATTN_BACKEND_CPU:
      backend_ = make_cpu_backend(pool_);
      break;
    case FP8ATTN_BACKEND_REFERENCE:
      backend_ = make_reference_backend(pool_);
      break;
    case FP8ATTN_BACKEND_CUDA:
      backend_ = load_cuda_backend(o.device_ordinal);
      break;
    case FP8ATTN_BACKEND_EMULATOR:
      runtime_counters_ = std::make_shared<DeviceRuntimeCounters>();
      backend_ = make_gpu_backend(make_emulated_runtime(emulator_schedule_from_environment(), runtime_counters_));
      break;
    case FP8ATTN_BACKEND_AUTO:
      try {
        backend_ = load_cuda_backend(o.device_ordinal);
        log_.info("backend AUTO: using CUDA device {}", o.device_ordinal);
      } catch (const Error& e) {
        // NOTE: WARN, the default level: a host that asked for AUTO on a GPU machine must hear
        // that it runs on the CPU without turning on more logging.
        log_.warn("backend AUTO: falling back to the CPU backend because the CUDA backend is not usable "
                  "(status {}: {})",
                  fp8attn_status_name(e.status()), e.what());
        backend_ = make_cpu_backend(pool_);
      }
      break;
    default:
      throw Error(FP8ATTN_STATUS_BAD_OPTION, "unknown backend " + std::to_string(o.backend));
  }
  // NOTE: the page-locked staging of the device amax pickup is made here, once: execute calls
  // must not allocate.
  if (backend_->forward_amax_offset() >= 0) amax_pickup_ = std::make_unique<DeviceAmaxPickup>(*backend_, log_);
  log_.info("context: backend {}", backend_log_name(backend_->kind()));
  log_.debug("context created: backend {}, {} CPU threads, CPU engine ISA {}", backend_log_name(backend_->kind()),
             pool_.size(), cpu_isa_name(active_cpu_isa()));
}

Context::~Context() = default;

}  // namespace fp8attn
