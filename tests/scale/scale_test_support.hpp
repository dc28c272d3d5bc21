// Shared by the scale-state tests: a CPU context and a scale state, destroyed at scope end,
// and a serialize-to-vector helper.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::test {

struct StateFixture {
  fp8attn_context ctx = nullptr;
  fp8attn_scale_state state = nullptr;
  explicit StateFixture(const fp8attn_scale_state_options* options) {
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    o.backend = FP8ATTN_BACKEND_CPU;
    o.num_threads = 2;
    o.log_level = FP8ATTN_LOG_ERROR;
    EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
    EXPECT_EQ(fp8attn_scale_state_create(ctx, options, &state, nullptr), FP8ATTN_OK);
  }
  ~StateFixture() {
    fp8attn_scale_state_destroy(state);
    fp8attn_context_destroy(ctx);
  }
  float scale(int32_t layer, int32_t tensor) const {
    float s = -1.0f, inv = -1.0f;
    EXPECT_EQ(fp8attn_scale_state_get_scale(state, layer, tensor, &s, &inv, nullptr), FP8ATTN_OK);
    return s;
  }
};

inline fp8attn_scale_state_options default_options() {
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  return o;
}

inline std::vector<uint8_t> serialize(fp8attn_scale_state state) {
  size_t size = 0;
  EXPECT_EQ(fp8attn_scale_state_serialize(state, nullptr, 0, &size, nullptr), FP8ATTN_OK);
  std::vector<uint8_t> blob(size, 0xCD);  // poisoned
  size_t written = 0;
  EXPECT_EQ(fp8attn_scale_state_serialize(state, blob.data(), blob.size(), &written, nullptr), FP8ATTN_OK);
  EXPECT_EQ(written, size);
  return blob;
}

}  // namespace fp8attn::test
