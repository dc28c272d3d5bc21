#include "lib/cpu_isa/cpu_isa.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

// FP8ATTN_CPU_ISA_VARIANTS (set by lib/cpu_isa/CMakeLists.txt): 1 when the AVX2 and AVX-512
// builds are compiled in (x86-64, FP8ATTN_NATIVE=OFF), 0 when only the one build is.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {
namespace {

CpuIsa detect() {
#if FP8ATTN_CPU_ISA_VARIANTS
  // NOTE: the level names test exactly the feature sets -march=x86-64-v3/-v4 compile for,
  // including the OS's support for the wider registers (XGETBV).
  __builtin_cpu_init();
#if defined(__clang__)
  // NOTE: clang 14 (Debian 12; the fuzz build) knows no level names, so the levels' defining
  // features are tested one by one; every CPU with them has the rest of its level.
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  if (v4 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vnni") &&
      __builtin_cpu_supports("avx512vbmi"))
    return CpuIsa::kAvx512Bf16;
  if (v4) return CpuIsa::kAvx512;
  if (v3) return CpuIsa::kAvx2;
#else
  if (__builtin_cpu_supports("x86-64-v4") && __builtin_cpu_supports("avx512bf16") &&
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi"))
    return CpuIsa::kAvx512Bf16;
  if (__builtin_cpu_supports("x86-64-v4")) return CpuIsa::kAvx512;
  if (__builtin_cpu_supports("x86-64-v3")) return CpuIsa::kAvx2;
#endif
#endif
  return CpuIsa::kBaseline;
}

CpuIsa from_environment(CpuIsa best) {
  const char* v = std::getenv("FP8ATTN_CPU_ISA");
  CpuIsa asked = best;
  if (v && std::strcmp(v, "baseline") == 0) asked = CpuIsa::kBaseline;
  if (v && std::strcmp(v, "avx2") == 0) asked = CpuIsa::kAvx2;
  if (v && std::strcmp(v, "avx512") == 0) asked = CpuIsa::kAvx512;
  if (v && std::strcmp(v, "avx512bf16") == 0) asked = CpuIsa::kAvx512Bf16;
  return static_cast<int>(asked) < static_cast<int>(best) ? asked : best;
}

std::atomic<int>& active() {
  static std::atomic<int> isa{static_cast<int>(from_environment(best_cpu_isa()))};
  return isa;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512Bf16: return "avx512bf16";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx2: return "avx2";
    default:
#if FP8ATTN_CPU_ISA_NATIVE
      return "native";
#else
      return "baseline";
#endif
  }
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = detect();
  return best;
}

CpuIsa active_cpu_isa() { return static_cast<CpuIsa>(active().load(std::memory_order_relaxed)); }

bool set_active_cpu_isa(CpuIsa isa) {
  if (static_cast<int>(isa) > static_cast<int>(best_cpu_isa()) || static_cast<int>(isa) < 0) return false;
  active().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

}  // namespace fp8attn
