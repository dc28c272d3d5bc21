// Launch geometry of the KV append kernel, shared by the emulator and CUDA launchers: one CTA per
// token, and the instantiation for K's rotation (0: no rotation).
#pragma once

#include <string>

#include "kernels/sm90/kv_append/kv_append_kernel.hpp"

namespace fp8attn::sm90::kv {

/// Why the kernel cannot run `p` ("" when it can): a grid beyond CUDA's limit.
inline std::string kernel_refusal(const KvAppendParams& p) {
  if (p.tokens > 2147483647) return "the KV append grid exceeds CUDA's limit (tokens ≤ 2^31 − 1)";
  if (p.k.rotate && (p.log2_head_dim < 0 || p.log2_head_dim > 8))
    return "the KV append rotates head_dim 1 .. 256 (a power of two), not 2^" + std::to_string(p.log2_head_dim);
  return "";
}

/// Calls launch(kernel) with the instantiation for K's rotation (which kernel_refusal accepted).
template <class Launch>
void with_kv_append_kernel(const KvAppendParams& p, Launch&& launch) {
  if (!p.k.rotate) return launch(&kv_append_kernel<0>);
  switch (p.log2_head_dim) {
    case 0: return launch(&kv_append_kernel<1>);
    case 1: return launch(&kv_append_kernel<2>);
    case 2: return launch(&kv_append_kernel<4>);
    case 3: return launch(&kv_append_kernel<8>);
    case 4: return launch(&kv_append_kernel<16>);
    case 5: return launch(&kv_append_kernel<32>);
    case 6: return launch(&kv_append_kernel<64>);
    case 7: return launch(&kv_append_kernel<128>);
    default: return launch(&kv_append_kernel<256>);
  }
}

}  // namespace fp8attn::sm90::kv
