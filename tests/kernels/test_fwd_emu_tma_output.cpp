// The attention forward's BF16 output through shared memory and TMA stores (fwd_epilogue.hpp,
// store_output_tma): which calls the plan sends that way, and that a strided output with gaps
// between its rows and sequences comes out bit-equal to the CPU engine with every gap untouched
// (the map's bounds clip the rows past each sequence). Fresh random inputs, a poisoned output.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::testing {
namespace {

using workloads::AttentionShape;
using workloads::dense_host_tensor;

constexpr uint16_t kPoison = 0x7FC1;  // a BF16 NaN no result has

/// An output [batch, seq, heads, dim] with `pad_dim` elements after each row of heads and
/// `pad_rows` rows after each sequence: the gaps a TMA box must not write.
struct PaddedOut {
  int64_t seq_stride, batch_stride;
  std::vector<uint16_t> data;
  PaddedOut(const AttentionShape& s, int64_t pad_dim, int64_t pad_rows)
      : seq_stride(s.heads_q * s.head_dim + pad_dim), batch_stride((s.seqlen_q + pad_rows) * seq_stride),
        data(static_cast<size_t>(s.batch * batch_stride), kPoison) {}
  fp8attn_tensor tensor(const AttentionShape& s) {
    fp8attn_tensor t = dense_host_tensor(data.data(), FP8ATTN_DTYPE_BF16, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
    t.stride[0] = batch_stride;
    t.stride[1] = seq_stride;
    return t;
  }
  bool inside(const AttentionShape& s, int64_t i) const {
    const int64_t row = i % batch_stride / seq_stride, col = i % seq_stride;
    return row < s.seqlen_q && col < s.heads_q * s.head_dim;
  }
};

struct Call {
  AttentionShape shape;
  int32_t input = FP8ATTN_DTYPE_E4M3;
  int32_t out = FP8ATTN_DTYPE_BF16;
  int32_t promote = 0;
  int64_t pad_dim = 0;  ///< elements after each output row of heads
  bool varlen = false;
};

/// Whether the plan of `call` stores O through TMA (FwdArguments::tma_out).
bool plans_tma_out(const Call& call) {
  const AttentionShape& s = call.shape;
  const int64_t elem = call.input == FP8ATTN_DTYPE_BF16 ? 2 : 1;
  std::vector<uint8_t> q(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim * elem), 0x38);
  std::vector<uint8_t> kv(static_cast<size_t>(s.batch * s.seqlen_k * s.heads_kv * s.head_dim * elem), 0x38);
  PaddedOut out(s, call.pad_dim, 0);
  std::vector<float> o32(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim));
  std::vector<int32_t> cu_q, cu_k;
  fp8attn_attention_args args{};
  args.struct_size = sizeof args;
  const int64_t b = call.varlen ? 1 : s.batch, rows_q = call.varlen ? s.batch * s.seqlen_q : s.seqlen_q,
                rows_k = call.varlen ? s.batch * s.seqlen_k : s.seqlen_k;
  args.q = dense_host_tensor(q.data(), call.input, {b, rows_q, s.heads_q, s.head_dim});
  args.k = dense_host_tensor(kv.data(), call.input, {b, rows_k, s.heads_kv, s.head_dim});
  args.v = dense_host_tensor(kv.data(), call.input, {b, rows_k, s.heads_kv, s.head_dim});
  if (call.out == FP8ATTN_DTYPE_F32) args.out = dense_host_tensor(o32.data(), call.out, {b, rows_q, s.heads_q, s.head_dim});
  else if (call.out == FP8ATTN_DTYPE_E4M3) args.out = dense_host_tensor(q.data(), call.out, {b, rows_q, s.heads_q, s.head_dim});
  else args.out = call.varlen ? dense_host_tensor(out.data.data(), call.out, {b, rows_q, s.heads_q, s.head_dim}) : out.tensor(s);
  if (call.varlen) {  // packed: rank-3 tensors [rows, heads, dim]
    args.q = dense_host_tensor(q.data(), call.input, {rows_q, s.heads_q, s.head_dim});
    args.k = dense_host_tensor(kv.data(), call.input, {rows_k, s.heads_kv, s.head_dim});
    args.v = dense_host_tensor(kv.data(), call.input, {rows_k, s.heads_kv, s.head_dim});
    args.out = dense_host_tensor(out.data.data(), call.out, {rows_q, s.heads_q, s.head_dim});
    for (int64_t i = 0; i <= s.batch; ++i) {
      cu_q.push_back(static_cast<int32_t>(i * s.seqlen_q));
      cu_k.push_back(static_cast<int32_t>(i * s.seqlen_k));
    }
    args.cu_seqlens_q = dense_host_tensor(cu_q.data(), FP8ATTN_DTYPE_I32, {s.batch + 1});
    args.cu_seqlens_k = dense_host_tensor(cu_k.data(), FP8ATTN_DTYPE_I32, {s.batch + 1});
  }
  fp8attn_attention_desc desc = workloads::make_desc(s, call.input, call.out);
  desc.pv_promote_interval = call.promote;
  const AttentionConfig config = make_attention_config(desc);
  const AttentionProblem problem = make_attention_problem(config, args, FP8ATTN_DEVICE_HOST);
  return gpu::plan_attention_fwd(config, problem, nullptr, 2).args.tma_out;
}

