// fp8attn_quantize_async on the emulator backend: the GpuBackend host code and the Hopper
// quantizer kernels (SIMT emulator) against the CPU quantizer (fp8attn_quantize on a CPU
// context). Inputs: FlashAttention-3's outlier distribution (N(0,1) + N(0,100) with probability
// 0.01), F32 and BF16, padded and packed, every granularity, rotation on and off. Output bytes,
// descales and the amax must be bit-equal, and each call must neither allocate nor synchronize.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "tests/backend/backend_test_support.hpp"
#include "tests/quantize/quantize_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::backend_testing {
namespace {

using quant::testing::make_tensor;
using quant::testing::options;
using quant::testing::outlier_values;

struct Case {
  std::string name;
  bool packed, bf16;
  int64_t batch, seqlen, heads, dim;
  std::vector<int32_t> seqlens;  // packed
  fp8attn_quantize_options opts;
};

/// One problem's buffers: the input, and poisoned outputs for two runs.
struct Buffers {
  std::vector<float> in_f32;
  std::vector<uint16_t> in_bf16;
  std::vector<int32_t> cu;
  std::vector<int64_t> shape, stride;
  int64_t max_seqlen = 0, descale_count = 0;
  std::vector<int64_t> descale_shape;

  Buffers(const Case& c, uint64_t seed) {
    cu = {0};
    for (int32_t n : c.seqlens) cu.push_back(cu.back() + n);
    const int64_t rows = c.packed ? cu.back() : c.batch * c.seqlen;
    max_seqlen = c.seqlen;
    if (c.packed) {
      max_seqlen = 0;
      for (int32_t n : c.seqlens) max_seqlen = std::max<int64_t>(max_seqlen, n);
    }
    const std::vector<float> v = outlier_values(static_cast<size_t>(rows * c.heads * c.dim), seed, c.bf16);
    in_f32 = v;
    for (float x : v) in_bf16.push_back(num::float_to_bf16(x));
    shape = c.packed ? std::vector<int64_t>{rows, c.heads, c.dim} : std::vector<int64_t>{c.batch, c.seqlen, c.heads, c.dim};
    stride.assign(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) stride[i] = stride[i + 1] * shape[i + 1];
    const int64_t batch = c.packed ? static_cast<int64_t>(c.seqlens.size()) : c.batch;
    const int64_t groups = c.heads / (c.opts.head_group == 0 ? 1 : c.opts.head_group);
    // NOTE: whole vectors moved in, not initializer lists assigned: GCC 12 warns
    // (-Wstringop-overflow) inside the copy an initializer-list assignment inlines.
    if (c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR) descale_shape = std::vector<int64_t>{1};
    if (c.opts.granularity == FP8ATTN_QUANT_PER_HEAD) descale_shape = std::vector<int64_t>{batch, groups};
    if (c.opts.granularity == FP8ATTN_QUANT_PER_BLOCK)
      descale_shape = std::vector<int64_t>{batch, groups, quant::testing::per_block_count(max_seqlen, c.opts)};
    descale_count = 1;
    for (int64_t e : descale_shape) descale_count *= e;
  }
  int64_t elements() const { return static_cast<int64_t>(in_f32.size()); }
};

struct Result {
  int32_t status = -1;
  std::vector<uint8_t> out;
  std::vector<float> descale;
  float amax = -1.0f;
};

fp8attn_tensor dense(void* data, int32_t dtype, const std::vector<int64_t>& shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) stride[i] = stride[i + 1] * shape[i + 1];
  return make_tensor(data, dtype, shape, stride);
}

