#include "lib/backend/gpu/spectral_plan.hpp"

#include <string>
#include <utility>

#include "lib/core/error.hpp"
#include "lib/spectral/gram_power_iteration.hpp"

namespace fp8attn::gpu {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Layout {
  size_t grams_q = 0, grams_k = 0, power = 0, power_tmp = 0, scratch = 0, total = 0;
  Layout(const QkShape& s, size_t scratch_bytes) {
    const size_t square = sizeof(float) * static_cast<size_t>(s.head_dim) * s.head_dim;
    size_t at = 0;
    auto take = [&](size_t bytes) { return std::exchange(at, at + align_up(bytes)); };
    grams_q = take(square * s.num_heads_q);
    grams_k = take(square * s.num_heads_kv);
    power = take(square * s.num_heads_q);
    power_tmp = take(square * s.num_heads_q);
    scratch = take(scratch_bytes);
    total = at;
  }
};

void check_weight(const WeightMatrix& w, const char* name) {
  FP8ATTN_REQUIRE(w.dtype == FP8ATTN_DTYPE_E4M3, FP8ATTN_STATUS_UNSUPPORTED_DTYPE,
          std::string(name) + ": the device spectral norms take E4M3 weights (cuBLASLt FP8 GEMMs); F32 and BF16 "
              "weights run on the CPU backend");
  FP8ATTN_REQUIRE(w.col_stride == 1, FP8ATTN_STATUS_BAD_STRIDE, std::string(name) + ": the FP8 GEMM needs a column stride of 1");
  FP8ATTN_REQUIRE(w.row_stride % 16 == 0 && reinterpret_cast<uintptr_t>(w.data) % 16 == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          std::string(name) + ": the FP8 GEMM needs 16-byte aligned rows and base address (row stride " +
              std::to_string(w.row_stride) + ")");
}

}  // namespace

size_t spectral_workspace_bytes(const QkShape& shape, size_t gemm_scratch_bytes) {
  return Layout(shape, gemm_scratch_bytes).total;
}

void check_spectral_supported(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& s) {
  check_weight(wq, "wq");
  check_weight(wk, "wk");
  FP8ATTN_REQUIRE(s.head_dim % 16 == 0 && s.head_dim <= 256, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "the device spectral norms take head_dim a multiple of 16 up to 256, got " + std::to_string(s.head_dim));
  FP8ATTN_REQUIRE(s.d_model % 16 == 0, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND,
          "the device spectral norms take d_model a multiple of 16 (FP8 GEMM rows), got " + std::to_string(s.d_model));
}

void run_spectral(DeviceRuntime& rt, const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& s,
                  const PowerIterationSettings& settings, float* sigma_out, void* workspace, CUstream_st* stream) {
  check_spectral_supported(wq, wk, s);
  const Layout layout(s, rt.gemm_scratch_bytes());
  auto* base = static_cast<char*>(workspace);
  auto* grams_q = reinterpret_cast<float*>(base + layout.grams_q);
  auto* grams_k = reinterpret_cast<float*>(base + layout.grams_k);
  auto* power = reinterpret_cast<float*>(base + layout.power);
  auto* power_tmp = reinterpret_cast<float*>(base + layout.power_tmp);
  const int64_t dh = s.head_dim, d = s.d_model, square = dh * dh;
  const int32_t group = s.group_size();

  // G_h = W_h·W_hᵀ. A row-major d_h × d block with row stride r is a column-major d × d_h matrix
  // X with ld = r, so the Gram is Xᵀ·X: TN with A = B = X, as FP8 requires. Both operands carry
  // the tensor's descale, which enters as alpha = descale².
  BatchedGemmDesc gram;
  gram.operand = GemmOperand::E4M3;
  gram.trans_a = true;
  gram.m = gram.n = dh;
  gram.k = d;
  gram.lda = gram.ldb = wq.row_stride;
  gram.ldd = dh;
  gram.stride_a = gram.stride_b = dh * wq.row_stride;
  gram.stride_d = square;
  gram.batch = s.num_heads_q;
  gram.alpha = wq.descale * wq.descale;
  gram.a = gram.b = wq.data;
  gram.d = grams_q;
  gram.scratch = base + layout.scratch;
  gram.scratch_bytes = rt.gemm_scratch_bytes();
  rt.gemm(gram, stream);
  // NOTE: one Gram per KV group, shared by its query heads: W_K,g is read once.
  gram.lda = gram.ldb = wk.row_stride;
  gram.stride_a = gram.stride_b = dh * wk.row_stride;
  gram.batch = s.num_heads_kv;
  gram.alpha = wk.descale * wk.descale;
  gram.a = gram.b = wk.data;
  gram.d = grams_k;
  rt.gemm(gram, stream);

  // C_h = G_Q,h·G_K,g, row-major. In column-major terms the Grams are symmetric, so the product
  // G_K,g·G_Q,h is exactly row-major C_h. One call per group, G_K,g broadcast (stride 0).
  BatchedGemmDesc f32;
  f32.operand = GemmOperand::F32;
  f32.m = f32.n = f32.k = dh;
  f32.lda = f32.ldb = f32.ldd = dh;
  f32.scratch = gram.scratch;
  f32.scratch_bytes = gram.scratch_bytes;
  for (int32_t g = 0; g < s.num_heads_kv; ++g) {
    BatchedGemmDesc product = f32;
    product.stride_a = 0;
    product.stride_b = product.stride_d = square;
    product.batch = group;
    product.a = grams_k + g * square;
    product.b = grams_q + g * group * square;
    product.d = power + g * group * square;
    rt.gemm(product, stream);
  }
  rt.rescale_blocks({power, s.num_heads_q, square}, stream);
  // P ← P·P: row-major P·P is the column-major product of the same buffers.
  for (int i = 0; i < kOperatorSquarings; ++i) {
    BatchedGemmDesc squaring = f32;
    squaring.stride_a = squaring.stride_b = squaring.stride_d = square;
    squaring.batch = s.num_heads_q;
    squaring.a = squaring.b = power;
    squaring.d = power_tmp;
    rt.gemm(squaring, stream);
    rt.rescale_blocks({power_tmp, s.num_heads_q, square}, stream);
    std::swap(power, power_tmp);
  }
  PowerIterationDesc it;
  it.power = power;
  it.grams_q = grams_q;
  it.grams_k = grams_k;
  it.heads = s.num_heads_q;
  it.n = s.head_dim;
  it.group = group;
  it.max_iterations = settings.max_iterations;
  it.tolerance = static_cast<float>(settings.tolerance);
  it.seed = settings.seed;
  it.warm_start = settings.warm_start;
  it.sigma_out = sigma_out;
  it.iterations_out = settings.iterations_out;
  it.residual_out = settings.residual_out;
  rt.power_iteration(it, stream);
}

}  // namespace fp8attn::gpu
