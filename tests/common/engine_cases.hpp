// Pieces the engine's bit-equality tests share: a named case (shape, dtype, desc tweak, scale
// granularity), its inputs (outlier inputs quantized for the case's tile, telemetry on), and the
// comparison of two forwards' out, LSE and telemetry bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/sm90/tile_config.hpp"
#include "tools/common/forward_runner.hpp"

namespace fp8attn::testing {

struct EngineCase {
  const char* name;
  int32_t dtype;
  workloads::AttentionShape shape;
  void (*tweak)(fp8attn_attention_desc&);
  workloads::ScaleGranularity granularity;
};

/// A case's desc (F32 output, telemetry on) and inputs: outlier inputs (N(0,1) with
/// large-magnitude channels) from `seed`, quantized with the case's block sizes.
struct EngineCaseInputs {
  fp8attn_attention_desc desc;
  workloads::QuantizedInputs q;
};

inline EngineCaseInputs engine_case_inputs(const EngineCase& c, uint64_t seed) {
  const workloads::AttentionInputs inputs = workloads::outlier_inputs(c.shape, seed);
  EngineCaseInputs in{workloads::make_desc(c.shape, c.dtype, FP8ATTN_DTYPE_F32), {}};
  c.tweak(in.desc);
  in.desc.telemetry = 1;
  const sm90::AttentionTile tile = sm90::attention_tile(c.shape.head_dim, c.dtype == FP8ATTN_DTYPE_E4M3,
                                                       sm90::pv_promotion_of_interval(in.desc.pv_promote_interval));
  in.q = workloads::quantize(inputs, c.dtype, c.granularity, tile.block_m, tile.block_n);
  return in;
}

/// Out, LSE and the telemetry counters of two forwards, bit for bit.
inline void expect_same_bits(const workloads::ForwardResult& want, const workloads::ForwardResult& got,
                             const std::string& where) {
  ASSERT_FALSE(want.out.empty()) << where;
  ASSERT_EQ(want.out.size(), got.out.size()) << where;
  ASSERT_EQ(want.lse.size(), got.lse.size()) << where;
  for (size_t i = 0; i < want.out.size(); ++i)
    ASSERT_EQ(0, std::memcmp(&want.out[i], &got.out[i], sizeof(float)))
        << where << ": out[" << i << "] is " << got.out[i] << ", " << want.out[i] << " expected";
  EXPECT_EQ(0, std::memcmp(want.lse.data(), got.lse.data(), want.lse.size() * sizeof(float))) << where;
  EXPECT_EQ(want.telemetry.p_positive, got.telemetry.p_positive) << where;
  EXPECT_EQ(want.telemetry.p_underflow, got.telemetry.p_underflow) << where;
  EXPECT_EQ(want.telemetry.max_abs_scaled_logit, got.telemetry.max_abs_scaled_logit) << where;
}

}  // namespace fp8attn::testing
