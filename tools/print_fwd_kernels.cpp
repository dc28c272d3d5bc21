// Prints one line per kernel of the attention forward's instantiation table: its mangled-name
// fragment, threads, dynamic shared memory, register budgets, its MMA, its tile (BlockM,
// BlockN) and whether it stores O through TMA (FwdConfig::kTmaOut), for the sm_90a check script
// (tools/check_attention_sm90a.sh). Compiled as host C++ from the same headers as the kernels.
#include <cstdio>

#include "kernels/sm90/attention/attention_fwd_kernel.hpp"
#include "kernels/sm90/attention/fwd_instances.hpp"

int main() {
  using namespace fp8attn::sm90;
  for (FwdInput input : {FwdInput::E4M3, FwdInput::BF16})
    for (int hd : {64, 128, 256})
      for (PvPromotion promotion : {PvPromotion::Off, PvPromotion::EveryBlock, PvPromotion::EveryN})
        for (bool telemetry : {false, true}) {
          const FwdKernelKey key{hd, promotion, telemetry, input};
          with_fwd_config(key, [&](auto cfg) {
            using Cfg = decltype(cfg);
            // The Itanium mangling of FwdConfig<hd, promotion, telemetry, input>, as it appears in
            // SASS, then the MMA the kernel must use: QGMMA for E4M3, HGMMA for BF16.
            std::printf("FwdConfigILi%dELNS0_11PvPromotionE%dELb%dELNS0_8FwdInputE%dE %d %zu %u %u %s %d %d %d\n", hd,
                        static_cast<int>(promotion), telemetry ? 1 : 0, static_cast<int>(input), Cfg::kThreads,
                        attention_fwd_smem_bytes<Cfg>(), Cfg::kProducerRegisters, Cfg::kConsumerRegisters,
                        Cfg::kBf16 ? "HGMMA" : "QGMMA", Cfg::kBlockM, Cfg::kBlockN, Cfg::kTmaOut ? 1 : 0);
          });
        }
}
