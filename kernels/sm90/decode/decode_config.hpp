// The decode kernels' configurations: a forward config (fwd_config.hpp) with kDecode set, so the
// forward kernel's producer and consumers walk decode tiles (decode_tile_scheduler.hpp) and the
// consumers store the decode epilogue (decode_epilogue.hpp). The tile sizes, pipeline and
// shared storage are the forward's, so the CPU engine (which reads the same tile_config.hpp)
// packs the same rows.
#pragma once

#include <type_traits>

#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

template <class Base>
struct DecodeConfig : Base {
  static constexpr bool kDecode = true;
};

/// Which decode kernels exist: every head dim and input type, promotion Off, no telemetry (the
/// plan refuses the rest on the decode path; docs/kernels.md).
constexpr bool decode_kernel_exists(int head_dim, PvPromotion promotion, bool telemetry) {
  return (head_dim == 64 || head_dim == 128 || head_dim == 256) && promotion == PvPromotion::Off && !telemetry;
}

/// Calls f(Cfg{}) with the decode config of (head_dim, input); false when there is none.
template <class F>
bool with_decode_config(int head_dim, PvPromotion promotion, bool telemetry, FwdInput input, F&& f) {
  if (!decode_kernel_exists(head_dim, promotion, telemetry)) return false;
  auto by_dim = [&](auto hd) {
    constexpr int kHd = decltype(hd)::value;
    if (input == FwdInput::BF16) f(DecodeConfig<FwdConfig<kHd, PvPromotion::Off, false, FwdInput::BF16>>{});
    else f(DecodeConfig<FwdConfig<kHd, PvPromotion::Off, false, FwdInput::E4M3>>{});
    return true;
  };
  switch (head_dim) {
    case 64: return by_dim(std::integral_constant<int, 64>{});
    case 128: return by_dim(std::integral_constant<int, 128>{});
    default: return by_dim(std::integral_constant<int, 256>{});
  }
}

}  // namespace fp8attn::sm90
