// The grid: CTAs spread over host threads, each CTA run entirely by one host thread.
#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernels/emu/cta.hpp"

namespace fp8attn::emu {
namespace {

// NOTE: the Hopper limits (CUDA C Programming Guide, compute capability 9.0): 1024 threads per
// CTA and 227 KB of dynamic shared memory per CTA.
constexpr unsigned kMaxThreadsPerCta = 1024;
constexpr size_t kMaxDynamicSmemBytes = 227 * 1024;

void validate(const LaunchConfig& config) {
  const Dim3& g = config.grid;
  const Dim3& b = config.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) {
    throw KernelError("launch: grid and block dimensions must be at least 1");
  }
  if (uint64_t{b.x} * b.y * b.z > kMaxThreadsPerCta) {
    throw KernelError("launch: " + std::to_string(uint64_t{b.x} * b.y * b.z) +
                      " threads per CTA; at most 1024");
  }
  if (config.dynamic_smem_bytes > kMaxDynamicSmemBytes) {
    throw KernelError("launch: " + std::to_string(config.dynamic_smem_bytes) +
                      " bytes of dynamic shared memory; at most 227 KB (232448 bytes)");
  }
}

}  // namespace

namespace detail {

void launch_grid(const LaunchConfig& config, const std::function<void()>& body) {
  validate(config);
  const uint64_t ctas = uint64_t{config.grid.x} * config.grid.y * config.grid.z;
  unsigned workers = config.host_threads > 0 ? static_cast<unsigned>(config.host_threads)
                                             : std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<uint64_t>(workers, ctas));

  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex errors_mutex;
  std::map<uint64_t, std::string> errors;  // by linear CTA index: the lowest one is reported
  std::exception_ptr other_error;

  auto worker = [&] {
    try {
      Cta cta(config);
      for (;;) {
        if (stop.load(std::memory_order_relaxed)) return;
        const uint64_t linear = next.fetch_add(1);
        if (linear >= ctas) return;
        const Dim3 block_idx{static_cast<unsigned>(linear % config.grid.x),
                             static_cast<unsigned>(linear / config.grid.x % config.grid.y),
                             static_cast<unsigned>(linear / (uint64_t{config.grid.x} * config.grid.y))};
        try {
          cta.run(block_idx, body);
        } catch (const KernelError& e) {
          std::lock_guard lock(errors_mutex);
          errors.emplace(linear, e.what());
          stop = true;
        }
      }
    } catch (...) {
      std::lock_guard lock(errors_mutex);
      if (!other_error) other_error = std::current_exception();
      stop = true;
    }
  };

  if (workers <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (!errors.empty()) throw KernelError(errors.begin()->second);
  if (other_error) std::rethrow_exception(other_error);
}

}  // namespace detail
}  // namespace fp8attn::emu
