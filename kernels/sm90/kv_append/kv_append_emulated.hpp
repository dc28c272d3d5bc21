// Runs the KV append kernel (kernels/sm90/kv_append) on the SIMT emulator.
#pragma once

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/kv_append/kv_append_params.hpp"

namespace fp8attn::sm90::kv {

/// Runs the kernel on `p` with the schedule options of `schedule`; grid and block come from the
/// kernel. Throws std::invalid_argument for a problem the kernel refuses and emu::KernelError for
/// any failure inside it. Nothing is launched for zero tokens.
void run_kv_append_emulated(const KvAppendParams& p, const emu::LaunchConfig& schedule);

}  // namespace fp8attn::sm90::kv
