// The REFERENCE backend: the FP64 oracle behind the same plan and forward calls. It casts
// nothing but the final outputs, and is slow by design.
#pragma once

#include <memory>

#include "lib/backend/backend.hpp"

namespace fp8attn {

class Context;
std::unique_ptr<Backend> make_reference_backend(Context& context);

}  // namespace fp8attn