TEST(FwdTmaOutput, PlanStoresThroughTmaWhereTheKernelAndTheLayoutAllow) {
  const AttentionShape s{2, 100, 130, 2, 1, 128};
  EXPECT_TRUE(plans_tma_out({s}));
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 64}}));
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 64}, FP8ATTN_DTYPE_BF16}));
  EXPECT_TRUE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 1}));
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 256}, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 2}));
  EXPECT_TRUE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 0, 8})) << "rows padded by 16 bytes";
  // E4M3 off and every-block at 256 store a half and a quarter of O at a time (fwd_config.hpp,
  // kORounds).
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 256}}));
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 256}, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 1}));
  // BF16 inputs at head_dims 128 and 256 stage O in Q's buffer (fwd_config.hpp, kOStageInQ).
  EXPECT_TRUE(plans_tma_out({s, FP8ATTN_DTYPE_BF16}));
  EXPECT_TRUE(plans_tma_out({{2, 100, 130, 2, 1, 256}, FP8ATTN_DTYPE_BF16}));
  // No stage in the kernel (no shared-memory or register room for it: fwd_config.hpp).
  EXPECT_FALSE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 2}));
  // Outputs the stage does not hold, packed sequences, and a row stride TMA cannot write.
  EXPECT_FALSE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32}));
  EXPECT_FALSE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_E4M3}));
  EXPECT_FALSE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 0, 0, true}));
  EXPECT_FALSE(plans_tma_out({s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16, 0, 3})) << "rows padded by 6 bytes";
}

