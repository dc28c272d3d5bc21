// Every documented FP8ATTN_MAX_* limit of include/fp8attn/fp8attn.h, at its edge: exactly the
// limit is accepted and the limit + 1 is refused with the status the header names, with the
// value in the message. Most cases go through the size queries, which read extents only, so a
// limit of 2^30 rows costs nothing; the forward's own seqlen_k check and the rotation, RoPE and
// scale-state limits go through their calls. Each case runs in a forked child with a time limit
// (tests/hardening/hardening_support.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "tests/hardening/forward_fixture.hpp"
#include "tests/hardening/hardening_support.hpp"

namespace fp8attn::test {
namespace {

/// "" when the call at the limit is OK and the call above it returns `above` with `value_text`
/// (the refused value) in its message.
std::string edge(const std::string& what, int32_t at_status, const fp8attn_error& at_err, int32_t over_status,
                 const fp8attn_error& over_err, int32_t above, const std::string& value_text) {
  std::string problem = expect_status(at_status, FP8ATTN_OK, at_err, what + " at the limit");
  if (problem.empty()) problem = expect_status(over_status, above, over_err, what + " at the limit + 1");
  if (problem.empty() && std::string(over_err.message).find(value_text) == std::string::npos)
    problem = what + ": the message \"" + over_err.message + "\" does not name the value " + value_text;
  return problem;
}

// ---- The quantizer's extents, through fp8attn_quantize_workspace_size (shapes only) ----------

int32_t quantize_units(fp8attn_context ctx, std::vector<int64_t> shape, fp8attn_error* err,
                       const fp8attn_tensor* cu = nullptr, int64_t max_seqlen = 0,
                       const fp8attn_quantize_options* o = nullptr) {
  // NOTE: the size query reads the input's shape and dtype, never its data: dense strides of an
  // extent of 2^30 describe no memory that is touched.
  static float never_read = 0.0f;
  const fp8attn_tensor in = host_tensor(&never_read, FP8ATTN_DTYPE_F32, shape, dense_strides(shape));
  size_t bytes = 0;
  return fp8attn_quantize_workspace_size(ctx, &in, cu, max_seqlen, o, &bytes, err);
}

std::string quantize_edge(const std::string& what, std::vector<int64_t> at, std::vector<int64_t> over, int32_t above,
                          int64_t refused) {
  fp8attn_context ctx = make_cpu_context();
  fp8attn_error at_err = fresh_error(), over_err = fresh_error();
  const int32_t s_at = quantize_units(ctx, at, &at_err);
  const int32_t s_over = quantize_units(ctx, over, &over_err);
  fp8attn_context_destroy(ctx);
  return edge(what, s_at, at_err, s_over, over_err, above, std::to_string(refused));
}

TEST(ExtentLimits, QuantizerTakesExactlyMaxHeads) {
  const int64_t h = FP8ATTN_MAX_HEADS;
  run_isolated([&] {
    return quantize_edge("quantizer heads", {1, 1, h, 8}, {1, 1, h + 1, 8}, FP8ATTN_STATUS_BAD_HEADS, h + 1);
  });
}

TEST(ExtentLimits, QuantizerTakesExactlyMaxHeadDim) {
  const int64_t d = FP8ATTN_MAX_HEAD_DIM;
  run_isolated([&] {
    return quantize_edge("quantizer head_dim", {1, 1, 1, d}, {1, 1, 1, d + 1}, FP8ATTN_STATUS_BAD_SHAPE, d + 1);
  });
}

TEST(ExtentLimits, QuantizerTakesExactlyMaxBatch) {
  const int64_t b = FP8ATTN_MAX_BATCH;
  run_isolated([&] {
    return quantize_edge("quantizer batch", {b, 1, 1, 8}, {b + 1, 1, 1, 8}, FP8ATTN_STATUS_BAD_SHAPE, b + 1);
  });
}

TEST(ExtentLimits, QuantizerTakesExactlyMaxSeqlen) {
  const int64_t s = FP8ATTN_MAX_SEQLEN;
  run_isolated([&] {
    return quantize_edge("quantizer seqlen", {1, s, 1, 8}, {1, s + 1, 1, 8}, FP8ATTN_STATUS_BAD_SHAPE, s + 1);
  });
}

TEST(ExtentLimits, PackedQuantizerTakesExactlyMaxSeqlenAndMaxBatch) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    int32_t never_read = 0;
    const int64_t b = FP8ATTN_MAX_BATCH, s = FP8ATTN_MAX_SEQLEN;
    const fp8attn_tensor cu_at = host_tensor(&never_read, FP8ATTN_DTYPE_I32, {b + 1}, {1});
    const fp8attn_tensor cu_over = host_tensor(&never_read, FP8ATTN_DTYPE_I32, {b + 2}, {1});
    fp8attn_error e[4] = {fresh_error(), fresh_error(), fresh_error(), fresh_error()};
    const int32_t seq_at = quantize_units(ctx, {4, 1, 8}, &e[0], &cu_at, s);
    const int32_t seq_over = quantize_units(ctx, {4, 1, 8}, &e[1], &cu_at, s + 1);
    const int32_t batch_at = quantize_units(ctx, {4, 1, 8}, &e[2], &cu_at, 1);
    const int32_t batch_over = quantize_units(ctx, {4, 1, 8}, &e[3], &cu_over, 1);
    fp8attn_context_destroy(ctx);
    std::string problem =
        edge("packed max_seqlen", seq_at, e[0], seq_over, e[1], FP8ATTN_STATUS_BAD_SHAPE, std::to_string(s + 1));
    if (problem.empty())
      problem = edge("packed batch", batch_at, e[2], batch_over, e[3], FP8ATTN_STATUS_BAD_SHAPE, std::to_string(b + 1));
    return problem;
  });
}

