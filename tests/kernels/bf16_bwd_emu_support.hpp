// Support of the emulated BF16 attention backward's tests: one case (shape, description, packed
// sequence lengths, dq dtype) run through the C API on the CPU backend and on FP8ATTN_BACKEND_EMULATOR.
// Inputs q, k, v, dout ~ N(0, 1) rounded to BF16 with a fresh seed (printed); out and lse come from
// the CPU engine's forward and are handed to the emulator's session, so both backwards read the
// same bits; gradients are poisoned before every call (backward_runner.hpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/tile_config.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/oracle_backward.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tools/common/backward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {

struct BwdCase {
  workloads::AttentionShape shape;
  bool causal = false;
  int32_t window_left = -1, window_right = -1;
  const std::vector<int32_t>* cu_q = nullptr;  ///< packed: shape.batch 1, seqlens the totals
  const std::vector<int32_t>* cu_k = nullptr;
  /// NOTE: F32 by default: the order of dQ's F32 sums over key blocks is what deterministic mode
  /// fixes, and a BF16 dq hides almost every one-ulp F32 difference (summing the key blocks in
  /// reverse passed every BF16 case; F32 cases fail).
  int32_t dq_dtype = FP8ATTN_DTYPE_F32;
  std::string name;
};

/// Keys per work item of the backward (tile_config.hpp), shared by the engine and the kernel.
inline int bwd_block_n(int head_dim) { return sm90::attention_bwd_tile(head_dim).block_n; }

inline fp8attn_attention_desc bwd_desc(const BwdCase& c) {
  fp8attn_attention_desc d = workloads::make_desc(c.shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  return d;
}

/// Fresh inputs of one case: the BF16 q, k, v and dout.
struct BwdInputs {
  workloads::QuantizedInputs in;
  std::vector<uint16_t> dout;
};

inline BwdInputs bwd_inputs(const BwdCase& c, uint64_t seed) {
  const workloads::AttentionShape& s = c.shape;
  BwdInputs r{workloads::quantize(workloads::normal_inputs(s, seed), FP8ATTN_DTYPE_BF16, workloads::ScaleGranularity::Unit),
              workloads::normal_bf16(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim), seed ^ 0x5eed)};
  return r;
}

inline workloads::BackwardOptions bwd_options(const BwdCase& c, int32_t backend, int32_t deterministic) {
  workloads::BackwardOptions o;
  o.backend = backend;
  o.cu_seqlens_q = c.cu_q;
  o.cu_seqlens_k = c.cu_k;
  o.dq_dtype = c.dq_dtype;
  o.deterministic = deterministic;
  return o;
}

/// The emulator's session under `schedule` (the environment variable is read at context creation).
inline std::unique_ptr<workloads::BackwardSession> emulated_session(const BwdCase& c, const BwdInputs& x,
                                                                    const std::string& schedule, int32_t deterministic) {
  setenv("FP8ATTN_EMULATOR_SCHEDULE", schedule.c_str(), 1);
  auto s = std::make_unique<workloads::BackwardSession>(bwd_desc(c), c.shape, x.in, x.dout,
                                                        bwd_options(c, FP8ATTN_BACKEND_EMULATOR, deterministic));
  unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
  return s;
}

