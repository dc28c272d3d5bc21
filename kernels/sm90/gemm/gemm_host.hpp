// Host side of the TN GEMM: a problem description becomes the kernel's tensor-map parameters and
// launch geometry, in one validating function for both builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/ptx/tma_tensor_map_spec.hpp"
#include "kernels/sm90/gemm/gemm_config.hpp"

namespace fp8attn::sm90 {

/// C[M][N] (F32) = A[M][K] · B[N][K]ᵀ. Leading dimensions are in elements; a row of A or B must
/// span a multiple of 16 bytes (a TMA stride rule), so pad rows when K·e is not.
struct GemmProblem {
  GemmInput type = GemmInput::E4M3;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int m = 0, n = 0, k = 0;
};

/// The tensor maps of A and B and the launch geometry of one problem.
struct GemmPlan {
  arch::TensorMapSpec a, b;
  unsigned grid_x = 0, grid_y = 0;  // N tiles, M tiles
  unsigned threads = 0;
  size_t smem_bytes = 0;
};

/// Empty on success; otherwise why the problem cannot run (and *plan is untouched).
std::string plan_gemm(const GemmProblem& problem, GemmPlan* plan);

}  // namespace fp8attn::sm90
