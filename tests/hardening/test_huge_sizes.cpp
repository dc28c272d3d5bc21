// Huge sizes through the C API: sizes that wrap, loops that never end and offsets that overflow
// are refused with a specific status (or computed right) and leave the outputs untouched. Every
// case runs in a forked child with a time limit (tests/hardening/hardening_support.hpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/hardening/forward_fixture.hpp"
#include "tests/hardening/hardening_support.hpp"

namespace fp8attn::test {
namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// ---- Sizes whose products wrap past 2^64 --------------------------------------------------

TEST(WrappingSizes, SpectralWorkspaceSizeRefusesASizeAbove2To64) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_error err = fresh_error();
    size_t bytes = 12345;
    const int32_t s = fp8attn_qk_spectral_norms_workspace_size(ctx, 63, 63, 63, kI64Max - 128, &bytes, &err);
    fp8attn_context_destroy(ctx);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "workspace_size(63, 63, 63, 2^63 − 129)");
    if (problem.empty() && bytes != 12345) problem = "bytes was written on failure";
    return problem;
  });
}

TEST(WrappingSizes, SetQkWeightsWithStrideZeroHugeDModelIsRefused) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_scale_state state = nullptr;
    fp8attn_scale_state_create(ctx, nullptr, &state, nullptr);
    float one = 0.5f;  // 4 bytes that the [rows, d_model] stride-0 weights cover
    fp8attn_tensor w = host_tensor(&one, FP8ATTN_DTYPE_F32, {63 * 63, kI64Max - 128}, {0, 0});
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_scale_state_set_qk_weights(state, 0, &w, &w, 63, 63, 63, &err);
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
    return expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "set_qk_weights(d_model = 2^63 − 129)");
  });
}

TEST(WrappingSizes, RopeNormsWithAWrappingBlockSizeIsRefused) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    float one = 0.5f;
    // head_dim · d_model = 4 · 2^62 = 2^64: a block vector of size 0 in the old code.
    fp8attn_tensor w = host_tensor(&one, FP8ATTN_DTYPE_F32, {4, int64_t{1} << 62}, {0, 0});
    float safe = -1.0f, exact = -1.0f;
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_qk_rope_norms(ctx, &w, &w, 1, 1, 4, nullptr, &safe, &exact, &err);
    fp8attn_context_destroy(ctx);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "rope_norms(d_model = 2^62)");
    if (problem.empty() && (safe != -1.0f || exact != -1.0f)) problem = "outputs written on failure";
    return problem;
  });
}

// ---- Small inputs that would loop forever or for hours ------------------------------------

std::string rope_call(int64_t min_offset, int64_t max_offset, int32_t want, uint64_t seed) {
  fp8attn_context ctx = make_cpu_context();
  std::vector<float> wq = random_floats(4 * 8, seed), wk = random_floats(4 * 8, seed + 1);
  fp8attn_tensor tq = host_tensor(wq.data(), FP8ATTN_DTYPE_F32, {4, 8}, {8, 1});
  fp8attn_tensor tk = host_tensor(wk.data(), FP8ATTN_DTYPE_F32, {4, 8}, {8, 1});
  fp8attn_rope_options o{};
  o.struct_size = sizeof o;
  o.min_offset = min_offset;
  o.max_offset = max_offset;
  float safe = -1.0f, exact = -1.0f;
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_qk_rope_norms(ctx, &tq, &tk, 1, 1, 4, &o, &safe, &exact, &err);
  fp8attn_context_destroy(ctx);
  std::string problem = expect_status(
      s, want, err, "rope_norms([" + std::to_string(min_offset) + ", " + std::to_string(max_offset) + "])");
  if (problem.empty() && want == FP8ATTN_OK && !(std::isfinite(exact) && exact > 0.0f))
    problem = "exact_out is not positive and finite";
  if (problem.empty() && want != FP8ATTN_OK && (safe != -1.0f || exact != -1.0f)) problem = "outputs written";
  return problem;
}

TEST(LoopBounds, RopeMaxOffsetInt64MaxEnds) {
  const uint64_t seed = fresh_seed();
  run_isolated([&] { return rope_call(kI64Max - 1, kI64Max, FP8ATTN_OK, seed); }, 20);
}

TEST(LoopBounds, RopeFullInt64RangeIsRefused) {
  const uint64_t seed = fresh_seed();
  run_isolated([&] { return rope_call(kI64Min, kI64Max, FP8ATTN_STATUS_BAD_OPTION, seed); }, 20);
}

