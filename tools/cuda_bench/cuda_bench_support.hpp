// What every CUDA bench shares: failing loudly (no bench result is better than a wrong one),
// device tensor views, and event timing on the bench's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::cuda_bench {

/// The program's name in failure messages; each bench sets it first thing in main().
inline const char*& program_name() {
  static const char* name = "fp8attn_cuda_bench";
  return name;
}

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", program_name(), why.c_str());
  std::exit(1);
}

#define CUDA_OK(call)                                                                                               \
  do {                                                                                                              \
    const cudaError_t e_ = (call);                                                                                  \
    if (e_ != cudaSuccess) ::fp8attn::cuda_bench::fail(std::string(#call) + ": " + cudaGetErrorString(e_));        \
  } while (0)

/// A dense row-major device tensor.
inline fp8attn_tensor device_tensor(void* data, int32_t dtype, std::vector<int64_t> shape) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_CUDA;
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) t.shape[i] = shape[i], t.stride[i] = stride, stride *= shape[i];
  return t;
}

/// Milliseconds per call of `body` on `stream`: 3 warm-up calls, then the mean of `reps`.
template <class Body>
double time_ms(cudaStream_t stream, int reps, Body&& body) {
  for (int i = 0; i < 3; ++i) body();
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  CUDA_OK(cudaEventRecord(start, stream));
  for (int i = 0; i < reps; ++i) body();
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / reps;
}

}  // namespace fp8attn::cuda_bench
