// libFuzzer target: fp8attn_quantize with fuzzed shapes, strides, packed sequence lengths,
// options and input values (NaN and infinities included). Invariants: a refused call leaves
// the output, the descales and *amax untouched; a successful call returns a finite amax and
// finite, positive descales.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {
constexpr int64_t kElems = 1 << 15;
constexpr int64_t kWorkBudget = int64_t{1} << 18;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const bool packed = r.pick(3) == 0, bf16 = r.pick(2) == 0;
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  o.granularity = static_cast<int32_t>(r.pick(4));
  o.block_rows = static_cast<int32_t>(r.extent(130));
  o.head_group = static_cast<int32_t>(r.pick(5));
  o.rotate = r.pick(3) == 0 ? 1u : 0u;
  o.seed = r.take<uint64_t>();
  o.margin = static_cast<int32_t>(r.pick(70));
  o.leading_rows = static_cast<int32_t>(r.extent(9) - (r.pick(16) == 0 ? 2 : 0));

  const int32_t rank = packed ? 3 : 4;
  std::vector<float> in(kElems);
  for (float& x : in) x = r.number();
  std::vector<uint16_t> in16(kElems);
  for (size_t i = 0; i < in16.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], 4);
    in16[i] = static_cast<uint16_t>(bits >> 16);
  }
  std::vector<uint8_t> out(kElems, 0xA5);
  std::vector<float> descale(4096, -7.0f);
  fp8attn_tensor ti =
      tensor(bf16 ? static_cast<void*>(in16.data()) : in.data(), bf16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32, rank);
  fp8attn_tensor to = tensor(out.data(), FP8ATTN_DTYPE_E4M3, rank);
  const int64_t heads = 1 + r.pick(4);
  const int64_t dims[] = {64, 128, 256, 16, 512, 3};
  const int64_t head_dim = r.pick(8) == 0 ? r.extent(64) : dims[r.pick(6)];
  std::vector<int32_t> cu;
  int64_t batch = 1, rows = 0;
  if (packed) {
    batch = 1 + r.pick(5);
    cu.assign(batch + 1, 0);
    for (int64_t b = 1; b <= batch; ++b) cu[b] = cu[b - 1] + static_cast<int32_t>(r.extent(40) & 63);
    rows = cu[batch];
    const int64_t shape[] = {rows, heads, head_dim};
    for (int i = 0; i < 3; ++i) ti.shape[i] = to.shape[i] = shape[i];
  } else {
    batch = r.extent(3);
    rows = r.extent(40);
    const int64_t shape[] = {batch, rows, heads, head_dim};
    for (int i = 0; i < 4; ++i) ti.shape[i] = to.shape[i] = shape[i];
  }
  for (fp8attn_tensor* t : {&ti, &to}) {
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      t->stride[i] = stride;
      stride = next_dense_stride(stride, t->shape[i]);
    }
    if (r.pick(3) == 0) t->stride[r.pick(rank)] = r.extent(256);
  }
  fp8attn_tensor tc = tensor(cu.data(), FP8ATTN_DTYPE_I32, 1);
  tc.shape[0] = batch + 1;
  tc.stride[0] = 1;
  // The descale shape the granularity asks for, with dense strides over the harness's buffer.
  const int64_t groups = heads / (o.head_group == 0 ? 1 : o.head_group);
  fp8attn_tensor td = tensor(descale.data(), FP8ATTN_DTYPE_F32,
                             o.granularity == FP8ATTN_QUANT_PER_BLOCK  ? 3
                             : o.granularity == FP8ATTN_QUANT_PER_HEAD ? 2
                                                                       : 1);
  const int64_t blocks = r.extent(40);
  const int64_t dshape[] = {td.rank == 1 ? 1 : batch, groups, blocks};
  int64_t dstride = 1;
  for (int i = td.rank - 1; i >= 0; --i) {
    td.shape[i] = dshape[i];
    td.stride[i] = dstride;
    dstride = next_dense_stride(dstride, dshape[i]);
  }

  bool must_refuse = false;
  for (const fp8attn_tensor* t : {&ti, &to, &td}) {
    const int64_t reach = reach_of(*t);
    if (reach < 0) must_refuse = true;
    if (reach > (t == &td ? 4096 : kElems)) return 0;  // memory the harness does not own
  }
  int64_t work = 0;
  if (__builtin_mul_overflow(batch, std::max<int64_t>(rows, 1), &work) || __builtin_mul_overflow(work, heads, &work) ||
      __builtin_mul_overflow(work, std::max<int64_t>(head_dim, 1), &work) || (work > kWorkBudget && !must_refuse))
    if (!must_refuse) return 0;

  float amax = -3.0f;
  const std::vector<uint8_t> out_before = out;
  const std::vector<float> descale_before = descale;
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_quantize(shared_context(), &ti, packed ? &tc : nullptr, &o, &to, &td, &amax, &err);
  if (must_refuse && s == FP8ATTN_OK) broken("a tensor whose reach overflows int64 was accepted", err);
  if (s != FP8ATTN_OK) {
    if (out != out_before || descale != descale_before || amax != -3.0f)
      broken("a refused quantize wrote outputs", err);
    return 0;
  }
  if (!std::isfinite(amax) || amax < 0.0f) broken("quantize returned a non-finite amax", err);
  for (size_t i = 0; i < descale.size(); ++i)
    if (descale[i] != descale_before[i] && !(std::isfinite(descale[i]) && descale[i] > 0.0f))
      broken("quantize wrote a descale that is not finite and > 0", err);
  return 0;
}
