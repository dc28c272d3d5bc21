// fp8attn_kv_append_async's arguments after validation: every tensor, option and host-readable
// value is checked here, in one place, before anything is written (the ABI's "outputs untouched
// on failure"). Backends read only the resulting parameters.
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "kernels/sm90/kv_append/kv_append_params.hpp"

namespace fp8attn::serving {

/// Validates `a` (a full-size copy, defaults filled) for tensors in `device` memory and
/// translates it. Host-resident slots and PER_HEAD descales are read and checked; device-resident
/// ones are left to the kernel. Throws Error with the first problem's status.
sm90::kv::KvAppendParams make_kv_append_params(const fp8attn_kv_append_args& a, int32_t device);

}  // namespace fp8attn::serving