TEST(ExtentLimits, RotationTakesExactlyMaxRotationDim) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_quantize_options o{};
    o.struct_size = sizeof o;
    o.rotate = 1;
    const int64_t d = FP8ATTN_MAX_ROTATION_DIM;
    fp8attn_error e[3] = {fresh_error(), fresh_error(), fresh_error()};
    const int32_t at = quantize_units(ctx, {1, 4, 1, d}, &e[0], nullptr, 0, &o);
    const int32_t over = quantize_units(ctx, {1, 4, 1, d + 1}, &e[1], nullptr, 0, &o);
    // The next power of two is refused for the limit itself, not for its shape.
    const int32_t next_pow2 = quantize_units(ctx, {1, 4, 1, 2 * d}, &e[2], nullptr, 0, &o);
    fp8attn_context_destroy(ctx);
    std::string problem =
        edge("rotation head_dim", at, e[0], over, e[1], FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, std::to_string(d + 1));
    if (problem.empty())
      problem = expect_status(next_pow2, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, e[2], "rotation head_dim 512");
    return problem;
  });
}

// ---- Spectral weights, through fp8attn_qk_spectral_norms_workspace_size -----------------------

std::string spectral_edge(const std::string& what, int32_t hq, int32_t d, int64_t dm, int32_t hq1, int32_t d1,
                          int64_t dm1, int32_t above, int64_t refused) {
  fp8attn_context ctx = make_cpu_context();
  fp8attn_error at_err = fresh_error(), over_err = fresh_error();
  size_t bytes = 0;
  const int32_t at = fp8attn_qk_spectral_norms_workspace_size(ctx, hq, 1, d, dm, &bytes, &at_err);
  const int32_t over = fp8attn_qk_spectral_norms_workspace_size(ctx, hq1, 1, d1, dm1, &bytes, &over_err);
  fp8attn_context_destroy(ctx);
  return edge(what, at, at_err, over, over_err, above, std::to_string(refused));
}

TEST(ExtentLimits, SpectralNormsTakeExactlyMaxHeadsHeadDimAndDModel) {
  const int32_t h = FP8ATTN_MAX_HEADS, d = FP8ATTN_MAX_HEAD_DIM;
  const int64_t m = FP8ATTN_MAX_D_MODEL;
  run_isolated([&] { return spectral_edge("spectral heads", h, 4, 8, h + 1, 4, 8, FP8ATTN_STATUS_BAD_HEADS, h + 1); });
  run_isolated(
      [&] { return spectral_edge("spectral head_dim", 1, d, 8, 1, d + 1, 8, FP8ATTN_STATUS_BAD_SHAPE, d + 1); });
  run_isolated(
      [&] { return spectral_edge("spectral d_model", 1, 4, m, 1, 4, m + 1, FP8ATTN_STATUS_BAD_SHAPE, m + 1); });
}

