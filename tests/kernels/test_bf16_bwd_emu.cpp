// The BF16 attention backward kernel (kernels/sm90/attention/attention_bwd_kernel.hpp) on the SIMT
// emulator against the CPU engine through the C API, deterministic mode: dq, dk and dv bit-equal
// under round-robin and three shuffled schedules, on fresh N(0, 1) BF16 inputs
// (bf16_bwd_emu_support.hpp). Shapes stay small: every case runs four emulated launches.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/bf16_bwd_emu_support.hpp"

namespace fp8attn::testing {
namespace {

TEST(Bf16BwdEmu, HeadDims64And128CausalAndNot) {
  for (int hd : {64, 128})
    for (bool causal : {false, true}) {
      BwdCase c;
      c.shape = {1, 150, 170, 2, 1, hd};  // GQA 2:1, lengths not multiples of the tiles
      c.causal = causal;
      c.name = "hd" + std::to_string(hd) + (causal ? " causal" : "");
      expect_bwd_emulator_matches_engine(c);
    }
}

}  // namespace
}  // namespace fp8attn::testing
