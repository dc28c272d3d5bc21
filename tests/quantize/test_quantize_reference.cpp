// fp8attn_quantize against the plain reference quantizer of quantize_test_support.hpp: every
// granularity, with and without rotation, BF16 and F32 inputs, permuted and padded strides,
// and packed (varlen) layouts. Bytes and descales must match bit for bit, the padding between
// elements must keep its poison, and the reported amax must equal the reference's.
#include <cstring>
#include <string>

#include "tests/quantize/quantize_test_support.hpp"

namespace fp8attn::quant::testing {
namespace {

enum class Layout { Contiguous, Strided, Packed };

struct Case {
  std::string name;
  int32_t dtype;  // input
  Layout layout;
  int64_t batch, seqlen, heads, dim;
  std::vector<int32_t> seqlens;  // packed only
  fp8attn_quantize_options opts;
};

constexpr uint8_t kOutputPoison = 0x7F;  // E4M3 NaN: never produced from finite input

void run_case(const Case& c, uint64_t seed) {
  Rows r{c.batch, c.seqlen, c.heads, c.dim, {}, {}};
  if (c.layout == Layout::Packed) {
    r.batch = static_cast<int64_t>(c.seqlens.size());
    r.cu_seqlens.push_back(0);
    for (int32_t n : c.seqlens) r.cu_seqlens.push_back(r.cu_seqlens.back() + n);
    r.seqlen = r.cu_seqlens.back();
  }
  const int64_t total_rows = c.layout == Layout::Packed ? r.seqlen : r.batch * r.seqlen;
  const bool bf16 = c.dtype == FP8ATTN_DTYPE_BF16;
  r.values = outlier_values(static_cast<size_t>(total_rows * r.heads * r.dim), seed, bf16);
  const Expected want = reference_quantize(r, c.opts);

  // Physical input and output layouts. Strided: input [h][b][s][e] with 5 padding elements per
  // row, output [s][h][b][e] with 2; packed: [row][h][e] with 3 and 1.
  std::vector<int64_t> shape, in_stride, out_stride;
  const int64_t in_row = r.dim + (c.layout == Layout::Contiguous ? 0 : c.layout == Layout::Strided ? 5 : 3);
  const int64_t out_row = r.dim + (c.layout == Layout::Contiguous ? 0 : c.layout == Layout::Strided ? 2 : 1);
  size_t in_elems, out_elems;
  if (c.layout == Layout::Packed) {
    shape = {total_rows, r.heads, r.dim};
    in_stride = {r.heads * in_row, in_row, 1};
    out_stride = {r.heads * out_row, out_row, 1};
    in_elems = static_cast<size_t>(total_rows * r.heads * in_row);
    out_elems = static_cast<size_t>(total_rows * r.heads * out_row);
  } else if (c.layout == Layout::Contiguous) {
    shape = {r.batch, r.seqlen, r.heads, r.dim};
    in_stride = out_stride = {r.seqlen * r.heads * r.dim, r.heads * r.dim, r.dim, 1};
    in_elems = out_elems = r.values.size();
  } else {
    shape = {r.batch, r.seqlen, r.heads, r.dim};
    in_stride = {r.seqlen * in_row, in_row, r.batch * r.seqlen * in_row, 1};
    out_stride = {out_row, r.heads * r.batch * out_row, r.batch * out_row, 1};
    in_elems = static_cast<size_t>(r.heads * r.batch * r.seqlen * in_row);
    out_elems = static_cast<size_t>(r.seqlen * r.heads * r.batch * out_row);
  }
  // Logical element i of row (global row, h) → physical offsets.
  auto in_at = [&](int64_t g, int64_t h, int64_t e) {
    if (c.layout == Layout::Packed) return g * in_stride[0] + h * in_stride[1] + e;
    return (g / r.seqlen) * in_stride[0] + (g % r.seqlen) * in_stride[1] + h * in_stride[2] + e;
  };
  auto out_at = [&](int64_t g, int64_t h, int64_t e) {
    if (c.layout == Layout::Packed) return g * out_stride[0] + h * out_stride[1] + e;
    return (g / r.seqlen) * out_stride[0] + (g % r.seqlen) * out_stride[1] + h * out_stride[2] + e;
  };
  // NOTE: the input's padding holds 1e30 (BF16-exact enough): a quantizer that read it would
  // see an amax of 1e30 and every descale would show it.
  std::vector<float> in_f32(bf16 ? 0 : in_elems, 1e30f);
  std::vector<uint16_t> in_bf16(bf16 ? in_elems : 0, num::float_to_bf16(1e30f));
  for (int64_t g = 0; g < total_rows; ++g)
    for (int64_t h = 0; h < r.heads; ++h)
      for (int64_t e = 0; e < r.dim; ++e) {
        const float v = r.values[(g * r.heads + h) * r.dim + e];
        if (bf16)
          in_bf16[in_at(g, h, e)] = num::float_to_bf16(v);
        else
          in_f32[in_at(g, h, e)] = v;
      }
  std::vector<uint8_t> out(out_elems, kOutputPoison);

  // Descales: permuted strides with a gap, poisoned with NaN.
  const int64_t groups = r.heads / (c.opts.head_group == 0 ? 1 : c.opts.head_group);
  const int64_t blocks = c.opts.granularity == FP8ATTN_QUANT_PER_BLOCK ? per_block_count(r.max_rows(), c.opts) : 1;
  std::vector<float> descale(static_cast<size_t>((r.batch + 1) * groups * blocks + 2), std::nanf(""));
  fp8attn_tensor descale_t;
  auto descale_at = [&](int64_t b, int64_t g, int64_t k) { return b + (r.batch + 1) * (g + groups * k); };
  if (c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR)
    descale_t = make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1}, {1});
  else if (c.opts.granularity == FP8ATTN_QUANT_PER_HEAD)
    descale_t = make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {r.batch, groups}, {1, r.batch + 1});
  else
    descale_t = make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {r.batch, groups, blocks},
                            {1, r.batch + 1, (r.batch + 1) * groups});

  const fp8attn_tensor in_t =
      make_tensor(bf16 ? static_cast<void*>(in_bf16.data()) : static_cast<void*>(in_f32.data()), c.dtype, shape, in_stride);
  const fp8attn_tensor out_t = make_tensor(out.data(), FP8ATTN_DTYPE_E4M3, shape, out_stride);
  fp8attn_tensor cu_t{};
  if (c.layout == Layout::Packed)
    cu_t = make_tensor(r.cu_seqlens.data(), FP8ATTN_DTYPE_I32, {static_cast<int64_t>(r.cu_seqlens.size())}, {1});
  Context ctx;
  float amax = -1.0f;
  fp8attn_error err{sizeof err, 0, {0}};
  ASSERT_EQ(fp8attn_quantize(ctx.ctx, &in_t, c.layout == Layout::Packed ? &cu_t : nullptr, &c.opts, &out_t, &descale_t,
                             &amax, &err),
            FP8ATTN_OK)
      << c.name << ": " << err.message;

  int64_t byte_mismatches = 0, padding_touched = 0, descale_mismatches = 0;
  std::vector<bool> logical(out.size(), false);
  for (int64_t g = 0; g < total_rows; ++g)
    for (int64_t h = 0; h < r.heads; ++h)
      for (int64_t e = 0; e < r.dim; ++e) {
        const int64_t at = out_at(g, h, e);
        logical[at] = true;
        byte_mismatches += out[at] != want.bytes[(g * r.heads + h) * r.dim + e];
      }
  for (size_t i = 0; i < out.size(); ++i) padding_touched += !logical[i] && out[i] != kOutputPoison;
  size_t descales_written = 0;
  for (int64_t b = 0; b < (c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR ? 1 : r.batch); ++b)
    for (int64_t g = 0; g < (c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR ? 1 : groups); ++g)
      for (int64_t k = 0; k < blocks; ++k) {
        const float got = descale[c.opts.granularity == FP8ATTN_QUANT_PER_TENSOR ? 0 : descale_at(b, g, k)];
        const float expect = want.descale[(b * groups + g) * blocks + k];
        descale_mismatches += std::memcmp(&got, &expect, 4) != 0;
        ++descales_written;
      }
  size_t nan_left = 0;
  for (float d : descale) nan_left += std::isnan(d);
  std::printf("%s (%s, %s): %lld of %zu bytes differ, %lld padding bytes touched, %lld of %zu descales differ, "
              "amax %.6g (reference %.6g)\n",
              c.name.c_str(), bf16 ? "BF16" : "F32", c.opts.rotate ? "rotated" : "not rotated",
              static_cast<long long>(byte_mismatches), want.bytes.size(), static_cast<long long>(padding_touched),
              static_cast<long long>(descale_mismatches), descales_written, amax, want.amax);
  EXPECT_EQ(byte_mismatches, 0) << c.name;
  EXPECT_EQ(padding_touched, 0) << c.name;
  EXPECT_EQ(descale_mismatches, 0) << c.name;
  EXPECT_EQ(nan_left, descale.size() - descales_written) << c.name << ": a descale outside the tensor was written";
  EXPECT_EQ(amax, want.amax) << c.name;
}