/// Runs the quantizer on `ctx`: the blocking call on CPU contexts, the async call elsewhere.
Result run(fp8attn_context ctx, const Case& c, Buffers& b, bool async) {
  Result r;
  r.out.assign(static_cast<size_t>(b.elements()), 0xEE);
  r.descale.assign(static_cast<size_t>(b.descale_count), -7.0f);
  void* in_data = c.bf16 ? static_cast<void*>(b.in_bf16.data()) : static_cast<void*>(b.in_f32.data());
  const fp8attn_tensor in = make_tensor(in_data, c.bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32, b.shape, b.stride);
  const fp8attn_tensor out = make_tensor(r.out.data(), FP8ATTN_DTYPE_E4M3, b.shape, b.stride);
  const fp8attn_tensor descale = dense(r.descale.data(), FP8ATTN_DTYPE_F32, b.descale_shape);
  const fp8attn_tensor cu = dense(b.cu.data(), FP8ATTN_DTYPE_I32, {static_cast<int64_t>(b.cu.size())});
  const fp8attn_tensor* cu_arg = c.packed ? &cu : nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (!async) {
    r.status = fp8attn_quantize(ctx, &in, cu_arg, &c.opts, &out, &descale, &r.amax, &err);
    EXPECT_EQ(r.status, FP8ATTN_OK) << err.message;
    return r;
  }
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_quantize_workspace_size(ctx, &in, cu_arg, b.max_seqlen, &c.opts, &bytes, &err), FP8ATTN_OK)
      << err.message;
  std::vector<unsigned char> workspace(bytes, 0xCD);
  // One byte short is refused, and nothing is written.
  EXPECT_EQ(fp8attn_quantize_async(ctx, &in, cu_arg, b.max_seqlen, &c.opts, &out, &descale, &r.amax, workspace.data(),
                                   bytes - 1, nullptr, &err),
            FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_EQ(r.out[0], 0xEE);
  EXPECT_EQ(r.descale[0], -7.0f);
  EXPECT_EQ(r.amax, -1.0f);
  const bool counted = ctx->impl.runtime_counters() != nullptr;  // the emulator's runtime
  const CounterSnapshot before = counted ? CounterSnapshot::of(ctx) : CounterSnapshot{};
  r.status = fp8attn_quantize_async(ctx, &in, cu_arg, b.max_seqlen, &c.opts, &out, &descale, &r.amax,
                                    workspace.data(), bytes, nullptr, &err);
  EXPECT_EQ(r.status, FP8ATTN_OK) << err.message;
  if (!counted) return r;
  const CounterSnapshot added = CounterSnapshot::of(ctx).since(before);
  EXPECT_EQ(added.allocations, 0u) << c.name;
  EXPECT_EQ(added.synchronizations, 0u) << c.name;
  EXPECT_EQ(added.launches, 1u) << c.name;  // both passes, as one launch_quantize
  return r;
}

TEST(QuantizeAsyncEmulated, BitEqualToTheCpuQuantizer) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const std::vector<Case> cases = {
      {"per-tensor F32 padded d64", false, false, 2, 150, 2, 64, {}, options(FP8ATTN_QUANT_PER_TENSOR, 0, false, 0)},
      {"per-head BF16 padded d128 rotated", false, true, 2, 70, 4, 128, {}, options(FP8ATTN_QUANT_PER_HEAD, 0, true, seed, 1, 2)},
      {"per-block F32 packed d64 rotated", true, false, 0, 0, 2, 64, {37, 0, 130}, options(FP8ATTN_QUANT_PER_BLOCK, 64, true, seed)},
      {"per-block BF16 packed d256 sink", true, true, 0, 0, 1, 256, {90, 20}, options(FP8ATTN_QUANT_PER_BLOCK, 32, false, 0, 2, 0, 4)},
  };
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Buffers b(c, seed ^ std::hash<std::string>{}(c.name));
    const Result want = run(cpu, c, b, false);
    const Result got = run(emu, c, b, true);
    ASSERT_EQ(got.status, FP8ATTN_OK);
    EXPECT_EQ(std::memcmp(got.out.data(), want.out.data(), got.out.size()), 0);
    EXPECT_EQ(std::memcmp(got.descale.data(), want.descale.data(), got.descale.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(&got.amax, &want.amax, sizeof(float)), 0) << got.amax << " vs " << want.amax;
    // The async call on the CPU backend gives the same bits too.
    const Result cpu_async = run(cpu, c, b, true);
    EXPECT_EQ(cpu_async.out, want.out);
    EXPECT_EQ(cpu_async.descale, want.descale);
  }
  fp8attn_context_destroy(emu);
  fp8attn_context_destroy(cpu);
}