// ---- The attention workspace queries and the forward call --------------------------------------

/// Runs `query(batch, sq, sk)` at each limit and one above; "" when each edge holds.
template <class Query>
std::string workspace_edges(const std::string& what, Query query) {
  const int64_t b = FP8ATTN_MAX_BATCH, s = FP8ATTN_MAX_SEQLEN;
  const int64_t at[3][3] = {{b, 1, 1}, {1, s, 1}, {1, 1, s}};
  const char* names[3] = {"batch", "max_seqlen_q", "max_seqlen_k"};
  for (int i = 0; i < 3; ++i) {
    int64_t over[3] = {at[i][0], at[i][1], at[i][2]};
    over[i] += 1;
    fp8attn_error at_err = fresh_error(), over_err = fresh_error();
    const int32_t s_at = query(at[i][0], at[i][1], at[i][2], &at_err);
    const int32_t s_over = query(over[0], over[1], over[2], &over_err);
    const std::string problem =
        edge(what + " " + names[i], s_at, at_err, s_over, over_err, FP8ATTN_STATUS_BAD_SHAPE, std::to_string(over[i]));
    if (!problem.empty()) return problem;
  }
  return "";
}

fp8attn_plan make_plan(fp8attn_context ctx, int32_t dtype) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.head_dim = 64;
  d.input_dtype = dtype;
  d.output_dtype = dtype == FP8ATTN_DTYPE_BF16 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32;
  fp8attn_plan plan = nullptr;
  fp8attn_plan_create(ctx, &d, &plan, nullptr);
  return plan;
}

TEST(ExtentLimits, ForwardWorkspaceSizeTakesExactlyMaxBatchAndSeqlens) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_plan plan = make_plan(ctx, FP8ATTN_DTYPE_E4M3);
    const std::string problem = workspace_edges("forward workspace", [&](int64_t b, int64_t q, int64_t k, auto* e) {
      size_t bytes = 0;
      return fp8attn_plan_workspace_size(plan, b, q, k, &bytes, e);
    });
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
    return plan ? problem : std::string("no E4M3 plan");
  });
}

TEST(ExtentLimits, BackwardWorkspaceSizeTakesExactlyMaxBatchAndSeqlens) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    fp8attn_plan plan = make_plan(ctx, FP8ATTN_DTYPE_BF16);
    const std::string problem = workspace_edges("backward workspace", [&](int64_t b, int64_t q, int64_t k, auto* e) {
      size_t bytes = 0;
      return fp8attn_plan_backward_workspace_size(plan, b, q, k, &bytes, e);
    });
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
    return plan ? problem : std::string("no BF16 plan");
  });
}

/// The forward on one query row against `sk` broadcast keys (stride 0): the status and message.
int32_t forward_with_keys(int64_t sk, uint64_t seed, fp8attn_error* err) {
  ForwardFixture f(1, 1, 1, seed);
  if (!f.ready()) return -1;
  const int64_t d = ForwardFixture::kHeadDim;
  f.args.k = host_tensor(f.k.data(), FP8ATTN_DTYPE_E4M3, {1, sk, 1, d}, {0, 0, d, 1});
  f.args.v = host_tensor(f.v.data(), FP8ATTN_DTYPE_E4M3, {1, sk, 1, d}, {0, 0, d, 1});
  // NOTE: a workspace far too small for 2^30 keys: a call past the extent checks stops at the
  // workspace check, so the limit itself is what decides between BAD_SHAPE and the rest.
  std::vector<unsigned char> ws(1 << 16);
  const int32_t s = fp8attn_attention_forward(f.plan, &f.args, ws.data(), ws.size(), nullptr, err);
  if (!all_poison(f.out)) return -2;
  return s;
}

TEST(ExtentLimits, ForwardChecksSeqlenKItselfAtMaxSeqlen) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  run_isolated([&] {
    const int64_t s = FP8ATTN_MAX_SEQLEN;
    fp8attn_error at_err = fresh_error(), over_err = fresh_error();
    const int32_t at = forward_with_keys(s, seed, &at_err);
    const int32_t over = forward_with_keys(s + 1, seed, &over_err);
    if (at < 0 || over < 0) return std::string(at == -2 || over == -2 ? "out written on failure" : "fixture");
    std::string problem = expect_status(over, FP8ATTN_STATUS_BAD_SHAPE, over_err, "forward seqlen_k = 2^30 + 1");
    if (problem.empty() && std::string(over_err.message).find("seqlen_k") == std::string::npos)
      problem = std::string("the refusal does not name seqlen_k: ") + over_err.message;
    // At the limit the extents pass; the call is refused later, for its 64 KiB workspace.
    if (problem.empty())
      problem = expect_status(at, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL, at_err, "forward seqlen_k = 2^30");
    return problem;
  });
}