TEST(LoopBounds, RopeRangeThatWouldRunForHoursIsRefused) {
  const uint64_t seed = fresh_seed();
  // 2^20 offsets: under the old 2^24 limit, and hours of work at real head sizes.
  run_isolated([&] { return rope_call(0, (int64_t{1} << 20), FP8ATTN_STATUS_BAD_OPTION, seed); }, 20);
}

TEST(LoopBounds, ForwardWithBatch2To40AndStrideZeroDescalesEnds) {
  run_isolated(
      [] {
        ForwardFixture f(1, 0, 1, fresh_seed());
        if (!f.ready()) return std::string("fixture");
        const int64_t b = int64_t{1} << 40, d = ForwardFixture::kHeadDim;
        float descale = 1.0f;
        f.args.q = host_tensor(f.q.data(), FP8ATTN_DTYPE_E4M3, {b, 0, 1, d}, {0, d, d, 1});
        f.args.k = host_tensor(f.k.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
        f.args.v = host_tensor(f.v.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
        f.args.out = host_tensor(f.out.data(), FP8ATTN_DTYPE_F32, {b, 0, 1, d}, {d, d, d, 1});
        f.args.q_descale = host_tensor(&descale, FP8ATTN_DTYPE_F32, {b, 1}, {0, 0});
        f.args.k_descale = f.args.v_descale = f.args.q_descale;
        std::vector<unsigned char> ws(1 << 20);
        fp8attn_error err = fresh_error();
        const int32_t s = fp8attn_attention_forward(f.plan, &f.args, ws.data(), ws.size(), nullptr, &err);
        return expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "forward(batch = 2^40)");
      },
      20);
}

// ---- Signed overflow from valid descriptors -----------------------------------------------

TEST(SignedOverflow, ForwardWithBroadcastKeysOf2To63IsRefused) {
  run_isolated([] {
    ForwardFixture f(1, 0, 1, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    const int64_t d = ForwardFixture::kHeadDim, sk = kI64Max - 1;
    f.args.k = host_tensor(f.k.data(), FP8ATTN_DTYPE_E4M3, {1, sk, 1, d}, {0, 0, d, 1});
    f.args.v = host_tensor(f.v.data(), FP8ATTN_DTYPE_E4M3, {1, sk, 1, d}, {0, 0, d, 1});
    std::vector<unsigned char> ws(1 << 20);
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_attention_forward(f.plan, &f.args, ws.data(), ws.size(), nullptr, &err);
    return expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "forward(seqlen_k = 2^63 − 2)");
  });
}

TEST(SignedOverflow, ForwardWithBatchInt64MaxIsRefused) {
  run_isolated([] {
    ForwardFixture f(1, 0, 1, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    const int64_t b = kI64Max, d = ForwardFixture::kHeadDim;
    f.args.q = host_tensor(f.q.data(), FP8ATTN_DTYPE_E4M3, {b, 0, 1, d}, {0, d, d, 1});
    f.args.k = host_tensor(f.k.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
    f.args.v = host_tensor(f.v.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
    f.args.out = host_tensor(f.out.data(), FP8ATTN_DTYPE_F32, {b, 0, 1, d}, {d, d, d, 1});
    std::vector<unsigned char> ws(1 << 20);
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_attention_forward(f.plan, &f.args, ws.data(), ws.size(), nullptr, &err);
    return expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "forward(batch = INT64_MAX)");
  });
}

TEST(SignedOverflow, QuantizeWithSeqlenInt64MaxIsRefused) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    float x = 0.25f;
    uint8_t y = 0;
    float descale = -1.0f;
    fp8attn_tensor in = host_tensor(&x, FP8ATTN_DTYPE_F32, {1, kI64Max, 1, 16}, {0, 0, 0, 0});
    fp8attn_tensor out = host_tensor(&y, FP8ATTN_DTYPE_E4M3, {1, kI64Max, 1, 16}, {0, 16, 16, 1});
    fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_quantize(ctx, &in, nullptr, nullptr, &out, &ds, nullptr, &err);
    fp8attn_context_destroy(ctx);
    // The extent is over FP8ATTN_MAX_SEQLEN, and the output's reach overflows: either refusal.
    if (s == FP8ATTN_STATUS_BAD_STRIDE) return std::string(descale == -1.0f ? "" : "descale written on failure");
    return expect_status(s, FP8ATTN_STATUS_BAD_SHAPE, err, "quantize(seqlen = INT64_MAX)");
  });
}

// ---- Element offsets that do not fit in int64 ---------------------------------------------

