// Resources and results through the C API: a context whose worker threads cannot start reports
// OUT_OF_MEMORY; a scale state always loads its own blob back; non-finite results report
// NUMERICS, never OK; execute calls (the forward and the backward) make no heap allocation; every
// backend refuses the same rotation sizes; a predicted fraction stays in [0, 1].
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "tests/hardening/alloc_counter.hpp"
#include "tests/hardening/forward_fixture.hpp"
#include "tests/hardening/hardening_support.hpp"

namespace fp8attn::test {
namespace {

// ---- A worker thread that cannot start ----------------------------------------------------

uint64_t address_space_in_use() {
  unsigned long long pages = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (fscanf(f, "%llu", &pages) != 1) pages = 0;
  fclose(f);
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(ThreadStartFailure, ContextWithThreadsThatCannotStartReportsOutOfMemory) {
  if (FP8ATTN_TEST_SANITIZED) GTEST_SKIP() << "an address-space limit does not combine with the sanitizer shadow";
  run_isolated(
      [] {
        // Room for a few thread stacks only: most of the 100000 workers cannot start.
        const uint64_t limit = address_space_in_use() + (uint64_t{256} << 20);
        rlimit lim{limit, limit};
        setrlimit(RLIMIT_AS, &lim);
        fp8attn_context_options o{};
        o.struct_size = sizeof o;
        o.backend = FP8ATTN_BACKEND_CPU;
        o.num_threads = 100000;
        o.log_level = FP8ATTN_LOG_OFF;
        fp8attn_context ctx = reinterpret_cast<fp8attn_context>(uintptr_t{0x1234});
        fp8attn_error err = fresh_error();
        const int32_t s = fp8attn_context_create(&o, &ctx, &err);
        std::string problem = expect_status(s, FP8ATTN_STATUS_OUT_OF_MEMORY, err, "context_create(100000 threads)");
        if (problem.empty() && ctx != reinterpret_cast<fp8attn_context>(uintptr_t{0x1234}))
          problem = "out written on failure";
        if (problem.empty() && std::string(err.message).find("thread") == std::string::npos)
          problem = "the message does not say a thread failed to start: " + std::string(err.message);
        return problem;
      },
      30, ~uint64_t{0});
}

// ---- A checkpoint that must always restore -----------------------------------------------

/// Serializes `state` and loads the blob back into it; "" when the round trip works.
std::string round_trip(fp8attn_scale_state state) {
  size_t size = 0;
  fp8attn_scale_state_serialize(state, nullptr, 0, &size, nullptr);
  std::vector<uint8_t> blob(size);
  fp8attn_error err = fresh_error();
  if (fp8attn_scale_state_serialize(state, blob.data(), blob.size(), &size, &err) != FP8ATTN_OK)
    return std::string("serialize failed: ") + err.message;
  const int32_t s = fp8attn_scale_state_deserialize(state, blob.data(), blob.size(), &err);
  return expect_status(s, FP8ATTN_OK, err, "deserialize of the state's own blob");
}

TEST(RestorableScaleState, HugeSigmaIsRefusedAndTheStateStaysRestorable) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_scale_state state = nullptr;
    fp8attn_scale_state_create(ctx, nullptr, &state, nullptr);
    float before = 0, before_inv = 0;
    fp8attn_scale_state_get_scale(state, 0, FP8ATTN_TENSOR_LOGIT, &before, &before_inv, nullptr);
    const float sigma = 1e38f;
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_scale_state_set_qk_sigma(state, 0, &sigma, 1, 1, 10000, &err);
    std::string problem = expect_status(s, FP8ATTN_STATUS_NUMERICS, err, "set_qk_sigma(1e38, d_h 1, d 1e4)");
    float after = 0, after_inv = 0;
    fp8attn_scale_state_get_scale(state, 0, FP8ATTN_TENSOR_LOGIT, &after, &after_inv, nullptr);
    if (problem.empty() && (after != before || after_inv != before_inv)) problem = "the logit scale changed";
    if (problem.empty()) problem = round_trip(state);
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
    return problem;
  });
}

