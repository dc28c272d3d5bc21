// fp8attn_attention_backward and fp8attn_plan_backward_workspace_size on bad arguments: each gets
// its own status and a message naming the argument, and a failed call leaves dq, dk and dv
// exactly as they were (poisoned with kGradientPoison before the call) — the checks all run
// before any output is written. Inputs are valid except for the one field each case breaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tools/common/backward_runner.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

bool all_poison(const std::vector<unsigned char>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == kGradientPoison; });
}

struct BadCase {
  const char* name;
  std::function<void(fp8attn_attention_bwd_args&)> breaks;
  int32_t status;
  const char* message_part;
};

class BackwardBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = fresh_seed();
    in_ = quantize(normal_inputs(shape_, seed_), FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
    dout_ = normal_bf16(static_cast<size_t>(shape_.batch * shape_.seqlen_q * shape_.heads_q * shape_.head_dim), seed_);
    desc_ = make_desc(shape_, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
    desc_.causal = 1;
    session_ = std::make_unique<BackwardSession>(desc_, shape_, in_, dout_);
    session_->forward();
  }

  /// Runs the case and checks status, message and untouched outputs.
  void expect_refused(const BadCase& c, size_t workspace_bytes) {
    fp8attn_attention_bwd_args a = session_->args();
    c.breaks(a);
    const int32_t status = session_->backward_with(a, workspace_bytes);
    const std::string message = session_->error().message;
    EXPECT_EQ(status, c.status) << c.name << ": got " << fp8attn_status_name(status) << " (" << message << ")";
    EXPECT_EQ(session_->error().status, c.status) << c.name;
    EXPECT_NE(message.find(c.message_part), std::string::npos)
        << c.name << ": message \"" << message << "\" does not mention \"" << c.message_part << "\"";
    EXPECT_TRUE(all_poison(session_->dq_bytes())) << c.name << ": dq written by a failed call";
    EXPECT_TRUE(all_poison(session_->dk_bytes())) << c.name << ": dk written by a failed call";
    EXPECT_TRUE(all_poison(session_->dv_bytes())) << c.name << ": dv written by a failed call";
  }

  AttentionShape shape_{2, 70, 90, 4, 2, 64};
  uint64_t seed_ = 0;
  QuantizedInputs in_;
  std::vector<uint16_t> dout_;
  fp8attn_attention_desc desc_{};
  std::unique_ptr<BackwardSession> session_;
};

