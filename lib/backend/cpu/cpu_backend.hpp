// The CPU backend: runs attention on the kernel-faithful tile engine over the context's
// workers. The embedded default wherever no GPU is present.
#pragma once

#include <memory>

#include "lib/backend/backend.hpp"

namespace fp8attn {

class ThreadPool;
/// Runs on `pool`, the owning context's workers; `pool` outlives the backend.
std::unique_ptr<Backend> make_cpu_backend(ThreadPool& pool);

}  // namespace fp8attn