// ---- RoPE offsets, the scale state and the tensor rank ----------------------------------------

int32_t rope_span(int64_t span, uint64_t seed, fp8attn_error* err) {
  fp8attn_context ctx = make_cpu_context();
  std::vector<float> wq = random_floats(4 * 8, seed), wk = random_floats(4 * 8, seed + 1);
  fp8attn_tensor tq = host_tensor(wq.data(), FP8ATTN_DTYPE_F32, {4, 8}, {8, 1});
  fp8attn_tensor tk = host_tensor(wk.data(), FP8ATTN_DTYPE_F32, {4, 8}, {8, 1});
  fp8attn_rope_options o{};
  o.struct_size = sizeof o;
  o.min_offset = -7;
  o.max_offset = -7 + span - 1;
  float safe = -1.0f, exact = -1.0f;
  const int32_t s = fp8attn_qk_rope_norms(ctx, &tq, &tk, 1, 1, 4, &o, &safe, &exact, err);
  fp8attn_context_destroy(ctx);
  return s;
}

TEST(ExtentLimits, RopeNormsTakeExactlyMaxRopeOffsets) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  run_isolated([&] {
    const int64_t n = FP8ATTN_MAX_ROPE_OFFSETS;
    fp8attn_error at_err = fresh_error(), over_err = fresh_error();
    const int32_t at = rope_span(n, seed, &at_err);
    const int32_t over = rope_span(n + 1, seed, &over_err);
    return edge("RoPE offsets", at, at_err, over, over_err, FP8ATTN_STATUS_BAD_OPTION, "FP8ATTN_MAX_ROPE_OFFSETS");
  });
}

int32_t scale_state(int32_t layers, int32_t history, fp8attn_error* err) {
  fp8attn_context ctx = make_cpu_context();
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = layers;
  o.amax_history_len = history;
  fp8attn_scale_state state = nullptr;
  const int32_t s = fp8attn_scale_state_create(ctx, &o, &state, err);
  if (s == FP8ATTN_OK && state == nullptr) return -1;
  if (s != FP8ATTN_OK && state != nullptr) return -2;
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
  return s;
}

TEST(ExtentLimits, ScaleStateTakesExactlyMaxLayersHistoryAndEntries) {
  const int32_t l = FP8ATTN_MAX_LAYERS, h = FP8ATTN_MAX_AMAX_HISTORY;
  const int64_t entries = FP8ATTN_MAX_SCALE_STATE_ENTRIES;
  // NOTE: 2^22 + 1 = 397 · 10565, each factor inside its own limit: only the product is over.
  const int32_t l_over = 397, h_over = 10565;
  ASSERT_EQ(int64_t{l_over} * h_over, entries + 1);
  run_isolated([&] {
    fp8attn_error e[2] = {fresh_error(), fresh_error()};
    return edge("layers", scale_state(l, int32_t(entries / l), &e[0]), e[0], scale_state(l + 1, 1, &e[1]), e[1],
                FP8ATTN_STATUS_BAD_OPTION, std::to_string(l + 1));
  });
  run_isolated([&] {
    fp8attn_error e[2] = {fresh_error(), fresh_error()};
    return edge("history", scale_state(int32_t(entries / h), h, &e[0]), e[0], scale_state(1, h + 1, &e[1]), e[1],
                FP8ATTN_STATUS_BAD_OPTION, std::to_string(h + 1));
  });
  run_isolated([&] {
    fp8attn_error e[2] = {fresh_error(), fresh_error()};
    return edge("layers · history", scale_state(64, h, &e[0]), e[0], scale_state(l_over, h_over, &e[1]), e[1],
                FP8ATTN_STATUS_BAD_OPTION, std::to_string(int64_t{l_over} * h_over));
  });
}

