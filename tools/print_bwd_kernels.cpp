// Prints one line per main kernel of the attention backward's instantiation table: its
// mangled-name fragment, threads, dynamic shared memory and register budgets, for the sm_90a
// check scripts (tools/check_attention_bwd_sm90a.sh, tools/check_cuda_backend_so.sh). Compiled as
// host C++ from the same headers as the kernels.
#include <cstdio>

#include "kernels/sm90/attention/attention_bwd_kernel.hpp"
#include "kernels/sm90/attention/bwd_instances.hpp"

int main() {
  using namespace fp8attn::sm90;
  for (int hd : {64, 128, 256}) {
    with_bwd_config(BwdKernelKey{hd}, [&](auto cfg) {
      using Cfg = decltype(cfg);
      // The Itanium mangling of BwdConfig<hd, BwdFault::None> as it appears in SASS.
      std::printf("BwdConfigILi%dELNS0_8BwdFaultE0EE %d %zu %u %u HGMMA\n", hd, Cfg::kThreads,
                  attention_bwd_smem_bytes<Cfg>(), Cfg::kProducerRegisters, Cfg::kConsumerRegisters);
    });
  }
}