TEST(QuantizeReference, PerTensorContiguousF32) {
  const uint64_t seed = test_seed("per-tensor");
  run_case({"per-tensor", FP8ATTN_DTYPE_F32, Layout::Contiguous, 2, 160, 3, 128, {},
            options(FP8ATTN_QUANT_PER_TENSOR, 0, false, 0)},
           seed);
  run_case({"per-tensor rotated, margin 2", FP8ATTN_DTYPE_F32, Layout::Contiguous, 2, 160, 3, 128, {},
            options(FP8ATTN_QUANT_PER_TENSOR, 0, true, seed ^ 1, 2)},
           seed);
}

TEST(QuantizeReference, PerHeadStrided) {
  const uint64_t seed = test_seed("per-head");
  run_case({"per-head", FP8ATTN_DTYPE_BF16, Layout::Strided, 2, 131, 4, 64, {},
            options(FP8ATTN_QUANT_PER_HEAD, 0, false, 0)},
           seed);
  run_case({"per-head, head groups of 2", FP8ATTN_DTYPE_BF16, Layout::Strided, 2, 131, 4, 64, {},
            options(FP8ATTN_QUANT_PER_HEAD, 0, true, seed, 0, 2)},
           seed);
}

TEST(QuantizeReference, PerBlockStridedRaggedLastBlock) {
  const uint64_t seed = test_seed("per-block");
  run_case({"per-block 128 rows", FP8ATTN_DTYPE_F32, Layout::Strided, 2, 300, 2, 128, {},
            options(FP8ATTN_QUANT_PER_BLOCK, 128, true, seed)},
           seed);
  run_case({"per-block 224 rows", FP8ATTN_DTYPE_BF16, Layout::Strided, 1, 500, 3, 128, {},
            options(FP8ATTN_QUANT_PER_BLOCK, 224, false, 0)},
           seed);
  run_case({"per-block, head_dim 96, not rotated", FP8ATTN_DTYPE_F32, Layout::Contiguous, 1, 70, 2, 96, {},
            options(FP8ATTN_QUANT_PER_BLOCK, 32, false, 0)},
           seed);
}

