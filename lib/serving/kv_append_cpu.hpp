// The CPU KV append: fp8attn_kv_append_async on host memory, one token per task on the context's
// workers, with the kernel's per-row arithmetic (kernels/sm90/kv_append/kv_append_params.hpp)
// and the quantizer's rotation (lib/quantize/hadamard_rotation.hpp), so the Hopper kernel's
// output equals it bit for bit.
#pragma once

#include "kernels/sm90/kv_append/kv_append_params.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::serving {

/// Appends `p` (validated by make_kv_append_params for host memory). Rows whose slot is negative
/// are skipped; every other row of the cache and of the scale caches is left as it was.
void kv_append_on_cpu(const sm90::kv::KvAppendParams& p, ThreadPool& pool);

}  // namespace fp8attn::serving
