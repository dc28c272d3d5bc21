// The KV append kernel (kernels/sm90/kv_append) on the SIMT emulator: FP8ATTN_BACKEND_EMULATOR
// bit-equal to the CPU backend for every dtype pairing, granularity and rotated head dim, and the
// kernel's own guard: a slot past the cache that reaches it unchecked (device memory) is skipped.
#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/kv_append/kv_append_emulated.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/serving/kv_append_cpu.hpp"
#include "lib/serving/kv_append_problem.hpp"
#include "tests/serving/kv_append_test_support.hpp"

namespace fp8attn::kv_testing {
namespace {

struct Case {
  int32_t in, cache, granularity;
  int64_t dim;
  bool rotate;
};

TEST(KvAppendEmulated, BitEqualToTheCpuBackend) {
  const uint64_t seed = test_seed("kv_append emulator vs CPU");
  Context cpu(FP8ATTN_BACKEND_CPU, 2), emu(FP8ATTN_BACKEND_EMULATOR, 1);
  const std::vector<Case> cases = {
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_NONE, 40, false},
      {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_HEAD, 64, false},
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 128, false},
      {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_NONE, 72, false},
      {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16, FP8ATTN_KV_SCALE_NONE, 48, false},
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16, FP8ATTN_KV_SCALE_NONE, 64, true},
      // Rotation at every lane layout: one element per lane on a partial warp (8, 16), a full
      // warp (32), and several elements per lane (64, 128, 256).
      {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 8, true},
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_HEAD, 16, true},
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 32, true},
      {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_NONE, 64, true},
      {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 128, true},
      {FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, 256, true},
  };
  uint64_t n = 0;
  for (const Case& k : cases) {
    Shape s;
    s.tokens = 7, s.heads = 3, s.dim = k.dim, s.dim_v = 24, s.num_pages = 3, s.page_size = 4;
    s.in_dtype = k.in, s.cache_dtype = k.cache, s.granularity = k.granularity, s.rotate = k.rotate;
    Problem on_cpu = make_problem(s, seed + n), on_emu = make_problem(s, seed + n);
    ++n;
    fp8attn_error err{};
    err.struct_size = sizeof err;
    ASSERT_EQ(append(cpu.ctx, on_cpu, &err), FP8ATTN_OK) << err.message;
    ASSERT_EQ(append(emu.ctx, on_emu, &err), FP8ATTN_OK) << err.message;
    EXPECT_EQ(check_against_definition(on_emu), 0) << "dim " << k.dim << " rotate " << k.rotate;
    EXPECT_TRUE(outputs(on_cpu) == outputs(on_emu))
        << "emulator and CPU differ: input " << k.in << " cache " << k.cache << " granularity " << k.granularity
        << " dim " << k.dim << " rotate " << k.rotate;
  }
}

/// Non-finite and extreme inputs are not refused (the append never reads its data on the host):
/// NaN, ±inf, 3e38 and subnormals give the same bits on both backends for every cast (a NaN or
/// infinite amax gives scale 0 and descale +inf, as the quantizer's rule does).
TEST(KvAppendEmulated, NonFiniteInputsBitEqualToTheCpuBackend) {
  const uint64_t seed = test_seed("kv_append non-finite");
  Context cpu(FP8ATTN_BACKEND_CPU, 2), emu(FP8ATTN_BACKEND_EMULATOR, 1);
  const float extremes[] = {std::nanf(""), INFINITY, -INFINITY, 3e38f, -1e-40f, 0.0f, 500.0f};
  for (int32_t g : {FP8ATTN_KV_SCALE_NONE, FP8ATTN_KV_SCALE_PER_HEAD, FP8ATTN_KV_SCALE_PER_TOKEN_HEAD})
    for (int32_t cache : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
      if (cache == FP8ATTN_DTYPE_BF16 && g != FP8ATTN_KV_SCALE_NONE) continue;
      Shape s;
      s.tokens = 6, s.heads = 2, s.dim = 32, s.dim_v = 32, s.granularity = g, s.cache_dtype = cache, s.rotate = true;
      Problem a = make_problem(s, seed + static_cast<uint64_t>(g)), b = make_problem(s, seed + static_cast<uint64_t>(g));
      std::mt19937_64 rng(seed);
      for (Problem* p : {&a, &b}) {
        std::mt19937_64 same(rng());
        for (std::vector<uint8_t>* in : {&p->k_in, &p->v_in})
          for (int i = 0; i < 12; ++i) {
            const size_t at = static_cast<size_t>(same() % (in->size() / 4));
            std::memcpy(&(*in)[at * 4], &extremes[same() % 7], 4);
          }
        rng.seed(seed);  // the same corruption for both
      }
      ASSERT_EQ(append(cpu.ctx, a), FP8ATTN_OK);
      ASSERT_EQ(append(emu.ctx, b), FP8ATTN_OK);
      EXPECT_TRUE(outputs(a) == outputs(b)) << "granularity " << g << " cache " << cache;
    }
}