// Leading rows (the KV blocks of sink isolation): rows [0, L) form block 0, then blocks of
// block_rows; the descale extent is 1 + ceil((max_seqlen − L) / block_rows). Padded with a
// ragged last block, and varlen with sequences shorter than, equal to and longer than L.
TEST(QuantizeReference, PerBlockWithLeadingRows) {
  const uint64_t seed = test_seed("per-block, leading rows");
  run_case({"per-block 224 rows after 4 leading", FP8ATTN_DTYPE_F32, Layout::Strided, 2, 500, 2, 128, {},
            options(FP8ATTN_QUANT_PER_BLOCK, 224, false, 0, 0, 0, 4)},
           seed);
  run_case({"per-block 64 rows after 1 leading, rotated", FP8ATTN_DTYPE_BF16, Layout::Contiguous, 1, 129, 3, 64, {},
            options(FP8ATTN_QUANT_PER_BLOCK, 64, true, seed, 0, 0, 1)},
           seed);
  run_case({"varlen per-block 32 after 16 leading", FP8ATTN_DTYPE_F32, Layout::Packed, 0, 0, 2, 128, {3, 16, 0, 17, 90},
            options(FP8ATTN_QUANT_PER_BLOCK, 32, true, seed ^ 5, 0, 0, 16)},
           seed);
}

TEST(QuantizeReference, PackedVarlen) {
  const uint64_t seed = test_seed("varlen");
  // An empty sequence, a one-row one, and lengths on both sides of a block boundary.
  run_case({"varlen per-block 64", FP8ATTN_DTYPE_BF16, Layout::Packed, 0, 0, 2, 256, {0, 1, 200, 37, 129},
            options(FP8ATTN_QUANT_PER_BLOCK, 64, true, seed)},
           seed);
  run_case({"varlen per-head", FP8ATTN_DTYPE_F32, Layout::Packed, 0, 0, 2, 128, {77, 0, 150},
            options(FP8ATTN_QUANT_PER_HEAD, 0, true, seed ^ 7)},
           seed);
  run_case({"varlen per-tensor", FP8ATTN_DTYPE_F32, Layout::Packed, 0, 0, 1, 32, {5, 260},
            options(FP8ATTN_QUANT_PER_TENSOR, 0, true, seed ^ 9)},
           seed);
}

}  // namespace
}  // namespace fp8attn::quant::testing
