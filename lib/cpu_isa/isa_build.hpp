// The name of the per-ISA build being compiled. A source compiled once per vector ISA
// (fp8attn_add_cpu_isa_builds in lib/cpu_isa/CMakeLists.txt) receives FP8ATTN_CPU_ISA_BUILD
// (baseline, avx2 or avx512) as its one compile definition, and derives from it the namespace
// its build lives in (FP8ATTN_CPU_ISA_PASTE(engine_, FP8ATTN_CPU_ISA_BUILD) = engine_avx2) and
// the name it reports (FP8ATTN_CPU_ISA_STRING(FP8ATTN_CPU_ISA_BUILD) = "avx2").
#pragma once

#ifndef FP8ATTN_CPU_ISA_BUILD
#error "FP8ATTN_CPU_ISA_BUILD names the ISA of this build; CMake defines it (fp8attn_add_cpu_isa_builds)"
#endif

// NOTE: two levels, so that the arguments (FP8ATTN_CPU_ISA_BUILD) expand before ## and #.
#define FP8ATTN_CPU_ISA_PASTE_(a, b) a##b
#define FP8ATTN_CPU_ISA_PASTE(a, b) FP8ATTN_CPU_ISA_PASTE_(a, b)
#define FP8ATTN_CPU_ISA_STRING_(a) #a
#define FP8ATTN_CPU_ISA_STRING(a) FP8ATTN_CPU_ISA_STRING_(a)
