// The instantiation table of the BF16 attention backward: one entry per kernel the API dispatches
// to. Both builds (the emulator's and sm_90a's) and the host plan read this one list.
#pragma once

#include <type_traits>

#include "kernels/sm90/attention/bwd_config.hpp"

namespace fp8attn::sm90 {

/// Which backward kernel a plan runs.
struct BwdKernelKey {
  int head_dim;  ///< 64, 128 or 256
};

/// True when the table below has a kernel for `key`.
constexpr bool bwd_kernel_exists(const BwdKernelKey& key) {
  return key.head_dim == 64 || key.head_dim == 128 || key.head_dim == 256;
}

/// Calls f(Cfg{}) with the configuration of `key`; returns false when no kernel has that key.
/// NOTE: 3 main kernels (plus a preprocessing and a dQ kernel each); masks, varlen, GQA, the dq
/// dtype and the deterministic/atomic choice are runtime parameters.
template <class F>
bool with_bwd_config(const BwdKernelKey& key, F&& f) {
  if (key.head_dim == 64) f(BwdConfig<64>{});
  else if (key.head_dim == 128) f(BwdConfig<128>{});
  else if (key.head_dim == 256) f(BwdConfig<256>{});
  else return false;
  return true;
}

}  // namespace fp8attn::sm90
