// Shared by the GPU-backend tests: contexts, the emulated runtime's counters, E4M3 weights for
// the spectral norms and quantizer inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/float8.hpp"
#include "lib/backend/emulated_runtime.hpp"
#include "lib/context/context.hpp"
#include "tests/spectral/spectral_test_support.hpp"

namespace fp8attn::backend_testing {

inline fp8attn_context make_context(int32_t backend) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.num_threads = 2;
  fp8attn_context ctx = nullptr;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  return ctx;
}

/// The emulated runtime's counters at one moment; `since` gives what a call added.
struct CounterSnapshot {
  uint64_t allocations = 0, synchronizations = 0, launches = 0, copies = 0;
  static CounterSnapshot of(fp8attn_context ctx) {
    const DeviceRuntimeCounters& c = *ctx->impl.runtime_counters();
    return {c.allocations.load(), c.synchronizations.load(), c.launches.load(), c.copies.load()};
  }
  CounterSnapshot since(const CounterSnapshot& before) const {
    return {allocations - before.allocations, synchronizations - before.synchronizations, launches - before.launches,
            copies - before.copies};
  }
};

/// An E4M3 weight [rows, cols] quantized per tensor from test::random_weights, rows padded to
/// `row_stride` bytes (poisoned padding), with its descale.
struct E4m3Weight {
  int64_t rows = 0, cols = 0, row_stride = 0;
  std::vector<uint8_t> bits;
  float descale = 1.0f;
  E4m3Weight(int64_t r, int64_t c, int64_t stride, uint64_t seed) : rows(r), cols(c), row_stride(stride) {
    const test::Matrix w = test::random_weights(r, c, seed);
    float amax = 0.0f;
    for (float x : w.data) amax = std::fmax(amax, std::fabs(x));
    const float scale = 448.0f / amax;
    descale = 1.0f / scale;
    bits.assign(static_cast<size_t>(r * stride), 0x7F);  // NaN padding: never read
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) bits[i * stride + j] = num::float_to_e4m3(w.at(i, j) * scale);
  }
  fp8attn_tensor tensor() {
    fp8attn_tensor t{};
    t.struct_size = sizeof t;
    t.data = bits.data();
    t.dtype = FP8ATTN_DTYPE_E4M3;
    t.device = FP8ATTN_DEVICE_HOST;
    t.rank = 2;
    t.shape[0] = rows, t.shape[1] = cols;
    t.stride[0] = row_stride, t.stride[1] = 1;
    return t;
  }
};

}  // namespace fp8attn::backend_testing
