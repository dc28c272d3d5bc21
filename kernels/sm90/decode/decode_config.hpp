// The decode kernels' configurations: a forward config (fwd_config.hpp) with kDecode set, so the
// forward kernel's producer and consumers walk decode tiles (decode_tile_scheduler.hpp) and the
// consumers store the decode epilogue (decode_epilogue.hpp). The tile sizes, pipeline and
// shared storage are the forward's, so the CPU engine (which reads the same tile_config.hpp)
// packs the same rows.
#pragma once

#include <type_traits>

#include "kernels/arch/registers.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"

namespace fp8attn::sm90 {

/// NOTE: the serial main loop (run_blocks_serial; the same bits as the overlapped one,
/// fwd_mainloop.hpp) and other register budgets than the forward's: a decode tile's resolution
/// (its split count, the split's part of the schedule, the packed rows: about twice the forward's
/// divisions) spilled the producer at 24 registers, and the overlapped consumers had none to
/// give. Serial consumers fit in 232 (152 with three), which leaves the producer 40. Decode is
/// bound by the K/V bytes, which the producer's pipeline keeps streaming either way.
template <class Base>
struct DecodeConfig : Base {
  static constexpr bool kDecode = true;
  static constexpr bool kIntraWgOverlap = false;
  static constexpr bool kTmaOut = false;  ///< decode stores packed rows (decode_epilogue.hpp)
  static constexpr uint32_t kProducerRegisters = 40;
  static constexpr uint32_t kConsumerRegisters = Base::kConsumers == 2 ? 232 : 152;
  static_assert(arch::register_budgets_fit(Base::kThreads, kProducerRegisters, Base::kConsumers, kConsumerRegisters),
                "register budgets over the CTA's launch pool: setmaxnreg.inc would wait forever");
};

/// Which decode kernels exist: every head dim and input type with promotion Off, and E4M3 with
/// promotion after every block (pv_promote_interval 1, per-block V descales, a paged cache's
/// per-token descales: the serial main loop's every-block P·V, as the forward's), no telemetry
/// (the plan refuses the rest on the decode path; docs/kernels.md).
/// NOTE: every-N promotion keeps a second O tile alive across blocks, which the decode consumers'
/// budget has no room for next to the serial loop's S and O.
constexpr bool decode_kernel_exists(int head_dim, PvPromotion promotion, bool telemetry, FwdInput input) {
  const bool promotion_ok =
      promotion == PvPromotion::Off || (promotion == PvPromotion::EveryBlock && input == FwdInput::E4M3);
  return (head_dim == 64 || head_dim == 128 || head_dim == 256) && promotion_ok && !telemetry;
}

/// Calls f(Cfg{}) with the decode config of (head_dim, promotion, input); false when there is none.
template <class F>
bool with_decode_config(int head_dim, PvPromotion promotion, bool telemetry, FwdInput input, F&& f) {
  if (!decode_kernel_exists(head_dim, promotion, telemetry, input)) return false;
  auto by_dim = [&](auto hd) {
    constexpr int kHd = decltype(hd)::value;
    if (input == FwdInput::BF16) f(DecodeConfig<FwdConfig<kHd, PvPromotion::Off, false, FwdInput::BF16, true>>{});
    else if (promotion == PvPromotion::EveryBlock)
      f(DecodeConfig<FwdConfig<kHd, PvPromotion::EveryBlock, false, FwdInput::E4M3, true>>{});
    else f(DecodeConfig<FwdConfig<kHd, PvPromotion::Off, false, FwdInput::E4M3, true>>{});
    return true;
  };
  switch (head_dim) {
    case 64: return by_dim(std::integral_constant<int, 64>{});
    case 128: return by_dim(std::integral_constant<int, 128>{});
    default: return by_dim(std::integral_constant<int, 256>{});
  }
}

}  // namespace fp8attn::sm90
