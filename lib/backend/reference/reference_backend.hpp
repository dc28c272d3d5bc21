// The REFERENCE backend: the FP64 oracle behind the same plan and forward calls. It casts
// nothing but the final outputs, and is slow by design.
#pragma once

#include <memory>

#include "lib/backend/backend.hpp"

namespace fp8attn {

class ThreadPool;
/// Runs on `pool`, the owning context's workers; `pool` outlives the backend.
std::unique_ptr<Backend> make_reference_backend(ThreadPool& pool);

}  // namespace fp8attn
