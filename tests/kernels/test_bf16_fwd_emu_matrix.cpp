// The longer cases of the emulated BF16 attention forward against the CPU engine (label
// emu_matrix): query and key lengths around each head dim's BlockN, and a multi-batch GQA run
// with the stabilized softmax on fresh keys. Equal bits of out, LSE and telemetry under every
// schedule (bf16_fwd_emu_support.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/bf16_fwd_emu_support.hpp"

namespace fp8attn::testing {
namespace {

/// Query and key lengths 1, BlockN − 1, BlockN, BlockN + 1 and 2·BlockN + 5 at every head dim.
TEST(Bf16FwdEmuMatrix, SequenceLengthsAroundTheBlockSize) {
  for (int hd : {64, 128, 256}) {
    const int bn = bf16_block_n(hd);
    for (int64_t len : std::vector<int64_t>{1, bn - 1, bn, bn + 1, 2 * bn + 5}) {
      Bf16Case c;
      c.shape = {1, len, 2 * bn + 5, 1, 1, hd};
      c.name = "bf16 hd" + std::to_string(hd) + " q=" + std::to_string(len);
      run_bf16_case(c);
      c.shape = {1, bn + 1, len, 1, 1, hd};
      c.causal = len % 2 == 1;
      c.name = "bf16 hd" + std::to_string(hd) + " k=" + std::to_string(len) + (c.causal ? " causal" : "");
      run_bf16_case(c);
    }
  }
}

/// Two sequences, GQA 2:1, the stabilized softmax, F32 output, at every head dim.
TEST(Bf16FwdEmuMatrix, StabilizedGqaEveryHeadDim) {
  for (int hd : {64, 128, 256}) {
    Bf16Case c;
    c.shape = {2, 200, 3 * bf16_block_n(hd) + 3, 4, 2, hd};
    c.stabilized = true;
    c.causal = hd != 128;
    c.out_dtype = FP8ATTN_DTYPE_F32;
    c.name = "bf16 hd" + std::to_string(hd) + " stabilized GQA";
    run_bf16_case(c);
  }
}

}  // namespace
}  // namespace fp8attn::testing