TEST(ExtentLimits, TensorRankAboveMaxRankIsRefusedForItsRank) {
  run_isolated([] {
    fp8attn_context ctx = make_cpu_context();
    float x = 0.5f;
    uint8_t y = 0;
    float descale = -1.0f;
    const fp8attn_tensor out = host_tensor(&y, FP8ATTN_DTYPE_E4M3, {1, 1, 1, 1}, {1, 1, 1, 1});
    const fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    auto with_rank = [&](int32_t rank, fp8attn_error* err) {
      fp8attn_tensor in = host_tensor(&x, FP8ATTN_DTYPE_F32, {1, 1, 1, 1}, {1, 1, 1, 1});
      in.rank = rank;  // extents 1 up to FP8ATTN_MAX_RANK; the struct holds no more
      for (int i = 4; i < FP8ATTN_MAX_RANK; ++i) in.shape[i] = in.stride[i] = 1;
      return fp8attn_quantize(ctx, &in, nullptr, nullptr, &out, &ds, nullptr, err);
    };
    fp8attn_error at_err = fresh_error(), over_err = fresh_error();
    const int32_t at = with_rank(FP8ATTN_MAX_RANK, &at_err);
    const int32_t over = with_rank(FP8ATTN_MAX_RANK + 1, &over_err);
    fp8attn_context_destroy(ctx);
    // Rank 8 is a valid tensor that the quantizer refuses for its expected rank 4; rank 9 is not
    // a tensor at all.
    std::string problem = expect_status(at, FP8ATTN_STATUS_BAD_SHAPE, at_err, "rank 8");
    if (problem.empty() && std::string(at_err.message).find("expected 4") == std::string::npos)
      problem = std::string("rank 8 refused for another reason: ") + at_err.message;
    if (problem.empty()) problem = expect_status(over, FP8ATTN_STATUS_BAD_SHAPE, over_err, "rank 9");
    if (problem.empty() && std::string(over_err.message).find("1..8") == std::string::npos)
      problem = std::string("rank 9 refused for another reason: ") + over_err.message;
    if (problem.empty() && (descale != -1.0f || y != 0)) problem = "outputs written on failure";
    return problem;
  });
}

// ---- A reach whose terms fit in int64 but whose sum does not ----------------------------------

TEST(TensorReach, SumOfStridesThatOverflowsInt64IsRefused) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  run_isolated([&] {
    fp8attn_context ctx = make_cpu_context();
    std::vector<float> x = random_floats(4, seed);
    std::vector<uint8_t> y(4, 0xAB);
    float descale = -1.0f;
    // Each term 2^62 · (2 − 1) fits; their sum 2^63 does not, and wrapped it is element 0 again.
    const int64_t big = int64_t{1} << 62;
    fp8attn_tensor in = host_tensor(x.data(), FP8ATTN_DTYPE_F32, {2, 2, 1, 1}, {big, big, 1, 1});
    fp8attn_tensor out = host_tensor(y.data(), FP8ATTN_DTYPE_E4M3, {2, 2, 1, 1}, {2, 1, 1, 1});
    fp8attn_tensor ds = host_tensor(&descale, FP8ATTN_DTYPE_F32, {1}, {1});
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_quantize(ctx, &in, nullptr, nullptr, &out, &ds, nullptr, &err);
    fp8attn_context_destroy(ctx);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_STRIDE, err, "quantize([2,2,1,1], strides 2^62, 2^62)");
    if (problem.empty() && (descale != -1.0f || y[0] != 0xAB)) problem = "outputs written on failure";
    return problem;
  });
}

TEST(TensorReach, ForwardQueryWhoseStrideSumOverflowsIsRefused) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  run_isolated([&] {
    ForwardFixture f(2, 2, 3, seed);
    if (!f.ready()) return std::string("fixture");
    const int64_t d = ForwardFixture::kHeadDim, big = int64_t{1} << 62;
    // The last dims reach 63; batch and rows 2^62 each: 2^63 + 63 in all.
    f.args.q = host_tensor(f.q.data(), FP8ATTN_DTYPE_E4M3, {2, 2, 1, d}, {big, big, d, 1});
    fp8attn_error err = fresh_error();
    const int32_t s = f.run(&err);
    std::string problem = expect_status(s, FP8ATTN_STATUS_BAD_STRIDE, err, "forward(q strides 2^62, 2^62)");
    if (problem.empty() && !all_poison(f.out)) problem = "out written on failure";
    return problem;
  });
}

}  // namespace
}  // namespace fp8attn::test
