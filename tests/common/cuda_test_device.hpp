// For GPU tests: whether an sm_90 device is present (else the reason to skip), and host↔device
// copies that record failures as test failures.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fp8attn::testing {

/// True when device 0 is a Hopper (sm_90) GPU; otherwise `why` says what is missing.
inline bool hopper_present(std::string* why) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    *why = "no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  if (prop.major != 9) {
    *why = std::string("device 0 is ") + prop.name + ", not sm_90";
    return false;
  }
  return true;
}

/// A device copy of `host` (cudaMalloc + cudaMemcpy); the caller frees it.
template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), host.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

}  // namespace fp8attn::testing