TEST(OffsetOverflow, QuantizeInputWhoseReachOverflowsIsRefused) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    std::vector<float> x = random_floats(4, fresh_seed());
    std::vector<uint8_t> y(3, 0xAB);
    float descale = -1.0f;
    fp8attn_tensor in = host_tensor(x.data(), FP8ATTN_DTYPE_F32, {1, 3, 1, 1}, {3, int64_t{1} << 62, 1, 1});
    fp8attn_tensor out = host_tensor(y.data(), FP8ATTN_DTYPE_E4M3, {1, 3, 1, 1}, {3, 1, 1, 1});
    fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_quantize(ctx, &in, nullptr, nullptr, &out, &ds, nullptr, &err);
    fp8attn_context_destroy(ctx);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_STRIDE, err, "quantize(stride 2^62, 3 rows)");
    if (problem.empty() && (descale != -1.0f || y[0] != 0xAB)) problem = "outputs written on failure";
    return problem;
  });
}

TEST(OffsetOverflow, ForwardInputWhoseReachOverflowsIsRefused) {
  run_isolated([] {
    ForwardFixture f(1, 3, 3, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    const int64_t d = ForwardFixture::kHeadDim;
    f.args.q = host_tensor(f.q.data(), FP8ATTN_DTYPE_E4M3, {1, 3, 1, d}, {3 * d, int64_t{1} << 62, d, 1});
    fp8attn_error err = fresh_error();
    const int32_t s = f.run(&err);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_STRIDE, err, "forward(q stride 2^62)");
    if (problem.empty() && !all_poison(f.out)) problem = "out written on failure";
    return problem;
  });
}

TEST(OffsetOverflow, ForwardOutputWhoseReachOverflowsIsRefused) {
  run_isolated([] {
    ForwardFixture f(1, 3, 3, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    const int64_t d = ForwardFixture::kHeadDim;
    f.args.out = host_tensor(f.out.data(), FP8ATTN_DTYPE_F32, {1, 3, 1, d}, {3 * d, int64_t{1} << 62, d, 1});
    fp8attn_error err = fresh_error();
    const int32_t s = f.run(&err);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_STRIDE, err, "forward(out stride 2^62)");
    if (problem.empty() && !all_poison(f.out)) problem = "out written on failure";
    return problem;
  });
}

TEST(OffsetOverflow, SpectralNormWithARowStrideAbove2To31IsRightOrRefused) {
  const uint64_t seed = fresh_seed();
  run_isolated([&] {
    fp8attn_context ctx = make_cpu_context();
    std::vector<float> q = random_floats(4, seed), k = random_floats(4, seed + 7);
    // One row per weight: the row stride 2^31 reaches no other element, but narrowed to int it
    // is a negative lda for BLAS.
    fp8attn_tensor tq = host_tensor(q.data(), FP8ATTN_DTYPE_F32, {1, 4}, {int64_t{1} << 31, 1});
    fp8attn_tensor tk = host_tensor(k.data(), FP8ATTN_DTYPE_F32, {1, 4}, {int64_t{1} << 31, 1});
    size_t bytes = 0;
    fp8attn_qk_spectral_norms_workspace_size(ctx, 1, 1, 1, 4, &bytes, nullptr);
    std::vector<unsigned char> ws(bytes);
    float sigma = -1.0f;
    fp8attn_error err = fresh_error();
    const int32_t s =
        fp8attn_qk_spectral_norms(ctx, &tq, &tk, 1, 1, 1, nullptr, &sigma, ws.data(), ws.size(), nullptr, &err);
    fp8attn_context_destroy(ctx);
    if (s == FP8ATTN_STATUS_BAD_STRIDE) return std::string(sigma == -1.0f ? "" : "sigma written on failure");
    std::string problem = expect_status(s, FP8ATTN_OK, err, "spectral_norms(row stride 2^31)");
    double nq = 0, nk = 0;
    for (int i = 0; i < 4; ++i) nq += double(q[i]) * q[i], nk += double(k[i]) * k[i];
    // For one head of head_dim 1, W_Qᵀ·W_K = q·kᵀ has σ = ‖q‖·‖k‖.
    const double want = std::sqrt(nq * nk);
    if (problem.empty() && !(std::fabs(sigma - want) <= 1e-4 * want))
      problem = "sigma " + std::to_string(sigma) + ", expected ‖q‖·‖k‖ = " + std::to_string(want);
    return problem;
  });
}

}  // namespace
}  // namespace fp8attn::test
