// Run-time choice of the CPU's vector ISA, shared by every hot loop compiled once per ISA: the
// engine's query and backward tiles (lib/attention/engine/isa) and the quantizer's row loops
// (lib/quantize/isa). Each forwards to the build named by active_cpu_isa(), so one switch
// (FP8ATTN_CPU_ISA, set_active_cpu_isa) steers them all. Every build computes the same bits: the
// code is compiled with -ffp-contract=off and uses std::fma explicitly, and no build
// reassociates a sum (no -ffast-math).
#pragma once

namespace fp8attn {

enum class CpuIsa : int {
  kBaseline = 0,  ///< x86-64 baseline (SSE2), or -march=native with FP8ATTN_NATIVE
  kAvx2 = 1,      ///< x86-64-v3: AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE
  kAvx512 = 2,    ///< x86-64-v4: x86-64-v3 plus AVX-512 F, BW, CD, DQ, VL
  /// The AVX-512 build on a CPU that also has AVX512-BF16, AVX512-VNNI and AVX512-VBMI (every
  /// CPU with the first has the others, except Intel's Cooper Lake, which stays at avx512): its
  /// FP32-mode products run on vdpbf16ps (panel_gemm_fp32_bf16_avx512.hpp; the decode's E4M3
  /// codes become BF16 through vpermi2b lookups, decode_fp32_bf16_avx512.hpp) and the tensor
  /// core's FP8 sums on vpdpwssd (panel_gemm_tensor_core_fp8_avx512.hpp), same bits. No build of
  /// its own.
  kAvx512Bf16 = 3,
};

/// "baseline" (or "native" in an FP8ATTN_NATIVE build), "avx2", "avx512", "avx512bf16".
const char* cpu_isa_name(CpuIsa isa);

/// The widest build that is compiled in and that this CPU supports (CPUID).
CpuIsa best_cpu_isa();

/// The build the per-ISA loops run: best_cpu_isa(), or lower when the environment variable
/// FP8ATTN_CPU_ISA (baseline, avx2, avx512, avx512bf16; read once) asks for less.
CpuIsa active_cpu_isa();

/// Whether the active level is avx512bf16: the engine's tiles pass it to panel_gemm
/// (lib/attention/engine/panel_gemm.hpp, its avx512_bf16 argument).
inline bool avx512_bf16_active() { return active_cpu_isa() == CpuIsa::kAvx512Bf16; }

/// Whether the FP32 mode's products run on vdpbf16ps: the level is avx512bf16 and, unless
/// FP8ATTN_BF16_DOT (0 or 1, read once) or set_bf16_dot_products says otherwise, this CPU runs
/// the instruction's multiply-adds at least as fast as FMAs' (bf16_dot_products_measured_fast).
/// Both forms give the same bits; the tensor-core mode's vpdpwssd sums follow the level alone.
bool bf16_dot_products_active();

/// Measured once per process on a CPU whose best level is avx512bf16 (tens of microseconds): the
/// time of vdpbf16ps against FMAs doing the same multiply-adds (lib/cpu_isa/bf16_dot_probe.cpp).
bool bf16_dot_products_measured_fast();

/// panel_gemm's avx512_bf16 argument for a call under the tensor core's addition
/// (`tensor_core`: its FP8 sums on vpdpwssd, by the level) or FP32 accumulation (its products on
/// vdpbf16ps, by bf16_dot_products_active).
bool avx512_bf16_for_products(bool tensor_core);

enum class Bf16DotChoice : int { kMeasure = 0, kOff = 1, kOn = 2 };

/// Tests and benchmarks: the choice bf16_dot_products_active makes at the avx512bf16 level, from
/// now on, process-wide.
void set_bf16_dot_products(Bf16DotChoice choice);

/// Tests and benchmarks: makes every per-ISA loop run `isa` from now on, process-wide. Returns
/// false, changing nothing, when `isa` is above best_cpu_isa().
bool set_active_cpu_isa(CpuIsa isa);

}  // namespace fp8attn
