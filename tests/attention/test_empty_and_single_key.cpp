// Two edges of the call contract that FlashAttention-3's own tests reach:
// - a tensor with no element may have a NULL data pointer (PyTorch exports empty tensors so):
//   with every key sequence empty the forward gives O = 0 and LSE = −inf, and the backward zero
//   gradients, on every host-memory backend; NULL data with elements stays NULL_POINTER;
// - the BF16 backward of rows that each see exactly one key (seqlen_k = 1, or a (0, 0) window)
//   gives dq = dk = 0 exactly: D and dP are the same sum in the same order there.
#include "tests/attention/call_contract_support.hpp"

namespace fp8attn::contract_test {
namespace {

TEST(EmptyTensors, NullDataKeysOfSeqlenZeroGiveZeroOutputAndMinusInfLse) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kHostBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64));
    ASSERT_NE(p.plan, nullptr);
    ForwardCall f(FP8ATTN_DTYPE_E4M3, 2, 37, 0, 2, 64, seed);
    f.args.k.data = nullptr;
    f.args.v.data = nullptr;
    fp8attn_error err = fresh_error();
    ASSERT_EQ(f.run(p.plan, &err), FP8ATTN_OK) << backend_name(backend) << ": " << err.message;
    for (float o : f.out) ASSERT_EQ(o, 0.0f) << backend_name(backend);
    for (float l : f.lse) ASSERT_EQ(l, -INFINITY) << backend_name(backend);
  }
}

TEST(EmptyTensors, NullDataPackedKeysWithEverySequenceEmptyGiveZeroOutput) {
  const uint64_t seed = announced_seed();
  std::mt19937_64 rng(seed);
  for (int32_t backend : kHostBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64));
    ASSERT_NE(p.plan, nullptr);
    std::vector<uint8_t> q = random_e4m3(static_cast<size_t>(50 * 2 * 64), rng);
    std::vector<float> out(static_cast<size_t>(50 * 2 * 64), kPoison), lse(static_cast<size_t>(2 * 50), kPoison);
    std::vector<int32_t> cu_q = {0, 20, 50}, cu_k = {0, 0, 0};
    fp8attn_attention_args a{};
    a.struct_size = sizeof a;
    a.q = dense_host_tensor(q.data(), FP8ATTN_DTYPE_E4M3, {50, 2, 64});
    a.k = dense_host_tensor(nullptr, FP8ATTN_DTYPE_E4M3, {0, 2, 64});
    a.v = dense_host_tensor(nullptr, FP8ATTN_DTYPE_E4M3, {0, 2, 64});
    a.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_F32, {50, 2, 64});
    a.lse = dense_host_tensor(lse.data(), FP8ATTN_DTYPE_F32, {2, 50});
    a.cu_seqlens_q = dense_host_tensor(cu_q.data(), FP8ATTN_DTYPE_I32, {3});
    a.cu_seqlens_k = dense_host_tensor(cu_k.data(), FP8ATTN_DTYPE_I32, {3});
    size_t bytes = 0;
    ASSERT_EQ(fp8attn_plan_workspace_size(p.plan, 2, 30, 0, &bytes, nullptr), FP8ATTN_OK);
    std::vector<unsigned char> workspace(bytes + 1);
    fp8attn_error err = fresh_error();
    ASSERT_EQ(fp8attn_attention_forward(p.plan, &a, workspace.data(), bytes, nullptr, &err), FP8ATTN_OK)
        << backend_name(backend) << ": " << err.message;
    for (float o : out) ASSERT_EQ(o, 0.0f) << backend_name(backend);
    for (float l : lse) ASSERT_EQ(l, -INFINITY) << backend_name(backend);
  }
}

TEST(EmptyTensors, NullDataWithElementsIsStillRefused) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kHostBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, 64));
    ASSERT_NE(p.plan, nullptr);
    ForwardCall f(FP8ATTN_DTYPE_E4M3, 1, 20, 30, 1, 64, seed);
    f.args.k.data = nullptr;
    fp8attn_error err = fresh_error();
    EXPECT_EQ(f.run(p.plan, &err), FP8ATTN_STATUS_NULL_POINTER) << backend_name(backend) << ": " << err.message;
    EXPECT_NE(std::string(err.message).find("args.k.data"), std::string::npos) << err.message;
    EXPECT_TRUE(untouched(f.out) && untouched(f.lse)) << backend_name(backend);
  }
}

