// fp8attn_attention_combine's arguments after validation: every tensor is checked here, in one
// place, before anything is written (the ABI's "outputs untouched on failure"). Backends read
// only the resulting parameters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::combine {

/// Validates `args` (a full-size copy: struct_size and next already read) for a backend whose
/// tensors live on `device`. `check_outputs` = false (the workspace query) reads only shapes
/// and dtypes. Throws Error with the first problem's status.
sm90::combine::CombineParams make_combine_params(const fp8attn_combine_args& args, int32_t device, bool check_outputs);

/// Workspace bytes of one combine call: none. NOTE: each row's weights live in the kernel's
/// shared memory (one float per part, at most 256 parts) or on a CPU worker's stack.
inline size_t combine_workspace_bytes(const sm90::combine::CombineParams&) { return 0; }

}  // namespace fp8attn::combine
