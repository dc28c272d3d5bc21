// The combine kernel (kernels/sm90/combine) on the SIMT emulator, through the emulator
// backend's host code (GpuBackend), against the CPU backend: bit-equal outputs and LSEs on fresh
// random partials, for F32 and BF16 in and out, dense and transposed layouts, 1 and 256 parts,
// empty parts, all-empty rows, NaN/+inf LSEs and head_dim 0 (LSE only); one launch per call,
// nothing allocated.
#include <cstdio>

#include "lib/backend/emulated_runtime.hpp"
#include "lib/context/context.hpp"
#include "tests/combine/combine_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::combine_testing {
namespace {

struct EmuCase {
  std::string name;
  int64_t parts, tokens, heads, dim;
  Layout layout;
  double empty_fraction = 0.0;
  std::vector<int64_t> all_empty_rows;
  bool poison_lse = false;
};
void PrintTo(const EmuCase& c, std::ostream* os) { *os << c.name; }
EmuCase make_case(std::string name, int64_t parts, int64_t tokens, int64_t heads, int64_t dim) {
  EmuCase c;
  c.name = std::move(name);
  c.parts = parts, c.tokens = tokens, c.heads = heads, c.dim = dim;
  return c;
}

class CombineEmulated : public ::testing::TestWithParam<EmuCase> {};

TEST_P(CombineEmulated, BitEqualToCpu) {
  const EmuCase& c = GetParam();
  const uint64_t seed = workloads::fresh_seed();
  Problem pr(c.parts, c.tokens, c.heads, c.dim, c.layout);
  pr.fill(seed, 4.0, 0.0, c.empty_fraction, c.all_empty_rows);
  if (c.poison_lse) {
    pr.pl.set({0, 1, 0, 0}, NAN);
    pr.pl.set({c.parts - 1, 2, 0, 0}, INFINITY);
  }
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  std::string message;
  ASSERT_EQ(run_combine(cpu, pr, &message), FP8ATTN_OK) << message;
  const std::vector<uint8_t> cpu_out = pr.out.bytes, cpu_lse = pr.lse.bytes;
  const DeviceRuntimeCounters& counters = *emu->impl.runtime_counters();
  const uint64_t launches = counters.launches.load(), allocations = counters.allocations.load();
  ASSERT_EQ(run_combine(emu, pr, &message), FP8ATTN_OK) << message;
  EXPECT_EQ(counters.launches.load() - launches, 1u);
  EXPECT_EQ(counters.allocations.load() - allocations, 0u);
  size_t differing = 0;
  for (size_t i = 0; i < cpu_out.size(); ++i) differing += cpu_out[i] != pr.out.bytes[i];
  std::printf("[%s] seed %llu: %zu of %zu output bytes differ\n", c.name.c_str(), static_cast<unsigned long long>(seed),
              differing, cpu_out.size());
  EXPECT_EQ(differing, 0u) << "seed " << seed;
  EXPECT_EQ(pr.lse.bytes, cpu_lse) << "seed " << seed;
  fp8attn_context_destroy(emu);
  fp8attn_context_destroy(cpu);
}

std::vector<EmuCase> emu_cases() {
  std::vector<EmuCase> v;
  EmuCase f32 = make_case("f32_dense", 3, 13, 2, 40);
  v.push_back(f32);
  EmuCase bf16 = make_case("bf16_in_bf16_out_empties", 5, 9, 2, 64);
  bf16.layout.o_dtype = bf16.layout.out_dtype = FP8ATTN_DTYPE_BF16;
  bf16.empty_fraction = 0.3;
  bf16.all_empty_rows = {3, 10};
  v.push_back(bf16);
  EmuCase one = make_case("one_part_bf16_out", 1, 6, 1, 33);
  one.layout.out_dtype = FP8ATTN_DTYPE_BF16;
  v.push_back(one);
  EmuCase many = make_case("256_parts", 256, 3, 2, 24);
  many.empty_fraction = 0.1;
  v.push_back(many);
  EmuCase transposed = make_case("transposed_padded_nan_lse", 4, 11, 3, 20);
  transposed.layout.po_order = {0, 2, 3, 1};
  transposed.layout.pl_order = {2, 1, 0};
  transposed.layout.out_order = {1, 0, 2};
  transposed.layout.lse_order = {1, 0};
  transposed.layout.pad = 2;
  transposed.poison_lse = true;
  v.push_back(transposed);
  EmuCase lse_only = make_case("head_dim_0_lse_only", 6, 7, 2, 0);
  lse_only.empty_fraction = 0.3;
  v.push_back(lse_only);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CombineEmulated, ::testing::ValuesIn(emu_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace fp8attn::combine_testing