TEST(RestorableScaleState, HugeAmaxWithMarginKeepsARestorableScale) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_scale_state_options o{};
    o.struct_size = sizeof o;
    o.margin = 20.0f;
    fp8attn_scale_state state = nullptr;
    fp8attn_scale_state_create(ctx, &o, &state, nullptr);
    fp8attn_scale_state_report_amax(state, 0, FP8ATTN_TENSOR_Q, 3e38f, nullptr);
    fp8attn_scale_state_step(state, nullptr);
    float scale = 0, scale_inv = 0;
    fp8attn_scale_state_get_scale(state, 0, FP8ATTN_TENSOR_Q, &scale, &scale_inv, nullptr);
    std::string problem;
    if (!(std::isfinite(scale) && scale > 0 && std::isfinite(scale_inv) && scale_inv > 0))
      problem = "scale " + std::to_string(scale) + " / scale_inv " + std::to_string(scale_inv) + " not representable";
    if (problem.empty()) problem = round_trip(state);
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
    return problem;
  });
}

/// A one-layer default blob with layer 0's auto-α fields replaced; resealed.
std::vector<uint8_t> blob_with_auto_alpha(fp8attn_scale_state state, uint32_t steps_seen, uint32_t done, float alpha) {
  size_t size = 0;
  fp8attn_scale_state_serialize(state, nullptr, 0, &size, nullptr);
  std::vector<uint8_t> blob(size);
  fp8attn_scale_state_serialize(state, blob.data(), blob.size(), &size, nullptr);
  // Layer 0 starts after the 96-byte header: σ, d_h, B_X, α, ρ_max, steps_seen, done.
  uint32_t alpha_bits;
  std::memcpy(&alpha_bits, &alpha, 4);
  put_u32(blob, 96 + 12, alpha_bits);
  put_u32(blob, 96 + 20, steps_seen);
  put_u32(blob, 96 + 24, done);
  reseal_blob(blob);
  return blob;
}

TEST(RestorableScaleState, LoaderRefusesFieldsThatDisagree) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_scale_state state = nullptr;
    fp8attn_scale_state_create(ctx, nullptr, &state, nullptr);  // burn-in 100 steps
    std::string problem;
    struct Case {
      uint32_t steps_seen, done;
      float alpha;
      const char* what;
    } cases[] = {{0x7FFFFFFF, 0, 1.0f, "steps_seen = INT32_MAX with done = 0"},
                 {101, 0, 1.0f, "steps_seen past the burn-in with done = 0"},
                 {3, 1, 1.0f, "done before the burn-in ends"},
                 {3, 0, 0.5f, "α < 1 before the burn-in ends"}};
    for (const Case& c : cases) {
      const std::vector<uint8_t> blob = blob_with_auto_alpha(state, c.steps_seen, c.done, c.alpha);
      fp8attn_error err = fresh_error();
      const int32_t s = fp8attn_scale_state_deserialize(state, blob.data(), blob.size(), &err);
      if (problem.empty()) problem = expect_status(s, FP8ATTN_STATUS_NUMERICS, err, c.what);
    }
    // The untouched blob still loads, so the edits above are what was refused.
    if (problem.empty()) problem = round_trip(state);
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
    return problem;
  });
}

// ---- Non-finite or wrong numbers are never OK ---------------------------------------------

std::string logit_bound_case(float sigma, int32_t head_dim, float bx, const char* what) {
  float bound = -1.0f, scale = -1.0f;
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_logit_bound(&sigma, 1, head_dim, bx, 1.0f, &bound, &scale, &err);
  std::string problem = expect_status(s, FP8ATTN_STATUS_NUMERICS, err, what);
  if (problem.empty() && (bound != -1.0f || scale != -1.0f)) problem = std::string(what) + ": outputs written";
  return problem;
}

TEST(NonFiniteResults, LogitBoundRefusesInfiniteOrZeroResults) {
  run_isolated([] {
    std::string p = logit_bound_case(3e38f, 1, 1e4f, "bound = +inf");
    if (p.empty()) p = logit_bound_case(1e-45f, 1, 1e-20f, "bound = 0");
    if (p.empty()) p = logit_bound_case(1e-40f, 1, 1.0f, "scale = +inf");
    return p;
  });
}