/// Quantizes an F32 input [1, 0, 2, 64] per head: with `null_data` its input and output have
/// NULL data; returns the status and writes the descales [1, 2].
int32_t quantize_empty(int32_t backend, bool null_data, std::vector<float>& descale, fp8attn_error* err) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  fp8attn_context ctx = nullptr;
  if (fp8attn_context_create(&o, &ctx, err) != FP8ATTN_OK) return -1;
  float in_buffer[1];
  uint8_t out_buffer[1];
  fp8attn_tensor in = dense_host_tensor(null_data ? nullptr : in_buffer, FP8ATTN_DTYPE_F32, {1, 0, 2, 64});
  fp8attn_tensor out = dense_host_tensor(null_data ? nullptr : out_buffer, FP8ATTN_DTYPE_E4M3, {1, 0, 2, 64});
  descale.assign(2, kPoison);
  fp8attn_tensor d = dense_host_tensor(descale.data(), FP8ATTN_DTYPE_F32, {1, 2});
  fp8attn_quantize_options q{};
  q.struct_size = sizeof q;
  q.granularity = FP8ATTN_QUANT_PER_HEAD;
  q.block_rows = 1;
  const int32_t s = fp8attn_quantize(ctx, &in, nullptr, &q, &out, &d, nullptr, err);
  fp8attn_context_destroy(ctx);
  return s;
}

TEST(EmptyTensors, QuantizerTakesNullDataEmptyInputAsItTakesAnEmptyBuffer) {
  for (int32_t backend : {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_EMULATOR}) {
    std::vector<float> with_buffer, with_null;
    fp8attn_error err = fresh_error();
    const int32_t want = quantize_empty(backend, false, with_buffer, &err);
    const int32_t got = quantize_empty(backend, true, with_null, &err);
    EXPECT_EQ(got, want) << backend_name(backend) << ": " << err.message;
    EXPECT_EQ(got, FP8ATTN_OK) << backend_name(backend);
    EXPECT_EQ(std::memcmp(with_null.data(), with_buffer.data(), with_null.size() * sizeof(float)), 0)
        << backend_name(backend);
  }
}

