// The CPU combine's per-ISA builds (lib/combine/isa) compute the same bits: each shape is merged
// under every build this CPU can run, from the baseline up, and every output byte must equal the
// baseline's. Under qemu without AVX-512 (tests/portability) the best build is AVX2.
// NOTE: the merge is called through the library's C++ entry (combine_on_cpu), not the C API: the
// C API resolves into libfp8attn.so, whose copy of the active ISA set_active_cpu_isa does not
// reach, so every run there would take the same build.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "lib/combine/combine_problem.hpp"
#include "lib/combine/combine_rows.hpp"
#include "lib/combine/cpu_combine.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "tests/combine/combine_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::combine_testing {
namespace {

struct IsaCase {
  int64_t parts, tokens, heads, dim;
  Layout layout;
};

std::vector<IsaCase> isa_cases() {
  Layout f32, bf16, strided;
  bf16.o_dtype = bf16.out_dtype = FP8ATTN_DTYPE_BF16;
  strided.po_order = {1, 0, 2, 3};  // parts inside tokens: not one run per item
  strided.pad = 3;
  Layout f32_to_bf16;
  f32_to_bf16.out_dtype = FP8ATTN_DTYPE_BF16;
  return {
      {2, 37, 3, 128, f32}, {8, 19, 4, 72, f32},  {33, 9, 2, 256, f32},     {5, 23, 3, 128, bf16},
      {3, 17, 2, 40, bf16}, {4, 21, 3, 64, strided}, {6, 13, 2, 96, f32_to_bf16},
  };
}

TEST(CombineIsa, EveryBuildMergesToTheSameBits) {
  const CpuIsa best = best_cpu_isa();
  const uint64_t seed = workloads::fresh_seed();
  int compared = 0;
  for (const IsaCase& c : isa_cases()) {
    Problem pr(c.parts, c.tokens, c.heads, c.dim, c.layout);
    pr.fill(seed + static_cast<uint64_t>(c.parts * 131 + c.dim), 3.0, 0.0, 0.15, {1});
    std::vector<uint8_t> first;
    for (int isa = 0; isa <= static_cast<int>(best); ++isa)
      for (const bool stream_out : {false, true}) {
        ASSERT_TRUE(set_active_cpu_isa(static_cast<CpuIsa>(isa)));
        pr.out.poison();
        pr.lse.poison();
        const sm90::combine::CombineParams params = combine::make_combine_params(pr.args(), FP8ATTN_DEVICE_HOST, true);
        ThreadPool pool(2);
        combine::combine_on_cpu(params, pool, stream_out);
        std::vector<uint8_t> got = pr.out.bytes;
        got.insert(got.end(), pr.lse.bytes.begin(), pr.lse.bytes.end());
        if (first.empty()) first = got;
        EXPECT_TRUE(got == first) << combine::combine_row_ops().isa << (stream_out ? " streaming out" : "")
                                  << " differs from the baseline build: parts " << c.parts << ", dim " << c.dim
                                  << ", seed " << seed;
        ++compared;
      }
  }
  set_active_cpu_isa(best);
  std::printf("compared the builds up to %s (%d runs)\n", cpu_isa_name(best), compared);
}

}  // namespace
}  // namespace fp8attn::combine_testing