std::string spectral_with(float poison_weight, float poison_warm, uint64_t seed) {
  fp8attn_context ctx = make_cpu_context();
  std::vector<float> q = random_floats(8 * 16, seed), k = random_floats(8 * 16, seed + 1);
  q[37] = poison_weight;
  fp8attn_tensor tq = host_tensor(q.data(), FP8ATTN_DTYPE_F32, {8, 16}, {16, 1});
  fp8attn_tensor tk = host_tensor(k.data(), FP8ATTN_DTYPE_F32, {8, 16}, {16, 1});
  size_t bytes = 0;
  fp8attn_qk_spectral_norms_workspace_size(ctx, 2, 2, 4, 16, &bytes, nullptr);
  std::vector<unsigned char> ws(bytes);
  std::vector<float> warm = random_floats(8, seed + 2);
  warm[1] = poison_warm;
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.warm_start = warm.data();
  float sigma[2] = {-1.0f, -1.0f};
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_qk_spectral_norms(ctx, &tq, &tk, 2, 2, 4, &o, sigma, ws.data(), ws.size(), nullptr, &err);
  fp8attn_context_destroy(ctx);
  std::string problem = expect_status(s, FP8ATTN_STATUS_NUMERICS, err, "spectral norms of a non-finite input");
  if (problem.empty() && (sigma[0] != -1.0f || sigma[1] != -1.0f)) problem = "sigma written on failure";
  return problem;
}

TEST(NonFiniteResults, SpectralNormsRefuseNonFiniteWeightsAndWarmStarts) {
  const uint64_t seed = fresh_seed();
  run_isolated([&] {
    std::string p = spectral_with(NAN, 0.5f, seed);
    if (p.empty()) p = spectral_with(INFINITY, 0.5f, seed);
    if (p.empty()) p = spectral_with(0.5f, NAN, seed);
    return p;
  });
}

