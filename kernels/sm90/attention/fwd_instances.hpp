// The instantiation table of the attention forward: one entry per kernel the API dispatches to.
// Both builds (the emulator's and sm_90a's) and the host plan read this one list.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

/// Which kernel a plan runs.
struct FwdKernelKey {
  int head_dim;             ///< 64, 128 or 256
  PvPromotion promotion;    ///< Off, EveryBlock (interval 1 or per-block V descales), EveryN
  bool telemetry;           ///< the P̃ counters and the max |logit|
  FwdInput input = FwdInput::E4M3;  ///< E4M3 (QGMMA) or BF16 (HGMMA)
  bool decode = false;      ///< GQA-packed decode tiles (kernels/sm90/decode/decode_config.hpp)
};

/// True when the table below has a kernel for `key`.
/// NOTE: decode keys are not in this table: their kernels live in kernels/sm90/decode, in their
/// own translation units (with_decode_config).
constexpr bool fwd_kernel_exists(const FwdKernelKey& key) {
  if (key.decode) return false;
  const bool dim = key.head_dim == 64 || key.head_dim == 128 || key.head_dim == 256;
  if (key.input == FwdInput::BF16) return dim && key.promotion == PvPromotion::Off;
  // NOTE: EveryN at head_dim 256 runs on the head-dim split tile (BlockM 64, tile_config.hpp).
  return dim;
}

/// Calls f(Cfg{}) with the configuration of `key`; returns false when no kernel has that key.
/// NOTE: E4M3: 3 head dims × {Off, EveryBlock, EveryN} × telemetry (EveryN at head_dim 128 with
/// its own BlockN, at 256 on the head-dim split tile: tile_config.hpp): 18 kernels; BF16: 3 head
/// dims × telemetry, promotion Off only (its accumulator is full FP32, so the plan refuses
/// promotion): 6 kernels. Each is compiled once per build; output dtype, masks,
/// varlen, descales and the softmax variant are runtime parameters.
template <class F>
bool with_fwd_config(const FwdKernelKey& key, F&& f) {
  if (!fwd_kernel_exists(key)) return false;
  auto by_flags = [&](auto head_dim) {
    constexpr int kHd = decltype(head_dim)::value;
    if (key.input == FwdInput::BF16) {
      if (key.telemetry) f(FwdConfig<kHd, PvPromotion::Off, true, FwdInput::BF16>{});
      else f(FwdConfig<kHd, PvPromotion::Off, false, FwdInput::BF16>{});
      return true;
    }
    auto with_promotion = [&](auto promotion) {
      constexpr PvPromotion kP = decltype(promotion)::value;
      if (key.telemetry) f(FwdConfig<kHd, kP, true>{});
      else f(FwdConfig<kHd, kP, false>{});
    };
    using P = PvPromotion;
    if (key.promotion == P::Off) with_promotion(std::integral_constant<P, P::Off>{});
    else if (key.promotion == P::EveryBlock) with_promotion(std::integral_constant<P, P::EveryBlock>{});
    else with_promotion(std::integral_constant<P, P::EveryN>{});
    return true;
  };
  switch (key.head_dim) {
    case 64: return by_flags(std::integral_constant<int, 64>{});
    case 128: return by_flags(std::integral_constant<int, 128>{});
    default: return by_flags(std::integral_constant<int, 256>{});
  }
}

}  // namespace fp8attn::sm90