// The workspace query agrees with the call's need across layouts, and refuses bad input.
TEST(QuantizeAsyncEmulated, WorkspaceQueryAndRefusals) {
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  std::vector<float> x(2 * 300 * 2 * 64, 1.0f);
  const fp8attn_tensor in = dense(x.data(), FP8ATTN_DTYPE_F32, {2, 300, 2, 64});
  fp8attn_error err{};
  err.struct_size = sizeof err;
  size_t bytes = 0;
  const fp8attn_quantize_options per_block = options(FP8ATTN_QUANT_PER_BLOCK, 100, false, 0);
  ASSERT_EQ(fp8attn_quantize_workspace_size(emu, &in, nullptr, 0, &per_block, &bytes, &err), FP8ATTN_OK);
  EXPECT_EQ(bytes, 256u);  // 2 batch · 2 heads · 3 blocks floats, rounded to 256 bytes
  std::vector<int32_t> cu = {0, 600};
  const fp8attn_tensor cu_t = dense(cu.data(), FP8ATTN_DTYPE_I32, {2});
  const fp8attn_tensor packed = dense(x.data(), FP8ATTN_DTYPE_F32, {600, 2, 64});
  const fp8attn_quantize_options per_block1 = options(FP8ATTN_QUANT_PER_BLOCK, 1, false, 0);
  EXPECT_EQ(fp8attn_quantize_workspace_size(emu, &packed, &cu_t, 0, &per_block1, &bytes, &err),
            FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_NE(std::string(err.message).find("max_seqlen"), std::string::npos) << err.message;
  ASSERT_EQ(fp8attn_quantize_workspace_size(emu, &packed, &cu_t, 600, &per_block1, &bytes, &err), FP8ATTN_OK);
  EXPECT_EQ(bytes, (2u * 600 * 4 + 255) / 256 * 256);  // 1200 floats, rounded up
  // A stream on a host-memory backend, and a head_dim the kernels lack.
  std::vector<uint8_t> out(x.size(), 0xEE);
  float descale = -7.0f;
  const fp8attn_tensor out_t = dense(out.data(), FP8ATTN_DTYPE_E4M3, {2, 300, 2, 64});
  const fp8attn_tensor d_t = dense(&descale, FP8ATTN_DTYPE_F32, {1});
  std::vector<unsigned char> ws(4096);
  EXPECT_EQ(fp8attn_quantize_async(emu, &in, nullptr, 0, nullptr, &out_t, &d_t, nullptr, ws.data(), ws.size(),
                                   reinterpret_cast<CUstream_st*>(0x1), &err),
            FP8ATTN_STATUS_BAD_STREAM);
  std::vector<float> x48(2 * 300 * 2 * 48, 1.0f);
  const fp8attn_tensor in48 = dense(x48.data(), FP8ATTN_DTYPE_F32, {2, 300, 2, 48});
  const fp8attn_tensor out48 = dense(out.data(), FP8ATTN_DTYPE_E4M3, {2, 300, 2, 48});
  EXPECT_EQ(fp8attn_quantize_async(emu, &in48, nullptr, 0, nullptr, &out48, &d_t, nullptr, ws.data(), ws.size(),
                                   nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("head_dim"), std::string::npos) << err.message;
  EXPECT_EQ(out[0], 0xEE);
  EXPECT_EQ(descale, -7.0f);
  fp8attn_context_destroy(emu);
}

}  // namespace
}  // namespace fp8attn::backend_testing
