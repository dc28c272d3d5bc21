// Concurrent forward calls on FP8ATTN_BACKEND_EMULATOR: two threads, each with its own context and
// accumulator model, run the emulated kernel at once (the emulator spreads CTAs over host threads
// too); each result must still equal the CPU engine's bits. Runs under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <thread>

#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

TEST(Fp8FwdEmuConcurrent, TwoCallsAtOnceKeepTheirBits) {
  const AttentionShape shape{1, 130, 250, 2, 1, 64};
  const uint64_t seed = fresh_seed();
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  fp8attn_attention_desc with_model = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  fp8attn_attention_desc without_model = with_model;
  without_model.accumulator_model = 0;
  ForwardOptions cpu;
  const ForwardResult want_a = run_forward(with_model, shape, q, cpu);
  const ForwardResult want_b = run_forward(without_model, shape, q, cpu);
  ForwardOptions emu;
  emu.backend = FP8ATTN_BACKEND_EMULATOR;
  ForwardResult got_a, got_b;
  std::thread a([&] { got_a = run_forward(with_model, shape, q, emu); });
  std::thread b([&] { got_b = run_forward(without_model, shape, q, emu); });
  a.join();
  b.join();
  ASSERT_EQ(got_a.status, FP8ATTN_OK);
  ASSERT_EQ(got_b.status, FP8ATTN_OK);
  EXPECT_EQ(bit_mismatches(want_a.out, got_a.out), 0) << "seed " << seed;
  EXPECT_EQ(bit_mismatches(want_b.out, got_b.out), 0) << "seed " << seed;
  EXPECT_GT(bit_mismatches(want_a.out, want_b.out), 0) << "the two models should differ somewhere";
}

}  // namespace
}  // namespace fp8attn::testing
