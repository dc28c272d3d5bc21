// Pieces every test that calls the C ABI on host memory shares: a fresh printed seed, a host tensor
// view, and a context that is destroyed with its scope.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::api_testing {

/// A fresh seed per run, printed; FP8ATTN_TEST_SEED replays one.
inline uint64_t test_seed(const char* what) {
  uint64_t seed;
  if (const char* env = std::getenv("FP8ATTN_TEST_SEED")) {
    seed = std::strtoull(env, nullptr, 0);
  } else {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  std::printf("%s: seed %llu (replay with FP8ATTN_TEST_SEED=%llu)\n", what, static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

/// A host tensor of the given shape and element strides.
inline fp8attn_tensor make_tensor(void* data, int32_t dtype, std::vector<int64_t> shape, std::vector<int64_t> stride) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
  return t;
}

/// A context on one backend, destroyed at the end of its scope.
struct Context {
  fp8attn_context ctx = nullptr;
  explicit Context(int32_t backend = FP8ATTN_BACKEND_CPU, int threads = 2) {
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    o.backend = backend;
    o.num_threads = threads;
    EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  }
  ~Context() { fp8attn_context_destroy(ctx); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

}  // namespace fp8attn::api_testing