/// The case on the CPU engine and, in deterministic mode, on the emulator under round-robin and
/// three shuffle seeds: equal bits of dq, dk and dv.
inline void expect_bwd_emulator_matches_engine(const BwdCase& c) {
  const uint64_t seed = workloads::fresh_seed();
  const BwdInputs x = bwd_inputs(c, seed);
  workloads::BackwardSession engine(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
  engine.forward();
  engine.backward();
  for (const std::string& schedule : emulator_schedules(seed)) {
    auto kernel = emulated_session(c, x, schedule, 1);
    kernel->copy_forward_from(engine);
    const int32_t status = kernel->try_backward();
    ASSERT_EQ(status, FP8ATTN_OK) << c.name << " [" << schedule << "]: " << kernel->error().message;
    int64_t diffs[3] = {0, 0, 0};
    const std::vector<unsigned char>* want[3] = {&engine.dq_bytes(), &engine.dk_bytes(), &engine.dv_bytes()};
    const std::vector<unsigned char>* got[3] = {&kernel->dq_bytes(), &kernel->dk_bytes(), &kernel->dv_bytes()};
    const char* names[3] = {"dq", "dk", "dv"};
    for (int t = 0; t < 3; ++t) {
      ASSERT_EQ(want[t]->size(), got[t]->size());
      for (size_t i = 0; i < want[t]->size(); ++i) diffs[t] += (*want[t])[i] != (*got[t])[i];
      EXPECT_EQ(diffs[t], 0) << c.name << ": " << names[t] << " bytes differ, schedule " << schedule << ", seed " << seed;
    }
    std::printf("%s [%s] seed %llu: differing bytes dq %lld dk %lld dv %lld of %zu/%zu/%zu\n", c.name.c_str(),
                schedule.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(diffs[0]),
                static_cast<long long>(diffs[1]), static_cast<long long>(diffs[2]), want[0]->size(), want[1]->size(),
                want[2]->size());
  }
}

inline double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// Atomic mode (deterministic = 0): dQ shares are added into one F32 accumulator in whatever order
/// the CTAs finish, so dq is not bit-reproducible; dk and dv do not depend on the mode and must
/// still equal the engine's bits. One case (dense, not packed) under a shuffled schedule.
/// Metric: relative L2 error ‖kernel − oracle‖₂ / ‖oracle‖₂ per tensor, inputs q, k, v, dout
/// ~ N(0, 1) rounded to BF16 (fresh seeds). Bound: 6e-3, the CPU engine's bound against the same
/// oracle (tests/attention/test_backward_vs_oracle.cpp: BF16 roundings of P, dS and the stored
/// gradients give 2e-3 to 3e-3); the order of the F32 adds changes dq by a few F32 ulps, far below.
inline void expect_bwd_atomic_within_oracle_bound(const BwdCase& c) {
  constexpr double kRelL2Bound = 6e-3;
  const uint64_t seed = workloads::fresh_seed();
  const workloads::AttentionInputs real = workloads::normal_inputs(c.shape, seed);
  const BwdInputs x = bwd_inputs(c, seed);
  workloads::BackwardSession engine(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
  engine.forward();
  engine.backward();
  auto kernel = emulated_session(c, x, "shuffle:" + std::to_string(seed), 0);
  kernel->copy_forward_from(engine);
  ASSERT_EQ(kernel->try_backward(), FP8ATTN_OK) << kernel->error().message;
  EXPECT_EQ(kernel->dk_bytes(), engine.dk_bytes()) << c.name << ", seed " << seed;
  EXPECT_EQ(kernel->dv_bytes(), engine.dv_bytes()) << c.name << ", seed " << seed;

  const workloads::DequantizedInputs deq = workloads::dequantize(real, x.in);
  std::vector<double> g(x.dout.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = num::bf16_to_float(x.dout[i]);
  const std::vector<int64_t> cu_q = uniform_row_offsets(1, c.shape.seqlen_q),
                             cu_k = uniform_row_offsets(1, c.shape.seqlen_k);
  std::vector<double> dq(deq.q.size()), dk(deq.k.size()), dv(deq.v.size());
  oracle_backward_dense(make_attention_config(bwd_desc(c)), cu_q, cu_k, deq.q.data(), deq.k.data(), deq.v.data(),
                        g.data(), dq.data(), dk.data(), dv.data());
  const double eq = rel_l2(kernel->dq(), dq), ek = rel_l2(kernel->dk(), dk), ev = rel_l2(kernel->dv(), dv);
  const double engine_dq = rel_l2(engine.dq(), dq);
  std::printf("[%s] seed %llu: rel L2 dq %.2e (engine %.2e) dk %.2e dv %.2e (bound %.0e)\n", c.name.c_str(),
              static_cast<unsigned long long>(seed), eq, engine_dq, ek, ev, kRelL2Bound);
  EXPECT_LT(eq, kRelL2Bound) << c.name << ", seed " << seed;
  EXPECT_LT(ek, kRelL2Bound) << c.name << ", seed " << seed;
  EXPECT_LT(ev, kRelL2Bound) << c.name << ", seed " << seed;
}

}  // namespace fp8attn::testing
