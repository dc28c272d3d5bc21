// fp8attn_attention_combine refuses each kind of bad input with its own status and a message in
// the error struct, and leaves the (poisoned) outputs untouched; the workspace query reports the
// same shape and dtype problems.
#include <cstdio>
#include <functional>

#include "tests/combine/combine_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::combine_testing {
namespace {

struct BadCase {
  std::string name;
  int32_t status;
  // Edits a valid problem's args (and may point them at other buffers it owns).
  std::function<void(Problem&, fp8attn_combine_args&)> edit;
  bool query_too = false;  ///< the workspace query must refuse it as well
};

class CombineBadInput : public ::testing::Test {
 protected:
  void SetUp() override { ctx_ = make_context(FP8ATTN_BACKEND_CPU); }
  void TearDown() override { fp8attn_context_destroy(ctx_); }

  void expect_refused(const BadCase& c, size_t workspace_bytes = 0, CUstream_st* stream = nullptr) {
    Problem pr(3, 10, 2, 16, {});
    pr.fill(workloads::fresh_seed());
    fp8attn_combine_args a = pr.args();
    c.edit(pr, a);
    pr.out.poison();
    pr.lse.poison();
    const std::vector<uint8_t> out_before = pr.out.bytes, lse_before = pr.lse.bytes, po_before = pr.po.bytes;
    fp8attn_error err{};
    err.struct_size = sizeof err;
    std::vector<uint8_t> ws(workspace_bytes + 1);
    EXPECT_EQ(fp8attn_attention_combine(ctx_, &a, ws.data(), workspace_bytes, stream, &err), c.status)
        << c.name << ": " << err.message;
    EXPECT_EQ(err.status, c.status) << c.name;
    EXPECT_GT(std::strlen(err.message), 10u) << c.name << ": no message";
    std::printf("[%s] %s: %s\n", c.name.c_str(), fp8attn_status_name(c.status), err.message);
    EXPECT_EQ(pr.out.bytes, out_before) << c.name << ": out was written";
    EXPECT_EQ(pr.lse.bytes, lse_before) << c.name << ": lse was written";
    EXPECT_EQ(pr.po.bytes, po_before) << c.name << ": partial_out was written";
    if (c.query_too) {
      size_t bytes = 12345;
      EXPECT_EQ(fp8attn_attention_combine_workspace_size(ctx_, &a, &bytes, &err), c.status) << c.name << " (query)";
      EXPECT_EQ(bytes, 12345u) << c.name << ": the query wrote its output";
    }
  }
  fp8attn_context ctx_ = nullptr;
};

TEST_F(CombineBadInput, EachRefusalHasItsStatusAndLeavesOutputsUntouched) {
  static HostTensor spare_lse(FP8ATTN_DTYPE_F32, {4, 10, 2});
  static HostTensor spare_o(FP8ATTN_DTYPE_F32, {257, 1, 1, 1});
  static HostTensor spare_l(FP8ATTN_DTYPE_F32, {257, 1, 1});
  const std::vector<BadCase> cases = {
      {"null_args", FP8ATTN_STATUS_NULL_POINTER, [](Problem&, fp8attn_combine_args&) {}, false},
      {"struct_size_0", FP8ATTN_STATUS_BAD_STRUCT_SIZE, [](Problem&, fp8attn_combine_args& a) { a.struct_size = 0; }, true},
      {"struct_size_small", FP8ATTN_STATUS_BAD_STRUCT_SIZE,
       [](Problem&, fp8attn_combine_args& a) { a.struct_size = offsetof(fp8attn_combine_args, lse); }, true},
      {"next_set", FP8ATTN_STATUS_BAD_EXTENSION, [](Problem&, fp8attn_combine_args& a) { a.next = &a; }, true},
      {"zero_parts", FP8ATTN_STATUS_BAD_SHAPE,
       [](Problem&, fp8attn_combine_args& a) { a.partial_out.shape[0] = 0, a.partial_lse.shape[0] = 0; }, true},
      {"257_parts", FP8ATTN_STATUS_BAD_SHAPE,
       [](Problem& pr, fp8attn_combine_args& a) {
         a.partial_out = spare_o.view();
         a.partial_lse = spare_l.view();
         a.out.shape[0] = 1, a.out.shape[1] = 1, a.out.shape[2] = 1;
         a.lse.shape[0] = 1, a.lse.shape[1] = 1;
         (void)pr;
       },
       true},
      {"parts_of_o_and_lse_disagree", FP8ATTN_STATUS_BAD_SHAPE,
       [](Problem&, fp8attn_combine_args& a) { a.partial_lse = spare_lse.view(); }, true},
      {"tokens_disagree", FP8ATTN_STATUS_BAD_SHAPE, [](Problem&, fp8attn_combine_args& a) { a.out.shape[0] = 9; }, true},
      {"head_dim_disagrees", FP8ATTN_STATUS_BAD_SHAPE, [](Problem&, fp8attn_combine_args& a) { a.out.shape[2] = 8; }, true},
      {"lse_heads_disagree", FP8ATTN_STATUS_BAD_SHAPE, [](Problem&, fp8attn_combine_args& a) { a.lse.shape[1] = 1; }, true},
      {"partial_out_rank_3", FP8ATTN_STATUS_BAD_SHAPE, [](Problem&, fp8attn_combine_args& a) { a.partial_out.rank = 3; }, true},
      {"partial_out_e4m3", FP8ATTN_STATUS_BAD_DTYPE,
       [](Problem&, fp8attn_combine_args& a) { a.partial_out.dtype = FP8ATTN_DTYPE_E4M3; }, true},
      {"partial_lse_bf16", FP8ATTN_STATUS_BAD_DTYPE,
       [](Problem&, fp8attn_combine_args& a) { a.partial_lse.dtype = FP8ATTN_DTYPE_BF16; }, true},
      {"out_i32", FP8ATTN_STATUS_BAD_DTYPE, [](Problem&, fp8attn_combine_args& a) { a.out.dtype = FP8ATTN_DTYPE_I32; }, true},
      {"lse_bf16", FP8ATTN_STATUS_BAD_DTYPE, [](Problem&, fp8attn_combine_args& a) { a.lse.dtype = FP8ATTN_DTYPE_BF16; }, true},
      {"out_on_cuda", FP8ATTN_STATUS_BAD_DEVICE,
       [](Problem&, fp8attn_combine_args& a) { a.out.device = FP8ATTN_DEVICE_CUDA; }, false},
      {"partial_out_null", FP8ATTN_STATUS_NULL_POINTER, [](Problem&, fp8attn_combine_args& a) { a.partial_out.data = nullptr; }},
      {"negative_stride", FP8ATTN_STATUS_BAD_STRIDE, [](Problem&, fp8attn_combine_args& a) { a.partial_out.stride[3] = -1; }},
      {"out_overlaps_itself", FP8ATTN_STATUS_BAD_STRIDE, [](Problem&, fp8attn_combine_args& a) { a.out.stride[1] = 1; }},
      {"lse_overlaps_itself", FP8ATTN_STATUS_BAD_STRIDE, [](Problem&, fp8attn_combine_args& a) { a.lse.stride[0] = 0; }},
      {"out_aliases_partial_out", FP8ATTN_STATUS_BAD_STRIDE,
       [](Problem&, fp8attn_combine_args& a) { a.out.data = a.partial_out.data; }},
      {"lse_aliases_partial_lse", FP8ATTN_STATUS_BAD_STRIDE,
       [](Problem&, fp8attn_combine_args& a) { a.lse.data = a.partial_lse.data; }},
      {"lse_aliases_out", FP8ATTN_STATUS_BAD_STRIDE,
       [](Problem& pr, fp8attn_combine_args& a) { a.lse.data = pr.out.bytes.data() + 8; }},
      {"out_inside_partial_out", FP8ATTN_STATUS_BAD_STRIDE,
       [](Problem& pr, fp8attn_combine_args& a) { a.out.data = pr.po.bytes.data() + 4 * 16; }},
  };
  for (const BadCase& c : cases) {
    if (c.name == "null_args") {
      fp8attn_error err{};
      err.struct_size = sizeof err;
      EXPECT_EQ(fp8attn_attention_combine(ctx_, nullptr, nullptr, 0, nullptr, &err), FP8ATTN_STATUS_NULL_POINTER);
      EXPECT_GT(std::strlen(err.message), 10u);
      size_t bytes = 0;
      EXPECT_EQ(fp8attn_attention_combine_workspace_size(ctx_, nullptr, &bytes, &err), FP8ATTN_STATUS_NULL_POINTER);
      continue;
    }
    expect_refused(c);
  }
}

TEST_F(CombineBadInput, StreamOnCpuAndNullContext) {
  expect_refused({"stream_on_cpu", FP8ATTN_STATUS_BAD_STREAM, [](Problem&, fp8attn_combine_args&) {}}, 0,
                 reinterpret_cast<CUstream_st*>(uintptr_t{0x1000}));
  Problem pr(2, 4, 1, 8, {});
  pr.fill(workloads::fresh_seed());
  fp8attn_combine_args a = pr.args();
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_attention_combine(nullptr, &a, nullptr, 0, nullptr, &err), FP8ATTN_STATUS_BAD_HANDLE);
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_attention_combine_workspace_size(ctx_, &a, nullptr, &err), FP8ATTN_STATUS_NULL_POINTER);
  // The query reads shapes and dtypes only: NULL data is fine there, and no workspace is needed
  // (each row's weights live in shared memory or on a worker's stack).
  a.partial_out.data = a.partial_lse.data = a.out.data = nullptr;
  EXPECT_EQ(fp8attn_attention_combine_workspace_size(ctx_, &a, &bytes, &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(bytes, 0u);
}

// Tensors with no element (0 tokens) are accepted with NULL data and write nothing.
TEST_F(CombineBadInput, ZeroTokensIsANoOp) {
  Problem pr(2, 0, 2, 8, {});
  fp8attn_combine_args a = pr.args();
  a.partial_out.data = a.partial_lse.data = a.out.data = nullptr;
  a.lse.data = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_attention_combine(ctx_, &a, nullptr, 0, nullptr, &err), FP8ATTN_OK) << err.message;
}

}  // namespace
}  // namespace fp8attn::combine_testing
