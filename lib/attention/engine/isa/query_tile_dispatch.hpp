// Run-time choice of the CPU engine's vector ISA. The query tile (the engine's hot loops) is
// compiled once per ISA (query_tile_{baseline,avx2,avx512}.cpp, one source text); the
// fp8attn::engine::run_query_tile of query_tile.hpp forwards to the widest build this CPU runs.
// Every build computes the same bits: the engine is compiled with -ffp-contract=off and uses
// std::fma explicitly, and no build reassociates a sum (no -ffast-math).
#pragma once

namespace fp8attn::engine {

enum class CpuIsa : int {
  kBaseline = 0,  ///< x86-64 baseline (SSE2), or -march=native with FP8ATTN_NATIVE
  kAvx2 = 1,      ///< x86-64-v3: AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE
  kAvx512 = 2,    ///< x86-64-v4: x86-64-v3 plus AVX-512 F, BW, CD, DQ, VL
};

/// "baseline" (or "native" in an FP8ATTN_NATIVE build), "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);

/// The widest build that is compiled in and that this CPU supports (CPUID).
CpuIsa best_cpu_isa();

/// The build the engine runs: best_cpu_isa(), or lower when the environment variable
/// FP8ATTN_CPU_ISA (baseline, avx2, avx512; read once) asks for less.
CpuIsa active_cpu_isa();

/// Tests and benchmarks: makes the engine run `isa` from now on, process-wide. Returns false,
/// changing nothing, when `isa` is above best_cpu_isa().
bool set_active_cpu_isa(CpuIsa isa);

}  // namespace fp8attn::engine
