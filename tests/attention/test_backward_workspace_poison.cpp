// The CPU backward owes nothing to the contents of its workspace: a workspace filled with NaN
// bytes, or with random garbage, gives gradients bit-equal to a zeroed one (deterministic mode),
// and the queries of a sequence with no keys get dq = 0 exactly, not whatever the dq accumulator
// held before the call (no key block writes it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "tools/common/backward_runner.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

struct Gradients {
  std::vector<unsigned char> dq, dk, dv;
};

/// Runs the backward of `session`'s arguments into fresh poisoned gradient buffers with the
/// given workspace contents.
Gradients backward_with_workspace(const BackwardSession& session, std::vector<unsigned char> workspace) {
  Gradients g{std::vector<unsigned char>(session.dq_bytes().size(), kGradientPoison),
              std::vector<unsigned char>(session.dk_bytes().size(), kGradientPoison),
              std::vector<unsigned char>(session.dv_bytes().size(), kGradientPoison)};
  fp8attn_attention_bwd_args a = session.args();
  a.dq.data = g.dq.data();
  a.dk.data = g.dk.data();
  a.dv.data = g.dv.data();
  fp8attn_error err{};
  err.struct_size = sizeof err;
  const int32_t s = fp8attn_attention_backward(session.plan(), &a, workspace.data(), workspace.size(), nullptr, &err);
  EXPECT_EQ(s, FP8ATTN_OK) << fp8attn_status_name(s) << ": " << err.message;
  return g;
}

TEST(AttentionBackwardWorkspace, PoisonedWorkspaceGivesTheSameGradientsAndZeroDqWithoutKeys) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  // Sequence 1 has queries and no keys; sequence 2 keys and no queries; 0 and 3 both.
  const std::vector<int32_t> cu_q{0, 37, 70, 70, 141}, cu_k{0, 45, 45, 90, 163};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 2, 1, 64};
  const auto in = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
  const auto dout = normal_bf16(static_cast<size_t>(shape.seqlen_q * shape.heads_q * shape.head_dim), seed ^ 0x5eed);
  BackwardOptions o;
  o.cu_seqlens_q = &cu_q;
  o.cu_seqlens_k = &cu_k;
  o.num_threads = 2;
  BackwardSession session(make_desc(shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16), shape, in, dout, o);
  session.forward();
  const size_t bytes = session.workspace_bytes();

  const Gradients zeroed = backward_with_workspace(session, std::vector<unsigned char>(bytes, 0));
  std::vector<unsigned char> garbage(bytes);
  std::mt19937_64 rng(seed ^ 0x9a7ba9e);
  for (auto& b : garbage) b = static_cast<unsigned char>(rng());
  const struct {
    const char* name;
    std::vector<unsigned char> bytes;
  } workspaces[] = {{"NaN bytes (0xFF)", std::vector<unsigned char>(bytes, 0xFF)},
                    {"0x7F bytes (3.4e38 as F32)", std::vector<unsigned char>(bytes, 0x7F)},
                    {"random bytes", garbage}};
  // The zeroed run must have written every element, and dq = 0 for sequence 1 (no keys).
  const int64_t row_elems = shape.heads_q * shape.head_dim;
  for (int64_t r = 0; r < shape.seqlen_q; ++r)
    for (int64_t e = 0; e < row_elems; ++e) {
      uint16_t bits = 0;
      std::memcpy(&bits, zeroed.dq.data() + 2 * (r * row_elems + e), 2);
      const bool no_keys = r >= cu_q[1] && r < cu_q[2];
      if (no_keys) {
        ASSERT_EQ(bits & 0x7FFF, 0) << "dq of row " << r << " (a sequence with no keys) is not 0, seed " << seed;
      } else {
        ASSERT_TRUE(std::isfinite(num::bf16_to_float(bits)) && bits != 0x7F7F)
            << "dq of row " << r << " not written, seed " << seed;
      }
    }
  for (const auto& w : workspaces) {
    const Gradients g = backward_with_workspace(session, w.bytes);
    EXPECT_TRUE(g.dq == zeroed.dq) << "dq differs with a workspace of " << w.name << ", seed " << seed;
    EXPECT_TRUE(g.dk == zeroed.dk) << "dk differs with a workspace of " << w.name << ", seed " << seed;
    EXPECT_TRUE(g.dv == zeroed.dv) << "dv differs with a workspace of " << w.name << ", seed " << seed;
  }
}

}  // namespace
}  // namespace fp8attn::testing