// Descales whose product overflows FP32 are refused before anything is computed: BAD_SCALE, out
// untouched.
TEST(NonFiniteResults, ForwardWhoseDescalesOverflowIsRefusedBeforeWriting) {
  run_isolated([] {
    ForwardFixture f(1, 8, 8, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    float big = 1e30f;
    f.args.q_descale = host_tensor(&big, FP8ATTN_DTYPE_F32, {1, 1}, {0, 0});
    f.args.k_descale = f.args.q_descale;
    fp8attn_error err = fresh_error();
    std::string problem = expect_status(f.run(&err), FP8ATTN_STATUS_BAD_SCALE, err, "forward with descales 1e30·1e30");
    if (problem.empty() && !all_poison(f.out)) problem = "out written on failure";
    return problem;
  });
}

// A finite FP32 output above BF16's range would become inf in a BF16 output. Keys all equal make
// every P̃ = S_p exactly, so O would be 448 · v_descale ≈ 3.40e38 in FP32 (below FLT_MAX, above
// the largest value that rounds to a finite BF16): the V descale is refused before the call
// computes, with BAD_SCALE, and out keeps its poison.
TEST(NonFiniteResults, ForwardWhoseBf16OutputWouldOverflowIsRefusedBeforeWriting) {
  run_isolated([] {
    ForwardFixture f(1, 8, 8, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    fp8attn_plan_destroy(f.plan);
    f.plan = nullptr;
    fp8attn_attention_desc d{};
    d.struct_size = sizeof d;
    fp8attn_attention_desc_init(&d);
    d.head_dim = static_cast<int32_t>(ForwardFixture::kHeadDim);
    d.output_dtype = FP8ATTN_DTYPE_BF16;
    if (fp8attn_plan_create(f.ctx, &d, &f.plan, nullptr) != FP8ATTN_OK) return std::string("BF16 plan");
    std::fill(f.k.begin(), f.k.end(), uint8_t{0x30});  // every key 0.5 in every dimension
    std::fill(f.v.begin(), f.v.end(), uint8_t{0x7E});  // 448, E4M3's largest
    std::vector<uint16_t> out(f.out.size(), 0x1234);
    f.args.out = host_tensor(out.data(), FP8ATTN_DTYPE_BF16, {1, 8, 1, ForwardFixture::kHeadDim},
                             dense_strides({1, 8, 1, ForwardFixture::kHeadDim}));
    float vd = 3.40e38f / 448.0f;
    f.args.v_descale = host_tensor(&vd, FP8ATTN_DTYPE_F32, {1, 1}, {0, 0});
    fp8attn_error err = fresh_error();
    std::string problem = expect_status(f.run(&err), FP8ATTN_STATUS_BAD_SCALE, err, "forward whose BF16 output overflows");
    for (uint16_t x : out)
      if (problem.empty() && x != 0x1234) problem = "out written on failure";
    return problem;
  });
}

// ---- No heap allocation in execute calls -------------------------------------------------

TEST(ExecuteAllocations, ForwardMakesNoHeapAllocation) {
  run_isolated([] {
    ForwardFixture f(3, 70, 90, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    fp8attn_error err = fresh_error();
    std::string problem = expect_status(f.run(&err), FP8ATTN_OK, err, "warm-up forward");
    f.out.assign(f.out.size(), -777.0f);
    start_counting_allocations();
    const int32_t s = fp8attn_attention_forward(f.plan, &f.args, f.workspace.data(), f.workspace.size(), nullptr, &err);
    const AllocationCount n = stop_counting_allocations();
    if (problem.empty()) problem = expect_status(s, FP8ATTN_OK, err, "forward");
    if (problem.empty() && all_poison(f.out)) problem = "the forward wrote nothing";
    if (problem.empty() && n.count != 0)
      problem =
          "the forward made " + std::to_string(n.count) + " heap allocations (" + std::to_string(n.bytes) + " bytes)";
    return problem;
  });
}

TEST(ExecuteAllocations, ForwardWithALargeEmptyBatchMakesNoHeapAllocation) {
  run_isolated([] {
    ForwardFixture f(1, 0, 1, fresh_seed());
    if (!f.ready()) return std::string("fixture");
    const int64_t b = int64_t{1} << 20, d = ForwardFixture::kHeadDim;
    f.batch = b;
    f.args.q = host_tensor(f.q.data(), FP8ATTN_DTYPE_E4M3, {b, 0, 1, d}, {0, d, d, 1});
    f.args.k = host_tensor(f.k.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
    f.args.v = host_tensor(f.v.data(), FP8ATTN_DTYPE_E4M3, {b, 1, 1, d}, {0, d, d, 1});
    f.args.out = host_tensor(f.out.data(), FP8ATTN_DTYPE_F32, {b, 0, 1, d}, {d, d, d, 1});
    size_t bytes = 0;
    fp8attn_error err = fresh_error();
    std::string problem =
        expect_status(fp8attn_plan_workspace_size(f.plan, b, 1, 1, &bytes, &err), FP8ATTN_OK, err, "workspace query");
    std::vector<unsigned char> ws(bytes);
    start_counting_allocations();
    const int32_t s = fp8attn_attention_forward(f.plan, &f.args, ws.data(), ws.size(), nullptr, &err);
    const AllocationCount n = stop_counting_allocations();
    if (problem.empty()) problem = expect_status(s, FP8ATTN_OK, err, "forward(batch 2^20, empty)");
    if (problem.empty() && n.count != 0)
      problem =
          "the forward made " + std::to_string(n.count) + " heap allocations (" + std::to_string(n.bytes) + " bytes)";
    return problem;
  });
}

/// The backward keeps the same promise: every buffer lives in the workspace.
TEST(ExecuteAllocations, BackwardMakesNoHeapAllocation) {
  run_isolated([] {
    const int64_t sq = 70, sk = 90, h = 2, d = 64;
    fp8attn_context ctx = make_cpu_context(2);
    if (!ctx) return std::string("context");
    fp8attn_attention_desc desc{};
    desc.struct_size = sizeof desc;
    fp8attn_attention_desc_init(&desc);
    desc.input_dtype = FP8ATTN_DTYPE_BF16;
    desc.head_dim = static_cast<int32_t>(d);
    desc.num_heads_q = static_cast<int32_t>(h);
    desc.num_heads_kv = static_cast<int32_t>(h);
    desc.causal = 1;
    fp8attn_plan plan = nullptr;
    fp8attn_error err = fresh_error();
    std::string problem = expect_status(fp8attn_plan_create(ctx, &desc, &plan, &err), FP8ATTN_OK, err, "plan");
    auto bf16 = [](const std::vector<float>& x) {
      std::vector<uint16_t> b(x.size());
      for (size_t i = 0; i < x.size(); ++i) b[i] = fp8attn::num::float_to_bf16(x[i]);
      return b;
    };
    const uint64_t seed = fresh_seed();
    std::vector<uint16_t> q = bf16(random_floats(sq * h * d, seed)), k = bf16(random_floats(sk * h * d, seed + 1)),
                          v = bf16(random_floats(sk * h * d, seed + 2)), dout = bf16(random_floats(sq * h * d, seed + 3));
    std::vector<uint16_t> out(q.size()), dk(k.size()), dv(v.size());
    std::vector<float> lse(sq * h), dq(q.size(), -777.0f);
    const std::vector<int64_t> qs{1, sq, h, d}, ks{1, sk, h, d}, ls{1, h, sq};
    fp8attn_attention_args f{};
    f.struct_size = sizeof f;
    f.q = host_tensor(q.data(), FP8ATTN_DTYPE_BF16, qs, dense_strides(qs));
    f.k = host_tensor(k.data(), FP8ATTN_DTYPE_BF16, ks, dense_strides(ks));
    f.v = host_tensor(v.data(), FP8ATTN_DTYPE_BF16, ks, dense_strides(ks));
    f.out = host_tensor(out.data(), FP8ATTN_DTYPE_BF16, qs, dense_strides(qs));
    f.lse = host_tensor(lse.data(), FP8ATTN_DTYPE_F32, ls, dense_strides(ls));
    fp8attn_attention_bwd_args a{};
    a.struct_size = sizeof a;
    a.q = f.q, a.k = f.k, a.v = f.v, a.out = f.out, a.lse = f.lse;
    a.dout = host_tensor(dout.data(), FP8ATTN_DTYPE_BF16, qs, dense_strides(qs));
    a.dq = host_tensor(dq.data(), FP8ATTN_DTYPE_F32, qs, dense_strides(qs));
    a.dk = host_tensor(dk.data(), FP8ATTN_DTYPE_BF16, ks, dense_strides(ks));
    a.dv = host_tensor(dv.data(), FP8ATTN_DTYPE_BF16, ks, dense_strides(ks));
    a.deterministic = 1;
    size_t fwd_bytes = 0, bwd_bytes = 0;
    if (problem.empty())
      problem = expect_status(fp8attn_plan_workspace_size(plan, 1, sq, sk, &fwd_bytes, &err), FP8ATTN_OK, err, "query");
    if (problem.empty())
      problem = expect_status(fp8attn_plan_backward_workspace_size(plan, 1, sq, sk, &bwd_bytes, &err), FP8ATTN_OK, err,
                              "backward query");
    std::vector<unsigned char> ws(std::max(fwd_bytes, bwd_bytes));
    if (problem.empty())
      problem = expect_status(fp8attn_attention_forward(plan, &f, ws.data(), ws.size(), nullptr, &err), FP8ATTN_OK,
                              err, "forward");
    if (problem.empty())
      problem = expect_status(fp8attn_attention_backward(plan, &a, ws.data(), ws.size(), nullptr, &err), FP8ATTN_OK,
                              err, "warm-up backward");
    dq.assign(dq.size(), -777.0f);
    start_counting_allocations();
    const int32_t s = fp8attn_attention_backward(plan, &a, ws.data(), ws.size(), nullptr, &err);
    const AllocationCount n = stop_counting_allocations();
    if (problem.empty()) problem = expect_status(s, FP8ATTN_OK, err, "backward");
    if (problem.empty() && all_poison(dq)) problem = "the backward wrote no dq";
    if (problem.empty() && n.count != 0)
      problem =
          "the backward made " + std::to_string(n.count) + " heap allocations (" + std::to_string(n.bytes) + " bytes)";
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
    return problem;
  });
}

TEST(ExecuteAllocations, QuantizeOfAnEmptyTensorAllocatesLittle) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    float x = 0.0f;
    uint8_t y = 0;
    float descale = -1.0f;
    const int64_t d = int64_t{1} << 26;
    fp8attn_tensor in = host_tensor(&x, FP8ATTN_DTYPE_F32, {1, 0, 1, d}, {d, d, d, 1});
    fp8attn_tensor out = host_tensor(&y, FP8ATTN_DTYPE_E4M3, {1, 0, 1, d}, {d, d, d, 1});
    fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    fp8attn_error err = fresh_error();
    start_counting_allocations();
    const int32_t s = fp8attn_quantize(ctx, &in, nullptr, nullptr, &out, &ds, nullptr, &err);
    const AllocationCount n = stop_counting_allocations();
    fp8attn_context_destroy(ctx);
    std::string problem;
    if (s != FP8ATTN_OK && s != FP8ATTN_STATUS_BAD_SHAPE) problem = expect_status(s, FP8ATTN_OK, err, "quantize");
    if (problem.empty() && n.bytes > (1u << 20))
      problem = "quantize of [1, 0, 1, 2^26] allocated " + std::to_string(n.bytes) + " bytes";
    return problem;
  });
}

TEST(ExecuteAllocations, ScaleStateOfTwoTebibytesIsRefused) {
  run_isolated(
      [] {
        fp8attn_context ctx = make_cpu_context();
        fp8attn_scale_state_options o{};
        o.struct_size = sizeof o;
        o.num_layers = 1 << 20;
        o.amax_history_len = 65536;
        fp8attn_scale_state state = nullptr;
        fp8attn_error err = fresh_error();
        const int32_t s = fp8attn_scale_state_create(ctx, &o, &state, &err);
        fp8attn_scale_state_destroy(state);
        fp8attn_context_destroy(ctx);
        return expect_status(s, FP8ATTN_STATUS_BAD_OPTION, err, "scale_state_create(2^20 layers × 65536)");
      },
      30, uint64_t{4} << 30);
}

// ---- The rotation limit is the GPU kernel's on every backend -----------------------------

TEST(RotationLimit, QuantizeRefusesRotationAbove256) {
  const uint64_t seed = fresh_seed();
  run_isolated([&] {
    fp8attn_context ctx = make_cpu_context();
    std::vector<float> x = random_floats(2 * 512, seed);
    std::vector<uint8_t> y(2 * 512, 0xAB);
    float descale = -1.0f;
    fp8attn_tensor in = host_tensor(x.data(), FP8ATTN_DTYPE_F32, {1, 2, 1, 512}, dense_strides({1, 2, 1, 512}));
    fp8attn_tensor out = host_tensor(y.data(), FP8ATTN_DTYPE_E4M3, {1, 2, 1, 512}, dense_strides({1, 2, 1, 512}));
    fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    fp8attn_quantize_options o{};
    o.struct_size = sizeof o;
    o.rotate = 1;
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_quantize(ctx, &in, nullptr, &o, &out, &ds, nullptr, &err);
    fp8attn_context_destroy(ctx);
    std::string problem = expect_status(s, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, err, "quantize(rotate, head_dim 512)");
    if (problem.empty() && (descale != -1.0f || y[0] != 0xAB)) problem = "outputs written on failure";
    return problem;
  });
}

// ---- A predicted fraction stays a probability (a tests/fuzz/fuzz_predict input) -----------

TEST(SinkPrediction, PredictionWithTwoToThirtySinksStaysAProbability) {
  run_isolated([] {
    fp8attn_sink_model m{};
    m.struct_size = sizeof m;
    m.sink_strength = 12.625;
    m.k_sink = 1 << 30;
    m.p_scale = 256.0;
    m.kv_order = FP8ATTN_KV_ORDER_FORWARD;
    m.block_n = 197;
    m.seqlen_k = INT64_MAX;
    double leading = -1.0, expected = -1.0;
    fp8attn_error err = fresh_error();
    std::string problem = expect_status(fp8attn_predict_p_underflow(&m, &leading, &expected, &err), FP8ATTN_OK, err,
                                        "predict_p_underflow(k_sink = 2^30)");
    if (problem.empty() && !(leading >= 0.0 && leading <= 1.0 && expected >= 0.0 && expected <= 1.0)) {
      char text[96];
      snprintf(text, sizeof text, "fractions outside [0, 1]: %.17g, %.17g", leading, expected);
      problem = text;
    }
    return problem;
  });
}

}  // namespace
}  // namespace fp8attn::test
