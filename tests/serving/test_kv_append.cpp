// fp8attn_kv_append_async on the CPU backend: every dtype pairing and granularity against the
// header's definition (kv_append_test_support.hpp), poison kept in untouched slots, the
// rotation's accuracy, the round trip with fp8attn_quantize, and every refusal with its status.
#include <functional>
#include <string>

#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/serving/kv_append_cpu.hpp"
#include "lib/serving/kv_append_problem.hpp"
#include "lib/serving/kv_append_rows.hpp"
#include "tests/serving/kv_append_test_support.hpp"

namespace fp8attn::kv_testing {
namespace {

struct Combo {
  int32_t in, cache, granularity;
  bool rotate;
};

/// Every accepted pairing: input {F32, BF16, E4M3} × cache {E4M3, BF16} × granularity × rotate.
std::vector<Combo> accepted_combos() {
  std::vector<Combo> out;
  for (int32_t in : {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3})
    for (int32_t cache : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16})
      for (int32_t g : {FP8ATTN_KV_SCALE_NONE, FP8ATTN_KV_SCALE_PER_HEAD, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD})
        for (bool rotate : {false, true}) {
          if (in == FP8ATTN_DTYPE_E4M3 && (cache != FP8ATTN_DTYPE_E4M3 || rotate || g == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD))
            continue;
          if (cache == FP8ATTN_DTYPE_BF16 && g != FP8ATTN_KV_SCALE_NONE) continue;
          out.push_back({in, cache, g, rotate});
        }
  return out;
}

TEST(KvAppend, EveryDtypeAndGranularityMatchesTheDefinition) {
  const uint64_t seed = test_seed("kv_append definition");
  Context c;
  int n = 0;
  for (const Combo& combo : accepted_combos()) {
    Shape s;
    s.tokens = 11, s.heads = 3, s.dim = 64, s.dim_v = 32, s.num_pages = 4, s.page_size = 5;
    s.in_dtype = combo.in, s.cache_dtype = combo.cache, s.granularity = combo.granularity, s.rotate = combo.rotate;
    Problem p = make_problem(s, seed + static_cast<uint64_t>(n++));
    fp8attn_error err{};
    err.struct_size = sizeof err;
    ASSERT_EQ(append(c.ctx, p, &err), FP8ATTN_OK) << err.message;
    EXPECT_EQ(check_against_definition(p), 0) << "input " << combo.in << " cache " << combo.cache << " granularity "
                                              << combo.granularity << " rotate " << combo.rotate;
  }
  EXPECT_EQ(n, 18);
}

TEST(KvAppend, GqaHeadCountsPageSizesAndThreads) {
  const uint64_t seed = test_seed("kv_append shapes");
  for (const auto& [heads, dim, dim_v, page_size, tokens] :
       std::vector<std::array<int64_t, 5>>{{1, 128, 128, 16, 37}, {8, 128, 64, 1, 9}, {2, 16, 48, 7, 20}}) {
    for (int threads : {1, 3}) {
      Context c(FP8ATTN_BACKEND_CPU, threads);
      Shape s;
      s.heads = heads, s.dim = dim, s.dim_v = dim_v, s.page_size = page_size, s.tokens = tokens;
      s.num_pages = (tokens + page_size) / page_size + 1;
      s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, s.in_dtype = FP8ATTN_DTYPE_BF16;
      s.rotate = (dim & (dim - 1)) == 0;
      Problem p = make_problem(s, seed + static_cast<uint64_t>(heads * 1000 + threads));
      ASSERT_EQ(append(c.ctx, p), FP8ATTN_OK);
      EXPECT_EQ(check_against_definition(p), 0) << "heads " << heads << " dim " << dim << " threads " << threads;
    }
  }
}

/// The row loop's builds (baseline, AVX2, AVX-512, as far as this CPU goes) give the same bits.
/// NOTE: through the statically linked core's kv_append_on_cpu, not fp8attn_kv_append_async: the
/// shared library holds its own copy of the dispatcher, which set_active_cpu_isa here does not
/// steer, so every run through the C API took the same build and this test could not fail.
TEST(KvAppend, EveryCpuIsaBuildGivesTheSameBits) {
  const uint64_t seed = test_seed("kv_append ISA builds");
  const CpuIsa best = best_cpu_isa();
  for (const Combo& combo : accepted_combos()) {
    Shape s;
    s.tokens = 9, s.heads = 2, s.dim = 128, s.dim_v = 40, s.num_pages = 3, s.page_size = 4;
    s.in_dtype = combo.in, s.cache_dtype = combo.cache, s.granularity = combo.granularity, s.rotate = combo.rotate;
    std::vector<uint8_t> first;
    for (int isa = 0; isa <= static_cast<int>(best); ++isa) {
      ASSERT_TRUE(set_active_cpu_isa(static_cast<CpuIsa>(isa)));
      Problem p = make_problem(s, seed);
      const fp8attn_kv_append_args a = make_args(p);
      ThreadPool pool(2);
      serving::kv_append_on_cpu(serving::make_kv_append_params(a, FP8ATTN_DEVICE_HOST), pool);
      if (isa == 0) first = outputs(p);
      EXPECT_TRUE(outputs(p) == first) << serving::kv_append_row_ops().isa << " differs from the baseline build";
    }
  }
  set_active_cpu_isa(best);
  std::printf("compared the builds up to %s\n", cpu_isa_name(best));
}

TEST(KvAppend, ZeroTokensWritesNothing) {
  Context c;
  Shape s;
  s.tokens = 0, s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  Problem p = make_problem(s, 1);
  const std::vector<uint8_t> before = outputs(p);
  fp8attn_kv_append_args a = make_args(p);
  a.k.data = a.v.data = a.slot_mapping.data = nullptr;  // no element: NULL is allowed
  ASSERT_EQ(fp8attn_kv_append_async(c.ctx, &a, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_EQ(outputs(p), before);
}

/// Dequantized, unrotated K rows against the input: in the rotated basis each element's error is
/// at most half an E4M3 step, |x|·2^−4 for normals and 2^−10·descale below 2^−6·descale; the
/// inverse rotation is orthogonal, so the row's L2 error stays within the L2 norm of those
/// bounds (plus the FP32 rotation's rounding, below 1e−6 of the row's norm).
TEST(KvAppend, RotatedRowsDequantizeToTheInputWithinTheE4M3Bound) {
  const uint64_t seed = test_seed("kv_append rotation bound");
  Context c;
  int checked = 0, skipped = 0;
  for (int32_t g : {FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, FP8ATTN_KV_SCALE_PER_HEAD, FP8ATTN_KV_SCALE_NONE})
    for (int64_t dim : {16, 64, 256}) {
      Shape s;
      s.tokens = 9, s.heads = 2, s.dim = dim, s.dim_v = 8, s.num_pages = 3, s.page_size = 4;
      s.granularity = g, s.rotate = true;
      Problem p = make_problem(s, seed + static_cast<uint64_t>(dim + g));
      ASSERT_EQ(append(c.ctx, p), FP8ATTN_OK);
      const int log2 = quant::exact_log2(dim);
      for (int64_t t = 0; t < s.tokens; ++t) {
        const int64_t slot = p.slots[static_cast<size_t>(t)];
        if (slot < 0) continue;
        for (int64_t h = 0; h < s.heads; ++h) {
          const float d = g == FP8ATTN_KV_SCALE_PER_TOKEN_HEAD ? p.k_descale[static_cast<size_t>(slot * s.heads + h)]
                          : g == FP8ATTN_KV_SCALE_PER_HEAD     ? p.k_descale[static_cast<size_t>(h)]
                                                               : 1.0f;
          std::vector<double> y(static_cast<size_t>(dim));
          double bound2 = 0.0, norm2 = 0.0, err2 = 0.0;
          bool saturated = false;
          for (int64_t e = 0; e < dim; ++e) {
            const double v = num::e4m3_to_float(p.k_cache[static_cast<size_t>((slot * s.heads + h) * dim + e)]);
            y[static_cast<size_t>(e)] = v * d;
            saturated = saturated || (g == FP8ATTN_KV_SCALE_NONE && std::fabs(v) == 448.0);
            const double half_step = std::max(std::fabs(v) * 0x1p-4, 0x1p-10) * d;
            bound2 += half_step * half_step;
          }
          quant::unrotate_row_f64(y.data(), log2, p.rotation_seed);
          for (int64_t e = 0; e < dim; ++e) {
            const double x = p.k_values[static_cast<size_t>((t * s.heads + h) * dim + e)];
            err2 += (y[static_cast<size_t>(e)] - x) * (y[static_cast<size_t>(e)] - x);
            norm2 += x * x;
          }
          // NOTE: with descale 1 (NONE) a rotated element may pass 448 and saturate; such rows
          // are outside the bound and are counted apart (PER_HEAD's test descales never saturate).
          if (saturated) {
            ++skipped;
            continue;
          }
          ++checked;
          EXPECT_LE(std::sqrt(err2), std::sqrt(bound2) * 1.0001 + 1e-6 * std::sqrt(norm2))
              << "granularity " << g << " dim " << dim << " token " << t << " head " << h;
        }
      }
    }
  EXPECT_GT(checked, 4 * skipped) << "too few rows inside E4M3's range to check the bound";
}

/// PER_TOKEN_HEAD is fp8attn_quantize's per-block rule with one-row blocks (scale 448 / amax,
/// margin 0, the same rotation): appending the rows and quantizing them give the same codes and
/// descales, bit for bit.
TEST(KvAppend, RoundTripEqualsTheQuantizerPerToken) {
  const uint64_t seed = test_seed("kv_append round trip");
  Context c;
  for (int32_t in : {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16})
    for (bool rotate : {false, true}) {
      Shape s;
      s.tokens = 13, s.heads = 4, s.dim = 128, s.dim_v = 128, s.num_pages = 5, s.page_size = 3, s.pad = 0;
      s.in_dtype = in, s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, s.rotate = rotate;
      Problem p = make_problem(s, seed + static_cast<uint64_t>(in * 2 + rotate));
      ASSERT_EQ(append(c.ctx, p), FP8ATTN_OK);
      fp8attn_tensor input = make_tensor(p.k_in.data(), in, {1, s.tokens, s.heads, s.dim},
                                         {0, s.heads * s.dim, s.dim, 1});
      std::vector<uint8_t> codes(static_cast<size_t>(s.tokens * s.heads * s.dim), 0xFF);
      std::vector<float> descale(static_cast<size_t>(s.heads * s.tokens), std::nanf(""));
      fp8attn_tensor output = make_tensor(codes.data(), FP8ATTN_DTYPE_E4M3, {1, s.tokens, s.heads, s.dim},
                                          {0, s.heads * s.dim, s.dim, 1});
      fp8attn_tensor descale_t = make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1, s.heads, s.tokens}, {0, s.tokens, 1});
      fp8attn_quantize_options o{};
      o.struct_size = sizeof o;
      o.granularity = FP8ATTN_QUANT_PER_BLOCK;
      o.block_rows = 1;
      o.rotate = rotate ? 1u : 0u;
      o.seed = p.rotation_seed;
      ASSERT_EQ(fp8attn_quantize(c.ctx, &input, nullptr, &o, &output, &descale_t, nullptr, nullptr), FP8ATTN_OK);
      int compared = 0;
      for (int64_t t = 0; t < s.tokens; ++t) {
        const int64_t slot = p.slots[static_cast<size_t>(t)];
        if (slot < 0) continue;
        for (int64_t h = 0; h < s.heads; ++h) {
          ++compared;
          EXPECT_EQ(p.k_descale[static_cast<size_t>(slot * s.heads + h)], descale[static_cast<size_t>(h * s.tokens + t)]);
          for (int64_t e = 0; e < s.dim; ++e)
            ASSERT_EQ(p.k_cache[static_cast<size_t>((slot * s.heads + h) * s.dim + e)],
                      codes[static_cast<size_t>((t * s.heads + h) * s.dim + e)])
                << "token " << t << " head " << h << " element " << e;
        }
      }
      EXPECT_GT(compared, 0);
    }
}

// Refusals: each bad argument gets its status and a message, and leaves every output as it was.
struct Refusal {
  const char* name;
  int32_t status;
  Shape shape;
  std::function<void(fp8attn_kv_append_args&, Problem&)> mutate;
};

Shape with(std::function<void(Shape&)> f) {
  Shape s;
  s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
  f(s);
  return s;
}

TEST(KvAppend, EveryRefusalHasItsStatusAndLeavesOutputsUntouched) {
  const Shape token = with([](Shape&) {});
  const Shape head = with([](Shape& s) { s.granularity = FP8ATTN_KV_SCALE_PER_HEAD; });
  const Shape e4m3_in = with([](Shape& s) { s.in_dtype = FP8ATTN_DTYPE_E4M3, s.granularity = FP8ATTN_KV_SCALE_NONE; });
  const Shape dim96 = with([](Shape& s) { s.dim = 96; });
  const Shape dim512 = with([](Shape& s) { s.dim = 512; });
  const std::vector<Refusal> refusals = {
      {"struct_size 0", FP8ATTN_STATUS_BAD_STRUCT_SIZE, token, [](auto& a, auto&) { a.struct_size = 0; }},
      {"struct_size too small", FP8ATTN_STATUS_BAD_STRUCT_SIZE, token, [](auto& a, auto&) { a.struct_size = 16; }},
      {"next", FP8ATTN_STATUS_BAD_EXTENSION, token, [](auto& a, auto&) { a.next = &a; }},
      {"k F16", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.k.dtype = a.v.dtype = FP8ATTN_DTYPE_F16; }},
      {"k dtype unknown", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.k.dtype = 99; }},
      {"v dtype differs", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.v.dtype = FP8ATTN_DTYPE_BF16; }},
      {"cache F32", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.k_cache.dtype = a.v_cache.dtype = FP8ATTN_DTYPE_F32; }},
      {"v_cache dtype differs", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.v_cache.dtype = FP8ATTN_DTYPE_BF16; }},
      {"E4M3 into BF16", FP8ATTN_STATUS_BAD_DTYPE, e4m3_in,
       [](auto& a, auto&) { a.k_cache.dtype = a.v_cache.dtype = FP8ATTN_DTYPE_BF16; }},
      {"slot_mapping I32", FP8ATTN_STATUS_BAD_DTYPE, token, [](auto& a, auto&) { a.slot_mapping.dtype = FP8ATTN_DTYPE_I32; }},
      {"descale BF16", FP8ATTN_STATUS_BAD_DTYPE, head, [](auto& a, auto&) { a.k_descale.dtype = FP8ATTN_DTYPE_BF16; }},
      {"k rank 4", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.k.rank = 4, a.k.shape[3] = 1; }},
      {"cache head_dim", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.k_cache.shape[3] -= 1; }},
      {"cache heads", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.v_cache.shape[2] = 1; }},
      {"v tokens", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.v.shape[0] -= 1; }},
      {"v_cache pages", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.v_cache.shape[0] -= 1; }},
      {"page_size 0", FP8ATTN_STATUS_BAD_SHAPE, token,
       [](auto& a, auto&) { a.k_cache.shape[1] = a.v_cache.shape[1] = 0; }},
      {"slot_mapping length", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.slot_mapping.shape[0] -= 1; }},
      {"token descale pages", FP8ATTN_STATUS_BAD_SHAPE, token, [](auto& a, auto&) { a.v_descale.shape[0] -= 1; }},
      {"head descale length", FP8ATTN_STATUS_BAD_SHAPE, head, [](auto& a, auto&) { a.k_descale.shape[0] += 1; }},
      {"negative stride", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.k.stride[2] = -1; }},
      {"cache overlaps itself", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.k_cache.stride[0] = 0; }},
      {"scale cache overlaps itself", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.v_descale.stride[1] = 1; }},
      {"v_cache is k_cache", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.v_cache.data = a.k_cache.data; }},
      {"input overlaps the cache", FP8ATTN_STATUS_BAD_STRIDE, token,
       [](auto& a, auto& p) { a.k_cache.data = p.k_in.data(); a.k_cache.dtype = a.v_cache.dtype = FP8ATTN_DTYPE_E4M3; }},
      {"descale overlaps a cache", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.k_descale.data = a.v_cache.data; }},
      {"slots overlap a cache", FP8ATTN_STATUS_BAD_STRIDE, token, [](auto& a, auto&) { a.slot_mapping.data = a.k_cache.data; }},
      {"granularity 3", FP8ATTN_STATUS_BAD_OPTION, token, [](auto& a, auto&) { a.scale_granularity = 3; }},
      {"granularity −1", FP8ATTN_STATUS_BAD_OPTION, token, [](auto& a, auto&) { a.scale_granularity = -1; }},
      {"PER_HEAD into BF16", FP8ATTN_STATUS_BAD_OPTION, with([](Shape& s) { s.granularity = FP8ATTN_KV_SCALE_PER_HEAD, s.cache_dtype = FP8ATTN_DTYPE_BF16; }),
       [](auto&, auto&) {}},
      {"rotate 2", FP8ATTN_STATUS_BAD_OPTION, token, [](auto& a, auto&) { a.rotate = 2; }},
      {"rotate E4M3 input", FP8ATTN_STATUS_BAD_OPTION, e4m3_in, [](auto& a, auto&) { a.rotate = 1; }},
      {"PER_TOKEN_HEAD E4M3 input", FP8ATTN_STATUS_BAD_OPTION, e4m3_in, [](auto& a, auto& p) {
         a.scale_granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD;
         p.k_descale.assign(static_cast<size_t>(p.slots_total() * p.s.heads), 0.0f);
         a.k_descale = a.v_descale = make_tensor(p.k_descale.data(), FP8ATTN_DTYPE_F32, {p.s.num_pages, p.s.page_size, p.s.heads},
                                                 {p.s.page_size * p.s.heads, p.s.heads, 1});
       }},
      {"rotate head_dim 96", FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, dim96, [](auto& a, auto&) { a.rotate = 1; }},
      {"rotate head_dim 512", FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, dim512, [](auto& a, auto&) { a.rotate = 1; }},
      {"descale 0", FP8ATTN_STATUS_BAD_SCALE, head, [](auto&, auto& p) { p.k_descale[1] = 0.0f; }},
      {"descale −1", FP8ATTN_STATUS_BAD_SCALE, head, [](auto&, auto& p) { p.v_descale[0] = -1.0f; }},
      {"descale NaN", FP8ATTN_STATUS_BAD_SCALE, head, [](auto&, auto& p) { p.v_descale[1] = std::nanf(""); }},
      {"descale inf", FP8ATTN_STATUS_BAD_SCALE, head, [](auto&, auto& p) { p.k_descale[0] = INFINITY; }},
      {"slot past the cache", FP8ATTN_STATUS_INVALID_ARGUMENT, token,
       [](auto&, auto& p) { p.slots.back() = p.slots_total(); }},
      {"slot far past the cache", FP8ATTN_STATUS_INVALID_ARGUMENT, token,
       [](auto&, auto& p) { p.slots.front() = INT64_MAX; }},
      {"CUDA memory", FP8ATTN_STATUS_BAD_DEVICE, token, [](auto& a, auto&) { a.v_cache.device = FP8ATTN_DEVICE_CUDA; }},
      {"NULL cache", FP8ATTN_STATUS_NULL_POINTER, token, [](auto& a, auto&) { a.k_cache.data = nullptr; }},
      {"NULL slots", FP8ATTN_STATUS_NULL_POINTER, token, [](auto& a, auto&) { a.slot_mapping.data = nullptr; }},
      {"NULL descale", FP8ATTN_STATUS_NULL_POINTER, head, [](auto& a, auto&) { a.v_descale.data = nullptr; }},
  };
  Context c;
  uint64_t seed = test_seed("kv_append refusals");
  for (const Refusal& r : refusals) {
    Problem p = make_problem(r.shape, seed++);
    fp8attn_kv_append_args a = make_args(p);
    r.mutate(a, p);
    const std::vector<uint8_t> before = outputs(p);
    fp8attn_error err{};
    err.struct_size = sizeof err;
    EXPECT_EQ(fp8attn_kv_append_async(c.ctx, &a, nullptr, &err), r.status) << r.name << ": " << err.message;
    EXPECT_EQ(err.status, r.status) << r.name;
    EXPECT_NE(err.message[0], '\0') << r.name;
    EXPECT_EQ(outputs(p), before) << r.name << " wrote an output";
  }
}

TEST(KvAppend, NullHandleArgsAndStream) {
  Context c;
  Problem p = make_problem(Shape{}, 3);
  const fp8attn_kv_append_args a = make_args(p);
  const std::vector<uint8_t> before = outputs(p);
  EXPECT_EQ(fp8attn_kv_append_async(nullptr, &a, nullptr, nullptr), FP8ATTN_STATUS_BAD_HANDLE);
  EXPECT_EQ(fp8attn_kv_append_async(c.ctx, nullptr, nullptr, nullptr), FP8ATTN_STATUS_NULL_POINTER);
  EXPECT_EQ(fp8attn_kv_append_async(c.ctx, &a, reinterpret_cast<CUstream_st*>(0x10), nullptr), FP8ATTN_STATUS_BAD_STREAM);
  EXPECT_EQ(outputs(p), before);
}

}  // namespace
}  // namespace fp8attn::kv_testing
