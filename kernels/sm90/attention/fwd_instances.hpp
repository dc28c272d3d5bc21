// The instantiation table of the attention forward: one entry per kernel the API dispatches to.
// Both builds (the emulator's and sm_90a's) and the host plan read this one list.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

/// Which kernel a plan runs.
struct FwdKernelKey {
  int head_dim;    ///< 64, 128 or 256
  bool promote;    ///< two-level PV accumulation (pv_promote_interval > 0 or per-block V descales)
  bool telemetry;  ///< the P̃ counters and the max |logit|
  constexpr bool operator==(const FwdKernelKey&) const = default;
};

/// Calls f(Cfg{}) with the configuration of `key`; returns false when no kernel has that key.
/// NOTE: a table of 3 head dims × promotion × telemetry = 12 kernels, each compiled once per build;
/// output dtype, masks, varlen and descales are runtime parameters of the same kernel.
template <class F>
bool with_fwd_config(const FwdKernelKey& key, F&& f) {
  auto by_flags = [&](auto head_dim) {
    constexpr int kHd = decltype(head_dim)::value;
    if (key.promote && key.telemetry) f(FwdConfig<kHd, true, true>{});
    else if (key.promote) f(FwdConfig<kHd, true, false>{});
    else if (key.telemetry) f(FwdConfig<kHd, false, true>{});
    else f(FwdConfig<kHd, false, false>{});
    return true;
  };
  switch (key.head_dim) {
    case 64: return by_flags(std::integral_constant<int, 64>{});
    case 128: return by_flags(std::integral_constant<int, 128>{});
    case 256: return by_flags(std::integral_constant<int, 256>{});
    default: return false;
  }
}

}  // namespace fp8attn::sm90