TEST_F(BackwardBadInput, EachBadArgumentHasItsStatusAndMessageAndWritesNothing) {
  const std::vector<BadCase> cases = {
      {"struct_size 0", [](auto& a) { a.struct_size = 0; }, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size"},
      {"next set", [](auto& a) { a.next = &a; }, FP8ATTN_STATUS_BAD_EXTENSION, "next"},
      {"deterministic 2", [](auto& a) { a.deterministic = 2; }, FP8ATTN_STATUS_BAD_OPTION, "deterministic"},
      {"q F32", [](auto& a) { a.q.dtype = FP8ATTN_DTYPE_F32; }, FP8ATTN_STATUS_BAD_DTYPE, "args.q"},
      {"dout E4M3", [](auto& a) { a.dout.dtype = FP8ATTN_DTYPE_E4M3; }, FP8ATTN_STATUS_BAD_DTYPE, "args.dout"},
      {"dq E4M3", [](auto& a) { a.dq.dtype = FP8ATTN_DTYPE_E4M3; }, FP8ATTN_STATUS_BAD_DTYPE, "args.dq"},
      {"dk F32", [](auto& a) { a.dk.dtype = FP8ATTN_DTYPE_F32; }, FP8ATTN_STATUS_BAD_DTYPE, "args.dk"},
      {"lse BF16", [](auto& a) { a.lse.dtype = FP8ATTN_DTYPE_BF16; }, FP8ATTN_STATUS_BAD_DTYPE, "args.lse"},
      {"lse NULL", [](auto& a) { a.lse.data = nullptr; }, FP8ATTN_STATUS_NULL_POINTER, "args.lse"},
      {"dv NULL", [](auto& a) { a.dv.data = nullptr; }, FP8ATTN_STATUS_NULL_POINTER, "args.dv"},
      {"dout NULL", [](auto& a) { a.dout.data = nullptr; }, FP8ATTN_STATUS_NULL_POINTER, "args.dout"},
      {"out NULL", [](auto& a) { a.out.data = nullptr; }, FP8ATTN_STATUS_NULL_POINTER, "args.out"},
      {"dout shorter", [](auto& a) { a.dout.shape[1] -= 1; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dout"},
      {"dq other heads", [](auto& a) { a.dq.shape[2] = 2; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dq"},
      {"dk other batch", [](auto& a) { a.dk.shape[0] = 1; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dk"},
      {"dv rank 3", [](auto& a) { a.dv.rank = 3; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dv"},
      {"k seqlen ≠ v", [](auto& a) { a.k.shape[1] -= 1; }, FP8ATTN_STATUS_BAD_SHAPE, "args.v"},
      {"dq rows overlap", [](auto& a) { a.dq.stride[1] = 0; }, FP8ATTN_STATUS_BAD_STRIDE, "args.dq"},
      {"dk negative stride", [](auto& a) { a.dk.stride[3] = -1; }, FP8ATTN_STATUS_BAD_STRIDE, "args.dk"},
      {"dv on CUDA", [](auto& a) { a.dv.device = FP8ATTN_DEVICE_CUDA; }, FP8ATTN_STATUS_BAD_DEVICE, "args.dv"},
      {"tensor struct_size 0", [](auto& a) { a.dq.struct_size = 0; }, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "args.dq"},
      {"cu_seqlens on padded", [](auto& a) { a.cu_seqlens_q = a.lse; }, FP8ATTN_STATUS_BAD_SHAPE, "cu_seqlens"},
  };
  for (const BadCase& c : cases) expect_refused(c, session_->workspace_bytes());
  expect_refused({"workspace too small", [](auto&) {}, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL, "workspace"},
                 session_->backward_workspace_bytes() - 1);
  std::printf("[backward bad input] %zu cases refused with their status; outputs untouched (seed %llu)\n",
              cases.size() + 1, static_cast<unsigned long long>(seed_));
}

// head_dim is the last extent: a gradient or dout narrower than its tensor would leave columns
// unwritten (or unread); each is refused on its own. 32 keeps the rows apart (stride 64), so
// only the extent check can refuse it.
TEST_F(BackwardBadInput, HeadDimOfDoutAndEachGradientIsChecked) {
  const std::vector<BadCase> cases = {
      {"dout head_dim 32", [](auto& a) { a.dout.shape[3] = 32; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dout"},
      {"dq head_dim 32", [](auto& a) { a.dq.shape[3] = 32; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dq"},
      {"dk head_dim 32", [](auto& a) { a.dk.shape[3] = 32; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dk"},
      {"dv head_dim 32", [](auto& a) { a.dv.shape[3] = 32; }, FP8ATTN_STATUS_BAD_SHAPE, "args.dv"},
  };
  for (const BadCase& c : cases) expect_refused(c, session_->workspace_bytes());
  std::printf("[backward head_dim] dout, dq, dk, dv refused with BAD_SHAPE (seed %llu)\n",
              static_cast<unsigned long long>(seed_));
}

TEST_F(BackwardBadInput, NullHandlesArgsAndStreams) {
  fp8attn_error err{sizeof err, 0, {0}};
  const fp8attn_attention_bwd_args a = session_->args();
  std::vector<unsigned char> ws(session_->workspace_bytes());
  EXPECT_EQ(fp8attn_attention_backward(nullptr, &a, ws.data(), ws.size(), nullptr, &err), FP8ATTN_STATUS_BAD_HANDLE);
  EXPECT_NE(std::string(err.message).find("plan"), std::string::npos) << err.message;
  EXPECT_EQ(fp8attn_attention_backward(session_->plan(), nullptr, ws.data(), ws.size(), nullptr, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_NE(std::string(err.message).find("fp8attn_attention_bwd_args"), std::string::npos) << err.message;
  EXPECT_EQ(fp8attn_attention_backward(session_->plan(), &a, nullptr, ws.size(), nullptr, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_NE(std::string(err.message).find("workspace"), std::string::npos) << err.message;
  auto* stream = reinterpret_cast<struct CUstream_st*>(&err);
  EXPECT_EQ(fp8attn_attention_backward(session_->plan(), &a, ws.data(), ws.size(), stream, &err),
            FP8ATTN_STATUS_BAD_STREAM);
  // NULL err is allowed: the status alone comes back.
  EXPECT_EQ(fp8attn_attention_backward(nullptr, &a, ws.data(), ws.size(), nullptr, nullptr), FP8ATTN_STATUS_BAD_HANDLE);
  EXPECT_TRUE(all_poison(session_->dq_bytes()) && all_poison(session_->dk_bytes()) &&
              all_poison(session_->dv_bytes()))
      << "a refused call wrote a gradient";

  size_t bytes = 0;
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(nullptr, 1, 1, 1, &bytes, &err), FP8ATTN_STATUS_BAD_HANDLE);
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(session_->plan(), 1, 1, 1, nullptr, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(session_->plan(), 0, 1, 1, &bytes, &err), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(session_->plan(), 1, int64_t{1} << 31, 1, &bytes, &err),
            FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(bytes, 0u) << "a failed query wrote its output";
  // A valid call after the failures still works.
  EXPECT_EQ(session_->try_backward(), FP8ATTN_OK) << session_->error().message;
}

/// An FP8 plan, and a backend without a backward, are refused with their statuses.
TEST(AttentionBackwardRefusals, Fp8PlanAndOtherBackends) {
  fp8attn_error err{sizeof err, 0, {0}};
  fp8attn_context_options co{};
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  fp8attn_context ctx = nullptr;
  ASSERT_EQ(fp8attn_context_create(&co, &ctx, &err), FP8ATTN_OK) << err.message;
  const AttentionShape s{1, 64, 64, 1, 1, 64};
  fp8attn_plan fp8 = nullptr;
  const auto fp8_desc = make_desc(s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
  ASSERT_EQ(fp8attn_plan_create(ctx, &fp8_desc, &fp8, &err), FP8ATTN_OK) << err.message;
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(fp8, 1, 64, 64, &bytes, &err), FP8ATTN_STATUS_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::string(err.message).find("BF16"), std::string::npos) << err.message;
  fp8attn_attention_bwd_args a{};
  a.struct_size = sizeof a;
  EXPECT_EQ(fp8attn_attention_backward(fp8, &a, nullptr, 0, nullptr, &err), FP8ATTN_STATUS_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::string(err.message).find("input_dtype"), std::string::npos) << err.message;
  fp8attn_plan_destroy(fp8);
  fp8attn_context_destroy(ctx);

  // REFERENCE has no backward: the query and the call say so, and the call writes nothing.
  const auto in = quantize(normal_inputs(s, fresh_seed()), FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
  BackwardOptions o;
  o.backend = FP8ATTN_BACKEND_REFERENCE;
  BackwardSession ref(make_desc(s, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16), s, in,
                      normal_bf16(static_cast<size_t>(64 * 64), 1), o);
  ref.forward();
  EXPECT_EQ(fp8attn_plan_backward_workspace_size(ref.plan(), 1, 64, 64, &bytes, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("CPU backend"), std::string::npos) << err.message;
  EXPECT_EQ(ref.try_backward(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_TRUE(all_poison(ref.dq_bytes()) && all_poison(ref.dk_bytes()) && all_poison(ref.dv_bytes()));
}

/// Packed layout: bad cu_seqlens are refused before anything is written.
TEST(AttentionBackwardRefusals, BadPackedSequenceLengths) {
  const std::vector<int32_t> cu_q{0, 50, 120}, cu_k{0, 60, 100};
  const AttentionShape s{1, cu_q.back(), cu_k.back(), 2, 1, 64};
  const auto in = quantize(normal_inputs(s, fresh_seed()), FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
  BackwardOptions o;
  o.cu_seqlens_q = &cu_q;
  o.cu_seqlens_k = &cu_k;
  BackwardSession session(make_desc(s, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16), s, in,
                          normal_bf16(static_cast<size_t>(s.seqlen_q * 2 * 64), 2), o);
  session.forward();
  std::vector<int32_t> decreasing{0, 70, 60, 100};
  fp8attn_attention_bwd_args a = session.args();
  a.cu_seqlens_k.data = decreasing.data();
  a.cu_seqlens_k.shape[0] = 4;
  EXPECT_EQ(session.backward_with(a, session.workspace_bytes()), FP8ATTN_STATUS_BAD_SEQLENS);
  EXPECT_NE(std::string(session.error().message).find("cu_seqlens_k"), std::string::npos) << session.error().message;
  EXPECT_TRUE(all_poison(session.dq_bytes()) && all_poison(session.dk_bytes()) && all_poison(session.dv_bytes()));
  a = session.args();
  a.cu_seqlens_q.data = nullptr;
  EXPECT_EQ(session.backward_with(a, session.workspace_bytes()), FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(session.try_backward(), FP8ATTN_OK) << session.error().message;
}

}  // namespace
}  // namespace fp8attn::testing
