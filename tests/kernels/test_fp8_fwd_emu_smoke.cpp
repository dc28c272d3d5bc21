#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "lib/workloads/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace workloads;
TEST(Fp8FwdEmu, Smoke) {
  const uint64_t seed = fresh_seed();
  const AttentionShape shape{1, 200, 300, 2, 1, 128};
  const auto q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  auto desc = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  desc.telemetry = 1;
  expect_emulator_matches_engine(desc, shape, q, seed, {}, "smoke");
}
}  // namespace fp8attn::testing