/// One forward of `s` on `backend` into a padded output.
PaddedOut run_padded(const AttentionShape& s, int32_t input, workloads::QuantizedInputs& in, int32_t backend,
                     const std::string& schedule, int32_t promote) {
  PaddedOut out(s, 8, 3);
  if (!schedule.empty()) setenv("FP8ATTN_EMULATOR_SCHEDULE", schedule.c_str(), 1);
  // Two CTAs, so that each runs several tiles: a stage reused, Q reloaded after its stores.
  setenv("FP8ATTN_EMULATOR_SMS", "2", 1);
  fp8attn_context ctx = training_test::make_context(backend);
  unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
  unsetenv("FP8ATTN_EMULATOR_SMS");
  fp8attn_attention_desc desc = workloads::make_desc(s, input, FP8ATTN_DTYPE_BF16);
  desc.causal = 1;
  desc.pv_promote_interval = promote;
  fp8attn_plan plan = nullptr;
  EXPECT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);
  fp8attn_attention_args args{};
  args.struct_size = sizeof args;
  args.q = dense_host_tensor(in.q.data(), input, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  args.k = dense_host_tensor(in.k.data(), input, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  args.v = dense_host_tensor(in.v.data(), input, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  args.out = out.tensor(s);
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_plan_workspace_size(plan, s.batch, s.seqlen_q, s.seqlen_k, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> workspace(bytes == 0 ? 1 : bytes, 0xCD);
  fp8attn_error err = training_test::make_error();
  EXPECT_EQ(fp8attn_attention_forward(plan, &args, workspace.data(), workspace.size(), nullptr, &err), FP8ATTN_OK)
      << err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  return out;
}

/// The padded output (16 bytes after each row, 3 rows after each sequence) through TMA stores
/// (asserted from the plan first), against the engine under every emulator schedule.
void expect_padded_output_matches_the_engine(const AttentionShape& s, int32_t input, int32_t promote = 0) {
  ASSERT_TRUE(plans_tma_out({s, input, FP8ATTN_DTYPE_BF16, promote, 8})) << "the plan does not store O through TMA";
  const uint64_t seed = workloads::fresh_seed();
  workloads::QuantizedInputs in =
      workloads::quantize(workloads::normal_inputs(s, seed), input, workloads::ScaleGranularity::PerHead);
  const PaddedOut cpu = run_padded(s, input, in, FP8ATTN_BACKEND_CPU, "", promote);
  for (const std::string& schedule : emulator_schedules(seed)) {
    const PaddedOut emu = run_padded(s, input, in, FP8ATTN_BACKEND_EMULATOR, schedule, promote);
    int64_t differ = 0, gaps_written = 0, poisoned = 0;
    for (size_t i = 0; i < emu.data.size(); ++i) {
      if (emu.inside(s, static_cast<int64_t>(i))) {
        differ += emu.data[i] != cpu.data[i];
        poisoned += cpu.data[i] == kPoison;
      } else {
        gaps_written += emu.data[i] != kPoison;
      }
    }
    EXPECT_EQ(poisoned, 0) << "the engine left output elements unwritten";
    EXPECT_EQ(differ, 0) << "hd" << s.head_dim << " schedule " << schedule << ", seed " << seed;
    EXPECT_EQ(gaps_written, 0) << "hd" << s.head_dim << ": elements outside the output written, schedule "
                               << schedule << ", seed " << seed;
    std::printf("hd%d %s [%s]: %zu elements, %lld differ, %lld gap elements written\n", s.head_dim,
                input == FP8ATTN_DTYPE_BF16 ? "BF16" : "E4M3", schedule.c_str(), emu.data.size(),
                static_cast<long long>(differ), static_cast<long long>(gaps_written));
  }
}

TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsE4m3HeadDim128) {
  expect_padded_output_matches_the_engine({2, 100, 150, 2, 1, 128}, FP8ATTN_DTYPE_E4M3);
}

// O staged in Q's buffer; causal with more queries than keys, so the first query tile sees no key
// (no Q load: its O, all zeros, is stored from registers while the producer may load the next Q).
TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsBf16HeadDim128InQsBuffer) {
  expect_padded_output_matches_the_engine({2, 200, 60, 2, 1, 128}, FP8ATTN_DTYPE_BF16);
}

TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsBf16HeadDim256InQsBuffer) {
  expect_padded_output_matches_the_engine({1, 150, 170, 2, 2, 256}, FP8ATTN_DTYPE_BF16);
}

// Half of O through the stage at a time (two rounds of stores).
TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsE4m3HeadDim256InTwoRounds) {
  expect_padded_output_matches_the_engine({2, 140, 110, 2, 1, 256}, FP8ATTN_DTYPE_E4M3);
}

// A quarter of O through the stage at a time (four rounds): the every-block kernel at 256, whose
// stage shares the shared memory with a paged cache's per-token descales.
TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsE4m3HeadDim256EveryBlockInFourRounds) {
  expect_padded_output_matches_the_engine({2, 140, 290, 2, 1, 256}, FP8ATTN_DTYPE_E4M3, 1);
}

TEST(FwdTmaOutput, PaddedOutputMatchesTheEngineAndKeepsItsGapsBf16HeadDim64) {
  expect_padded_output_matches_the_engine({2, 70, 90, 3, 1, 64}, FP8ATTN_DTYPE_BF16);
}

}  // namespace
}  // namespace fp8attn::testing