/// A BF16 forward and backward [1, sq, 2, 64] / [1, sk, 2, 64] with BF16 out and dout, F32 dq.
struct BackwardCall {
  int64_t sq, sk;
  std::vector<uint16_t> q, k, v, out, dout, dk, dv;
  std::vector<float> lse, dq;
  BackwardCall(int64_t seqlen_q, int64_t seqlen_k, uint64_t seed) : sq(seqlen_q), sk(seqlen_k) {
    std::mt19937_64 rng(seed);
    q = random_bf16(static_cast<size_t>(sq * 2 * 64), rng);
    k = random_bf16(static_cast<size_t>(sk * 2 * 64), rng);
    v = random_bf16(static_cast<size_t>(sk * 2 * 64), rng);
    dout = random_bf16(static_cast<size_t>(sq * 2 * 64), rng);
    out.assign(q.size(), 0xFFFF);
    lse.assign(static_cast<size_t>(2 * sq), kPoison);
    dq.assign(q.size(), kPoison);
    dk.assign(k.size(), 0xFFFF);
    dv.assign(v.size(), 0xFFFF);
  }
  /// The forward into out and lse, then the backward into dq, dk, dv; K, V, dK, dV get NULL
  /// data when seqlen_k is 0.
  void run(fp8attn_plan plan) {
    void* kd = sk ? k.data() : nullptr;
    void* vd = sk ? v.data() : nullptr;
    fp8attn_attention_args f{};
    f.struct_size = sizeof f;
    f.q = dense_host_tensor(q.data(), FP8ATTN_DTYPE_BF16, {1, sq, 2, 64});
    f.k = dense_host_tensor(kd, FP8ATTN_DTYPE_BF16, {1, sk, 2, 64});
    f.v = dense_host_tensor(vd, FP8ATTN_DTYPE_BF16, {1, sk, 2, 64});
    f.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_BF16, {1, sq, 2, 64});
    f.lse = dense_host_tensor(lse.data(), FP8ATTN_DTYPE_F32, {1, 2, sq});
    size_t bytes = 0;
    fp8attn_error err = fresh_error();
    ASSERT_EQ(fp8attn_plan_workspace_size(plan, 1, sq, sk, &bytes, &err), FP8ATTN_OK) << err.message;
    std::vector<unsigned char> ws(bytes + 1);
    ASSERT_EQ(fp8attn_attention_forward(plan, &f, ws.data(), bytes, nullptr, &err), FP8ATTN_OK) << err.message;
    fp8attn_attention_bwd_args b{};
    b.struct_size = sizeof b;
    b.q = f.q, b.k = f.k, b.v = f.v, b.out = f.out, b.lse = f.lse;
    b.dout = dense_host_tensor(dout.data(), FP8ATTN_DTYPE_BF16, {1, sq, 2, 64});
    b.dq = dense_host_tensor(dq.data(), FP8ATTN_DTYPE_F32, {1, sq, 2, 64});
    b.dk = dense_host_tensor(sk ? dk.data() : nullptr, FP8ATTN_DTYPE_BF16, {1, sk, 2, 64});
    b.dv = dense_host_tensor(sk ? dv.data() : nullptr, FP8ATTN_DTYPE_BF16, {1, sk, 2, 64});
    b.deterministic = 1;
    ASSERT_EQ(fp8attn_plan_backward_workspace_size(plan, 1, sq, sk, &bytes, &err), FP8ATTN_OK) << err.message;
    std::vector<unsigned char> bws(bytes + 1, 0xA5);
    ASSERT_EQ(fp8attn_attention_backward(plan, &b, bws.data(), bytes, nullptr, &err), FP8ATTN_OK) << err.message;
  }
};

constexpr int32_t kBackwardBackends[] = {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_EMULATOR};

TEST(EmptyTensors, BackwardWithNullDataEmptyKeysGivesZeroDq) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kBackwardBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16, 64));
    ASSERT_NE(p.plan, nullptr);
    BackwardCall c(45, 0, seed);
    c.run(p.plan);
    for (float x : c.dq) ASSERT_EQ(x, 0.0f) << backend_name(backend);
  }
}

/// Expects dq and dk all exactly zero, dv not all zero (it is Pᵀ·dO = dO's rows).
void expect_exact_zero_dq_dk(const BackwardCall& c, int32_t backend) {
  for (float x : c.dq) ASSERT_EQ(x, 0.0f) << backend_name(backend) << ": dq";
  for (uint16_t x : c.dk) ASSERT_EQ(x & 0x7FFF, 0) << backend_name(backend) << ": dk bits " << x;
  size_t nonzero = 0;
  for (uint16_t x : c.dv) nonzero += (x & 0x7FFF) != 0;
  EXPECT_GT(nonzero, c.dv.size() / 2) << backend_name(backend) << ": dv";
}

TEST(SingleKeyBackward, OneKeyGivesExactlyZeroDqAndDk) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kBackwardBackends) {
    Planned p(backend, make_desc(FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16, 64));
    ASSERT_NE(p.plan, nullptr);
    BackwardCall c(70, 1, seed);
    c.run(p.plan);
    expect_exact_zero_dq_dk(c, backend);
  }
}

TEST(SingleKeyBackward, ZeroWidthWindowGivesExactlyZeroDqAndDk) {
  const uint64_t seed = announced_seed();
  for (int32_t backend : kBackwardBackends) {
    fp8attn_attention_desc d = make_desc(FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16, 64);
    d.window_left = 0;
    d.window_right = 0;
    Planned p(backend, d);
    ASSERT_NE(p.plan, nullptr);
    BackwardCall c(90, 90, seed);
    c.run(p.plan);
    expect_exact_zero_dq_dk(c, backend);
  }
}

}  // namespace
}  // namespace fp8attn::contract_test
