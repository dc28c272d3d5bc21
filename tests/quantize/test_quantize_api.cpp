// fp8attn_quantize through the C ABI: the amax it reports, slices of zeros, and every bad-input
// status, each checked with poisoned outputs that must come back untouched.
#include <cstring>
#include <functional>
#include <string>

#include "tests/quantize/quantize_test_support.hpp"

namespace fp8attn::quant::testing {
namespace {

constexpr int64_t kBatch = 2, kSeq = 40, kHeads = 4, kDim = 64;

/// A valid per-block problem (block_rows 16: three blocks) whose parts a test breaks one at a time.
struct Call {
  std::vector<float> input;
  std::vector<uint8_t> output;
  std::vector<float> descale;
  std::vector<int32_t> cu{0, 30, 80};  // packed variant: total 80 = kBatch·kSeq
  fp8attn_tensor in_t, out_t, descale_t, cu_t{};
  fp8attn_quantize_options opts;
  float amax = -7.0f;
  bool packed = false;

  explicit Call(uint64_t seed) {
    input = outlier_values(static_cast<size_t>(kBatch * kSeq * kHeads * kDim), seed, false);
    output.assign(input.size(), 0x7F);
    descale.assign(static_cast<size_t>(kBatch * kHeads * 3), -1.0f);
    in_t = make_tensor(input.data(), FP8ATTN_DTYPE_F32, {kBatch, kSeq, kHeads, kDim},
                       {kSeq * kHeads * kDim, kHeads * kDim, kDim, 1});
    out_t = make_tensor(output.data(), FP8ATTN_DTYPE_E4M3, {kBatch, kSeq, kHeads, kDim},
                        {kSeq * kHeads * kDim, kHeads * kDim, kDim, 1});
    descale_t = make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {kBatch, kHeads, 3}, {kHeads * 3, 3, 1});
    opts = options(FP8ATTN_QUANT_PER_BLOCK, 16, true, seed);
  }
  void make_packed() {
    packed = true;
    in_t = make_tensor(input.data(), FP8ATTN_DTYPE_F32, {kBatch * kSeq, kHeads, kDim}, {kHeads * kDim, kDim, 1});
    out_t = make_tensor(output.data(), FP8ATTN_DTYPE_E4M3, {kBatch * kSeq, kHeads, kDim}, {kHeads * kDim, kDim, 1});
    descale_t.shape[2] = 4;  // ceil(50 / 16)
    descale.assign(static_cast<size_t>(kBatch * kHeads * 4), -1.0f);
    descale_t.data = descale.data();
    descale_t.stride[0] = kHeads * 4, descale_t.stride[1] = 4;
    cu_t = make_tensor(cu.data(), FP8ATTN_DTYPE_I32, {3}, {1});
  }
  int32_t run(fp8attn_context ctx, fp8attn_error* err, const fp8attn_quantize_options* o = nullptr) {
    return fp8attn_quantize(ctx, &in_t, packed ? &cu_t : nullptr, o ? o : &opts, &out_t, &descale_t, &amax, err);
  }
  bool untouched() const {
    for (uint8_t b : output)
      if (b != 0x7F) return false;
    for (float d : descale)
      if (d != -1.0f) return false;
    return amax == -7.0f;
  }
};

struct BadCase {
  std::string what;
  int32_t status;
  std::function<void(Call&)> breaks;
  int32_t backend = FP8ATTN_BACKEND_CPU;
};

TEST(QuantizeApi, BadInputGivesItsStatusAndLeavesOutputsUntouched) {
  const uint64_t seed = test_seed("bad input");
  const float nan = std::nanf("");
  const std::vector<BadCase> cases = {
      {"input dtype E4M3", FP8ATTN_STATUS_BAD_DTYPE, [](Call& c) { c.in_t.dtype = FP8ATTN_DTYPE_E4M3; }},
      {"input dtype unknown", FP8ATTN_STATUS_BAD_DTYPE, [](Call& c) { c.in_t.dtype = 99; }},
      {"output dtype BF16", FP8ATTN_STATUS_BAD_DTYPE, [](Call& c) { c.out_t.dtype = FP8ATTN_DTYPE_BF16; }},
      {"descale dtype F64", FP8ATTN_STATUS_BAD_DTYPE, [](Call& c) { c.descale_t.dtype = FP8ATTN_DTYPE_F64; }},
      {"input rank 3 without cu_seqlens", FP8ATTN_STATUS_BAD_SHAPE, [](Call& c) { c.in_t.rank = 3; }},
      {"output extent differs", FP8ATTN_STATUS_BAD_SHAPE, [](Call& c) { c.out_t.shape[1] = kSeq - 1; }},
      {"descale block extent differs", FP8ATTN_STATUS_BAD_SHAPE, [](Call& c) { c.descale_t.shape[2] = 2; }},
      {"per-head descale of rank 3", FP8ATTN_STATUS_BAD_SHAPE,
       [](Call& c) { c.opts.granularity = FP8ATTN_QUANT_PER_HEAD; }},
      {"head_dim 0", FP8ATTN_STATUS_BAD_SHAPE, [](Call& c) { c.in_t.shape[3] = 0, c.out_t.shape[3] = 0; }},
      {"negative input stride", FP8ATTN_STATUS_BAD_STRIDE, [](Call& c) { c.in_t.stride[1] = -1; }},
      {"output rows overlap", FP8ATTN_STATUS_BAD_STRIDE, [](Call& c) { c.out_t.stride[1] = 0; }},
      {"descales overlap", FP8ATTN_STATUS_BAD_STRIDE, [](Call& c) { c.descale_t.stride[2] = 0; }},
      {"unknown granularity", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.granularity = 3; }},
      {"block_rows 0", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.block_rows = 0; }},
      {"rotate 2", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.rotate = 2; }},
      {"margin 65", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.margin = 65; }},
      {"margin −1", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.margin = -1; }},
      {"leading_rows −1", FP8ATTN_STATUS_BAD_OPTION, [](Call& c) { c.opts.leading_rows = -1; }},
      {"leading_rows 1 with the descales of the grid from row 0 (4 blocks, not 3)", FP8ATTN_STATUS_BAD_SHAPE,
       [](Call& c) { c.opts.leading_rows = 1; }},
      {"head_group 3 of 4 heads", FP8ATTN_STATUS_BAD_HEADS, [](Call& c) { c.opts.head_group = 3; }},
      {"head_group −1", FP8ATTN_STATUS_BAD_HEADS, [](Call& c) { c.opts.head_group = -1; }},
      {"options->next set", FP8ATTN_STATUS_BAD_EXTENSION, [](Call& c) { c.opts.next = &c; }},
      {"options->struct_size 0", FP8ATTN_STATUS_BAD_STRUCT_SIZE, [](Call& c) { c.opts.struct_size = 0; }},
      {"options->struct_size short", FP8ATTN_STATUS_BAD_STRUCT_SIZE, [](Call& c) { c.opts.struct_size = 16; }},
      {"input->struct_size short", FP8ATTN_STATUS_BAD_STRUCT_SIZE, [](Call& c) { c.in_t.struct_size = 8; }},
      {"output on a CUDA device", FP8ATTN_STATUS_BAD_DEVICE, [](Call& c) { c.out_t.device = FP8ATTN_DEVICE_CUDA; }},
      {"input data NULL", FP8ATTN_STATUS_NULL_POINTER, [](Call& c) { c.in_t.data = nullptr; }},
      {"descale data NULL", FP8ATTN_STATUS_NULL_POINTER, [](Call& c) { c.descale_t.data = nullptr; }},
      {"a NaN in the last row", FP8ATTN_STATUS_NUMERICS, [nan](Call& c) { c.input.back() = nan; }},
      {"an infinity in the first row", FP8ATTN_STATUS_NUMERICS, [](Call& c) { c.input[3] = -INFINITY; }},
      {"a value whose rotation overflows", FP8ATTN_STATUS_NUMERICS,
       [](Call& c) { c.input[0] = 3e38f, c.input[1] = 3e38f; }},
      {"rotation with head_dim 48", FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM,
       [](Call& c) { c.in_t.shape[3] = 48, c.out_t.shape[3] = 48; }},
      {"cu_seqlens not from 0", FP8ATTN_STATUS_BAD_SEQLENS, [](Call& c) { c.make_packed(), c.cu[0] = 1; }},
      {"cu_seqlens decreasing", FP8ATTN_STATUS_BAD_SEQLENS, [](Call& c) { c.make_packed(), c.cu[1] = 90; }},
      {"cu_seqlens not ending at total", FP8ATTN_STATUS_BAD_SEQLENS, [](Call& c) { c.make_packed(), c.cu[2] = 79; }},
      {"cu_seqlens dtype F32", FP8ATTN_STATUS_BAD_DTYPE,
       [](Call& c) { c.make_packed(), c.cu_t.dtype = FP8ATTN_DTYPE_F32; }},
      {"packed descale of the padded block count", FP8ATTN_STATUS_BAD_SHAPE,
       [](Call& c) { c.make_packed(), c.descale_t.shape[2] = 3; }},
  };
  Context ctx;
  for (const BadCase& bad : cases) {
    Call call(seed);
    bad.breaks(call);
    fp8attn_error err{sizeof err, 0, {0}};
    const int32_t status = call.run(ctx.ctx, &err);
    std::printf("%-45s -> %s: %s\n", bad.what.c_str(), fp8attn_status_name(status), err.message);
    EXPECT_EQ(status, bad.status) << bad.what << ": " << err.message;
    EXPECT_EQ(err.status, status) << bad.what;
    EXPECT_TRUE(call.untouched()) << bad.what << ": an output was written on failure";
  }
  // Null handles and pointers.
  Call call(seed);
  fp8attn_error err{sizeof err, 0, {0}};
  EXPECT_EQ(call.run(nullptr, &err), FP8ATTN_STATUS_BAD_HANDLE);
  EXPECT_EQ(fp8attn_quantize(ctx.ctx, nullptr, nullptr, &call.opts, &call.out_t, &call.descale_t, &call.amax, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(fp8attn_quantize(ctx.ctx, &call.in_t, nullptr, &call.opts, nullptr, &call.descale_t, &call.amax, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(fp8attn_quantize(ctx.ctx, &call.in_t, nullptr, &call.opts, &call.out_t, nullptr, &call.amax, &err),
            FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_TRUE(call.untouched());
  // The same call, unbroken, succeeds: the cases above fail for their one reason.
  EXPECT_EQ(call.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  EXPECT_FALSE(call.untouched());
  Call packed(seed);
  packed.make_packed();
  EXPECT_EQ(packed.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
}

// A caller compiled before `leading_rows` was appended passes a shorter struct: the field reads
// as 0 whatever lies past the struct, and the result is the grid from row 0, bit for bit.
TEST(QuantizeApi, OlderOptionsLayoutHasNoLeadingRows) {
  const uint64_t seed = test_seed("older options layout");
  Context ctx;
  Call current(seed), older(seed);
  fp8attn_error err{sizeof err, 0, {0}};
  ASSERT_EQ(current.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  older.opts.leading_rows = 5;  // past the older struct: must not be read
  older.opts.struct_size = offsetof(fp8attn_quantize_options, leading_rows);
  ASSERT_EQ(older.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(current.output, older.output);
  EXPECT_EQ(0, std::memcmp(current.descale.data(), older.descale.data(), current.descale.size() * sizeof(float)));
}

TEST(QuantizeApi, ReportsTheAmaxOfTheTensorItCast) {
  const uint64_t seed = test_seed("amax");
  Context ctx;
  Call plain(seed), rotated(seed);
  plain.opts.rotate = 0;
  fp8attn_error err{sizeof err, 0, {0}};
  ASSERT_EQ(plain.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(rotated.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  float direct = 0.0f;
  for (float x : plain.input) direct = std::max(direct, std::fabs(x));
  Rows r{kBatch, kSeq, kHeads, kDim, {}, plain.input};
  const float rotated_reference = reference_quantize(r, rotated.opts).amax;
  std::printf("amax: %.6g unrotated (max |x| = %.6g), %.6g rotated (reference %.6g)\n", plain.amax, direct,
              rotated.amax, rotated_reference);
  EXPECT_EQ(plain.amax, direct);
  EXPECT_EQ(rotated.amax, rotated_reference);
  // NOTE: the outliers (N(0,100) with probability 0.01) dominate the unrotated amax; the rotation
  // spreads each over 64 entries, dividing it by about 8. 2× is a loose floor.
  EXPECT_LT(rotated.amax * 2.0f, plain.amax);
  // The per-block descales of the unrotated call reproduce the amax: max descale · 448 = amax.
  float max_descale = 0.0f;
  for (float d : plain.descale) max_descale = std::max(max_descale, d);
  EXPECT_NEAR(max_descale * 448.0f, direct, direct * 1e-6f);
}

TEST(QuantizeApi, SliceOfZerosGetsDescaleOneAndZeroBytes) {
  const uint64_t seed = test_seed("zero slice");
  Context ctx;
  Call call(seed);
  // Head 1 of sequence 0 is all zeros: its three blocks have amax 0.
  for (int64_t s = 0; s < kSeq; ++s)
    for (int64_t e = 0; e < kDim; ++e) call.input[(s * kHeads + 1) * kDim + e] = 0.0f;
  fp8attn_error err{sizeof err, 0, {0}};
  ASSERT_EQ(call.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;
  int zero_bytes = 0;
  for (int64_t s = 0; s < kSeq; ++s)
    for (int64_t e = 0; e < kDim; ++e)  // D's signs turn some zeros into −0 (0x80)
      zero_bytes += num::e4m3_to_float(call.output[(s * kHeads + 1) * kDim + e]) == 0.0f;
  std::printf("zero head: descales %g %g %g, %d of %lld bytes zero; neighbour head descale %g\n", call.descale[3],
              call.descale[4], call.descale[5], zero_bytes, static_cast<long long>(kSeq * kDim), call.descale[0]);
  for (int k = 3; k < 6; ++k) EXPECT_EQ(call.descale[k], 1.0f);
  EXPECT_EQ(zero_bytes, kSeq * kDim);
  EXPECT_NE(call.descale[0], 1.0f);
}

TEST(QuantizeApi, ReferenceBackendQuantizesAndCudaContextsAreRefusedBeforeAnyCheck) {
  const uint64_t seed = test_seed("backends");
  Context reference(FP8ATTN_BACKEND_REFERENCE, 1);
  Call call(seed);
  fp8attn_error err{sizeof err, 0, {0}};
  EXPECT_EQ(call.run(reference.ctx, &err), FP8ATTN_OK) << err.message;
  Call twice(seed);
  Context cpu;
  EXPECT_EQ(twice.run(cpu.ctx, &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(call.output, twice.output) << "the result depends on the backend or the thread count";
  EXPECT_EQ(call.descale, twice.descale);
}

}  // namespace
}  // namespace fp8attn::quant::testing

namespace fp8attn::quant::testing {
namespace {

// The amax the quantizer reports feeds a scale state, whose current-recipe scale for the next
// step is then the quantizer's own scale: 448 / amax.
TEST(QuantizeApi, ReportedAmaxDrivesTheScaleState) {
  const uint64_t seed = test_seed("scale state");
  Context ctx;
  Call call(seed);
  call.opts.granularity = FP8ATTN_QUANT_PER_TENSOR;
  call.descale_t = make_tensor(call.descale.data(), FP8ATTN_DTYPE_F32, {1}, {1});
  fp8attn_error err{sizeof err, 0, {0}};
  ASSERT_EQ(call.run(ctx.ctx, &err), FP8ATTN_OK) << err.message;

  fp8attn_scale_state_options so{};
  so.struct_size = sizeof so;
  so.recipe[FP8ATTN_TENSOR_Q] = FP8ATTN_RECIPE_CURRENT;
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx.ctx, &so, &state, &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(fp8attn_scale_state_report_amax(state, 0, FP8ATTN_TENSOR_Q, call.amax, &err), FP8ATTN_OK) << err.message;
  EXPECT_EQ(fp8attn_scale_state_step(state, &err), FP8ATTN_OK) << err.message;
  float scale = 0.0f, scale_inv = 0.0f;
  EXPECT_EQ(fp8attn_scale_state_get_scale(state, 0, FP8ATTN_TENSOR_Q, &scale, &scale_inv, &err), FP8ATTN_OK);
  fp8attn_scale_state_destroy(state);
  std::printf("rotated Q amax %.6g: quantizer scale %.8g (descale %.8g), scale state %.8g (scale_inv %.8g)\n",
              call.amax, 1.0f / call.descale[0], call.descale[0], scale, scale_inv);
  EXPECT_NEAR(scale, 448.0f / call.amax, 448.0f / call.amax * 1e-6f);
  EXPECT_NEAR(scale_inv, call.descale[0], call.descale[0] * 1e-6f);
}

// An F32 input whose head_dim stride is not 1 (every other float of a wider buffer, and the
// head_dim dimension outermost) quantizes bit for bit as its contiguous copy, on every
// granularity, rotated and not. Output and descales are poisoned before each call.
TEST(QuantizeApi, StridedF32InputIsBitEqualToItsContiguousCopy) {
  const uint64_t seed = test_seed("strided F32 input");
  constexpr int64_t B = 2, S = 19, H = 3, D = 32;
  const std::vector<float> dense = outlier_values(static_cast<size_t>(B * S * H * D), seed, false);
  // Layout 1: dense rows with 2 floats per element (stride 2 along head_dim), the odd floats
  // NaN so that a read of them shows. Layout 2: head_dim outermost ([D][B][S][H] in memory).
  std::vector<float> spaced(dense.size() * 2, std::nanf("")), transposed(dense.size());
  for (int64_t i = 0; i < B * S * H; ++i)
    for (int64_t e = 0; e < D; ++e) {
      spaced[static_cast<size_t>(2 * (i * D + e))] = dense[static_cast<size_t>(i * D + e)];
      transposed[static_cast<size_t>(e * B * S * H + i)] = dense[static_cast<size_t>(i * D + e)];
    }
  const fp8attn_tensor inputs[3] = {
      make_tensor(const_cast<float*>(dense.data()), FP8ATTN_DTYPE_F32, {B, S, H, D}, {S * H * D, H * D, D, 1}),
      make_tensor(spaced.data(), FP8ATTN_DTYPE_F32, {B, S, H, D}, {2 * S * H * D, 2 * H * D, 2 * D, 2}),
      make_tensor(transposed.data(), FP8ATTN_DTYPE_F32, {B, S, H, D}, {S * H, H, 1, B * S * H})};
  const char* names[3] = {"contiguous", "head_dim stride 2", "head_dim outermost"};
  Context ctx;
  for (const fp8attn_quantize_options& o :
       {options(FP8ATTN_QUANT_PER_TENSOR, 0, false, seed), options(FP8ATTN_QUANT_PER_HEAD, 0, false, seed),
        options(FP8ATTN_QUANT_PER_BLOCK, 8, false, seed), options(FP8ATTN_QUANT_PER_BLOCK, 8, true, seed)}) {
    const int64_t blocks = o.granularity == FP8ATTN_QUANT_PER_BLOCK ? (S + 7) / 8 : 1;
    const int64_t slices = o.granularity == FP8ATTN_QUANT_PER_TENSOR ? 1 : B * H * blocks;
    std::vector<uint8_t> out[3];
    std::vector<float> descale[3];
    for (int i = 0; i < 3; ++i) {
      out[i].assign(static_cast<size_t>(B * S * H * D), 0xAB);
      descale[i].assign(static_cast<size_t>(slices), -1.0f);
      const fp8attn_tensor ot =
          make_tensor(out[i].data(), FP8ATTN_DTYPE_E4M3, {B, S, H, D}, {S * H * D, H * D, D, 1});
      const fp8attn_tensor dt =
          o.granularity == FP8ATTN_QUANT_PER_TENSOR ? make_tensor(descale[i].data(), FP8ATTN_DTYPE_F32, {1}, {1})
          : o.granularity == FP8ATTN_QUANT_PER_HEAD
              ? make_tensor(descale[i].data(), FP8ATTN_DTYPE_F32, {B, H}, {H, 1})
              : make_tensor(descale[i].data(), FP8ATTN_DTYPE_F32, {B, H, blocks}, {H * blocks, blocks, 1});
      fp8attn_error err{sizeof err, 0, {0}};
      ASSERT_EQ(fp8attn_quantize(ctx.ctx, &inputs[i], nullptr, &o, &ot, &dt, nullptr, &err), FP8ATTN_OK)
          << names[i] << ": " << err.message;
    }
    for (int i = 1; i < 3; ++i) {
      EXPECT_TRUE(out[i] == out[0]) << names[i] << " casts differently, granularity " << o.granularity
                                    << (o.rotate ? " rotated" : "") << ", seed " << seed;
      EXPECT_EQ(std::memcmp(descale[i].data(), descale[0].data(), descale[0].size() * sizeof(float)), 0)
          << names[i] << " gives other descales, granularity " << o.granularity << ", seed " << seed;
    }
  }
}

/// An E4M3 output with head_dim stride 2, and one with head_dim outermost, hold the contiguous
/// output's codes at their own addresses and leave every other byte as it was.
TEST(QuantizeApi, StridedOutputHoldsTheContiguousCodesAndNothingElse) {
  const uint64_t seed = test_seed("strided E4M3 output");
  constexpr int64_t B = 2, S = 19, H = 3, D = 32, N = B * S * H * D;
  const std::vector<float> dense = outlier_values(static_cast<size_t>(N), seed, false);
  const fp8attn_tensor in =
      make_tensor(const_cast<float*>(dense.data()), FP8ATTN_DTYPE_F32, {B, S, H, D}, {S * H * D, H * D, D, 1});
  Context ctx;
  for (const fp8attn_quantize_options& o :
       {options(FP8ATTN_QUANT_PER_HEAD, 0, false, seed), options(FP8ATTN_QUANT_PER_BLOCK, 8, true, seed)}) {
    const int64_t blocks = o.granularity == FP8ATTN_QUANT_PER_BLOCK ? (S + 7) / 8 : 1;
    std::vector<uint8_t> contiguous(static_cast<size_t>(N), 0xAB), spaced(static_cast<size_t>(2 * N), 0xAB),
        transposed(static_cast<size_t>(N), 0xAB);
    const fp8attn_tensor outs[3] = {
        make_tensor(contiguous.data(), FP8ATTN_DTYPE_E4M3, {B, S, H, D}, {S * H * D, H * D, D, 1}),
        make_tensor(spaced.data(), FP8ATTN_DTYPE_E4M3, {B, S, H, D}, {2 * S * H * D, 2 * H * D, 2 * D, 2}),
        make_tensor(transposed.data(), FP8ATTN_DTYPE_E4M3, {B, S, H, D}, {S * H, H, 1, B * S * H})};
    for (const fp8attn_tensor& ot : outs) {
      std::vector<float> descale(static_cast<size_t>(B * H * blocks), -1.0f);
      const fp8attn_tensor dt =
          o.granularity == FP8ATTN_QUANT_PER_HEAD
              ? make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {B, H}, {H, 1})
              : make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {B, H, blocks}, {H * blocks, blocks, 1});
      fp8attn_error err{sizeof err, 0, {0}};
      ASSERT_EQ(fp8attn_quantize(ctx.ctx, &in, nullptr, &o, &ot, &dt, nullptr, &err), FP8ATTN_OK) << err.message;
    }
    for (int64_t i = 0; i < B * S * H; ++i)
      for (int64_t e = 0; e < D; ++e) {
        const uint8_t want = contiguous[static_cast<size_t>(i * D + e)];
        ASSERT_EQ(spaced[static_cast<size_t>(2 * (i * D + e))], want)
            << "head_dim stride 2, row " << i << ", element " << e << ", granularity " << o.granularity << ", seed "
            << seed;
        ASSERT_EQ(spaced[static_cast<size_t>(2 * (i * D + e) + 1)], 0xAB)
            << "head_dim stride 2 wrote a gap byte, row " << i << ", element " << e;
        ASSERT_EQ(transposed[static_cast<size_t>(e * B * S * H + i)], want)
            << "head_dim outermost, row " << i << ", element " << e << ", granularity " << o.granularity;
      }
  }
}

}  // namespace
}  // namespace fp8attn::quant::testing