/// The caches in FlashInfer's HND layout ([num_pages, heads, page_size, dim] in memory) with every
/// element two bytes apart, the per-(token, head) scale cache likewise permuted: the same logical
/// values as the dense layout on the CPU backend, and the same bytes on the emulator.
TEST(KvAppendEmulated, PermutedAndStridedCachesHoldTheDenseValues) {
  const uint64_t seed = test_seed("kv_append strided caches");
  Context cpu(FP8ATTN_BACKEND_CPU, 2), emu(FP8ATTN_BACKEND_EMULATOR, 1);
  for (bool rotate : {false, true}) {
    Shape s;
    s.tokens = 7, s.heads = 3, s.dim = 32, s.dim_v = 32, s.num_pages = 3, s.page_size = 4;
    s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, s.rotate = rotate;
    Problem dense = make_problem(s, seed);
    ASSERT_EQ(append(cpu.ctx, dense), FP8ATTN_OK);
    std::vector<uint8_t> strided_out[2];
    for (int backend = 0; backend < 2; ++backend) {
      Problem p = make_problem(s, seed);
      const int64_t slots = p.slots_total();
      std::vector<uint8_t> kc(static_cast<size_t>(slots * s.heads * s.dim * 2), 0xFF), vc(kc);
      std::vector<float> kd(static_cast<size_t>(slots * s.heads), std::nanf("")), vd(kd);
      fp8attn_kv_append_args a = make_args(p);
      const std::vector<int64_t> hnd = {s.heads * s.page_size * s.dim * 2, s.dim * 2, s.page_size * s.dim * 2, 2};
      a.k_cache = make_tensor(kc.data(), FP8ATTN_DTYPE_E4M3, {s.num_pages, s.page_size, s.heads, s.dim}, hnd);
      a.v_cache = make_tensor(vc.data(), FP8ATTN_DTYPE_E4M3, {s.num_pages, s.page_size, s.heads, s.dim}, hnd);
      const std::vector<int64_t> scale_hnd = {s.heads * s.page_size, 1, s.page_size};
      a.k_descale = make_tensor(kd.data(), FP8ATTN_DTYPE_F32, {s.num_pages, s.page_size, s.heads}, scale_hnd);
      a.v_descale = make_tensor(vd.data(), FP8ATTN_DTYPE_F32, {s.num_pages, s.page_size, s.heads}, scale_hnd);
      ASSERT_EQ(fp8attn_kv_append_async(backend == 0 ? cpu.ctx : emu.ctx, &a, nullptr, nullptr), FP8ATTN_OK);
      for (int side = 0; side < 2; ++side) {
        const std::vector<uint8_t>& got = side == 0 ? kc : vc;
        const std::vector<uint8_t>& want = side == 0 ? dense.k_cache : dense.v_cache;
        const std::vector<float>& got_d = side == 0 ? kd : vd;
        const std::vector<float>& want_d = side == 0 ? dense.k_descale : dense.v_descale;
        for (int64_t slot = 0; slot < slots; ++slot)
          for (int64_t h = 0; h < s.heads; ++h) {
            const int64_t page = slot / s.page_size, off = slot % s.page_size;
            const float gd = got_d[static_cast<size_t>(page * s.heads * s.page_size + h * s.page_size + off)];
            const float wd = want_d[static_cast<size_t>(slot * s.heads + h)];
            EXPECT_TRUE(gd == wd || (std::isnan(gd) && std::isnan(wd))) << "slot " << slot << " head " << h;
            for (int64_t e = 0; e < s.dim; ++e) {
              const size_t at = static_cast<size_t>(page * hnd[0] + off * hnd[1] + h * hnd[2] + e * hnd[3]);
              ASSERT_EQ(got[at], want[static_cast<size_t>((slot * s.heads + h) * s.dim + e)])
                  << "slot " << slot << " head " << h << " element " << e;
              ASSERT_EQ(got[at + 1], 0xFF) << "the byte between two elements was written";
            }
          }
      }
      strided_out[backend] = kc;
      strided_out[backend].insert(strided_out[backend].end(), vc.begin(), vc.end());
    }
    EXPECT_TRUE(strided_out[0] == strided_out[1]) << "rotate " << rotate;
  }
}

TEST(KvAppendEmulated, RefusalsMatchTheCpuBackend) {
  Context emu(FP8ATTN_BACKEND_EMULATOR, 1);
  Shape s;
  s.granularity = FP8ATTN_KV_SCALE_PER_HEAD;
  Problem p = make_problem(s, 5);
  const std::vector<uint8_t> before = outputs(p);
  const float descale = p.k_descale[0];
  p.k_descale[0] = 0.0f;
  EXPECT_EQ(append(emu.ctx, p), FP8ATTN_STATUS_BAD_SCALE);
  p.k_descale[0] = descale;
  p.slots[0] = p.slots_total();
  EXPECT_EQ(append(emu.ctx, p), FP8ATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(outputs(p), before);
}

/// Slots in device memory reach the kernel unchecked: one past the cache (and one far past it)
/// must be skipped, its token's rows written nowhere, and every other token appended. The
/// problem is validated with in-range slots, then the slots change, as device memory can.
TEST(KvAppendEmulated, KernelSkipsSlotsPastTheCache) {
  const uint64_t seed = test_seed("kv_append kernel slot guard");
  Shape s;
  s.tokens = 6, s.heads = 2, s.dim = 32, s.dim_v = 32, s.num_pages = 2, s.page_size = 4;
  s.granularity = FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, s.rotate = true;
  for (int backend = 0; backend < 2; ++backend) {
    Problem p = make_problem(s, seed);
    for (int64_t t = 0; t < s.tokens; ++t) p.slots[static_cast<size_t>(t)] = t;  // all valid first
    const fp8attn_kv_append_args a = make_args(p);
    const sm90::kv::KvAppendParams params = serving::make_kv_append_params(a, FP8ATTN_DEVICE_HOST);
    p.slots[1] = p.slots_total();
    p.slots[4] = INT64_MAX;
    if (backend == 0) {
      sm90::kv::run_kv_append_emulated(params, emu::LaunchConfig{});
    } else {
      ThreadPool pool(2);
      serving::kv_append_on_cpu(params, pool);
    }
    // The skipped tokens count as padding for the check: their slots (1 and 4) keep the poison.
    p.slots[1] = p.slots[4] = -1;
    EXPECT_EQ(check_against_definition(p), 0) << (backend == 0 ? "emulated kernel" : "CPU");
  }
}

}  // namespace
}  // namespace fp8attn::kv_testing
