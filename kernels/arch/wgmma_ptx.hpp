// Inline-PTX bodies of wgmma.mma_async for the device build (PTX ISA 9.0 §9.7.15.5.2), one
// specialization per N = 16..256 step 16. Included only by kernels/arch/wgmma.hpp.
//
// NOTE: an asm statement needs its operand list spelled out, and N/2 accumulators means up to
// 128 "+f" operands, so the lists are built by the preprocessor from 8-register groups. The
// accumulators come first (%0 .. %(N/2-1)); the operands after them are numbered from N/2, which
// each specialization receives as literal tokens (I0..I6).
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"

namespace fp8attn::arch::ptx {

#define FP8ATTN_WGMMA_D8(i) \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define FP8ATTN_WGMMA_D_STR_1 "%0, %1, %2, %3, %4, %5, %6, %7"
#define FP8ATTN_WGMMA_D_STR_2 FP8ATTN_WGMMA_D_STR_1 ", " "%8, %9, %10, %11, %12, %13, %14, %15"
#define FP8ATTN_WGMMA_D_STR_3 FP8ATTN_WGMMA_D_STR_2 ", " "%16, %17, %18, %19, %20, %21, %22, %23"
#define FP8ATTN_WGMMA_D_STR_4 FP8ATTN_WGMMA_D_STR_3 ", " "%24, %25, %26, %27, %28, %29, %30, %31"
#define FP8ATTN_WGMMA_D_STR_5 FP8ATTN_WGMMA_D_STR_4 ", " "%32, %33, %34, %35, %36, %37, %38, %39"
#define FP8ATTN_WGMMA_D_STR_6 FP8ATTN_WGMMA_D_STR_5 ", " "%40, %41, %42, %43, %44, %45, %46, %47"
#define FP8ATTN_WGMMA_D_STR_7 FP8ATTN_WGMMA_D_STR_6 ", " "%48, %49, %50, %51, %52, %53, %54, %55"
#define FP8ATTN_WGMMA_D_STR_8 FP8ATTN_WGMMA_D_STR_7 ", " "%56, %57, %58, %59, %60, %61, %62, %63"
#define FP8ATTN_WGMMA_D_STR_9 FP8ATTN_WGMMA_D_STR_8 ", " "%64, %65, %66, %67, %68, %69, %70, %71"
#define FP8ATTN_WGMMA_D_STR_10 FP8ATTN_WGMMA_D_STR_9 ", " "%72, %73, %74, %75, %76, %77, %78, %79"
#define FP8ATTN_WGMMA_D_STR_11 FP8ATTN_WGMMA_D_STR_10 ", " "%80, %81, %82, %83, %84, %85, %86, %87"
#define FP8ATTN_WGMMA_D_STR_12 FP8ATTN_WGMMA_D_STR_11 ", " "%88, %89, %90, %91, %92, %93, %94, %95"
#define FP8ATTN_WGMMA_D_STR_13 FP8ATTN_WGMMA_D_STR_12 ", " "%96, %97, %98, %99, %100, %101, %102, %103"
#define FP8ATTN_WGMMA_D_STR_14 FP8ATTN_WGMMA_D_STR_13 ", " "%104, %105, %106, %107, %108, %109, %110, %111"
#define FP8ATTN_WGMMA_D_STR_15 FP8ATTN_WGMMA_D_STR_14 ", " "%112, %113, %114, %115, %116, %117, %118, %119"
#define FP8ATTN_WGMMA_D_STR_16 FP8ATTN_WGMMA_D_STR_15 ", " "%120, %121, %122, %123, %124, %125, %126, %127"
#define FP8ATTN_WGMMA_D_OPS_1 FP8ATTN_WGMMA_D8(0)
#define FP8ATTN_WGMMA_D_OPS_2 FP8ATTN_WGMMA_D_OPS_1, FP8ATTN_WGMMA_D8(8)
#define FP8ATTN_WGMMA_D_OPS_3 FP8ATTN_WGMMA_D_OPS_2, FP8ATTN_WGMMA_D8(16)
#define FP8ATTN_WGMMA_D_OPS_4 FP8ATTN_WGMMA_D_OPS_3, FP8ATTN_WGMMA_D8(24)
#define FP8ATTN_WGMMA_D_OPS_5 FP8ATTN_WGMMA_D_OPS_4, FP8ATTN_WGMMA_D8(32)
#define FP8ATTN_WGMMA_D_OPS_6 FP8ATTN_WGMMA_D_OPS_5, FP8ATTN_WGMMA_D8(40)
#define FP8ATTN_WGMMA_D_OPS_7 FP8ATTN_WGMMA_D_OPS_6, FP8ATTN_WGMMA_D8(48)
#define FP8ATTN_WGMMA_D_OPS_8 FP8ATTN_WGMMA_D_OPS_7, FP8ATTN_WGMMA_D8(56)
#define FP8ATTN_WGMMA_D_OPS_9 FP8ATTN_WGMMA_D_OPS_8, FP8ATTN_WGMMA_D8(64)
#define FP8ATTN_WGMMA_D_OPS_10 FP8ATTN_WGMMA_D_OPS_9, FP8ATTN_WGMMA_D8(72)
#define FP8ATTN_WGMMA_D_OPS_11 FP8ATTN_WGMMA_D_OPS_10, FP8ATTN_WGMMA_D8(80)
#define FP8ATTN_WGMMA_D_OPS_12 FP8ATTN_WGMMA_D_OPS_11, FP8ATTN_WGMMA_D8(88)
#define FP8ATTN_WGMMA_D_OPS_13 FP8ATTN_WGMMA_D_OPS_12, FP8ATTN_WGMMA_D8(96)
#define FP8ATTN_WGMMA_D_OPS_14 FP8ATTN_WGMMA_D_OPS_13, FP8ATTN_WGMMA_D8(104)
#define FP8ATTN_WGMMA_D_OPS_15 FP8ATTN_WGMMA_D_OPS_14, FP8ATTN_WGMMA_D8(112)
#define FP8ATTN_WGMMA_D_OPS_16 FP8ATTN_WGMMA_D_OPS_15, FP8ATTN_WGMMA_D8(120)

// scale-d is a predicate operand: it is set from a register so that the first k-block of a tile
// can overwrite D (scale-d = 0) without zeroing the registers first.
#define FP8ATTN_WGMMA_PRED(i) "{\n.reg .pred p;\nsetp.ne.b32 p, %" #i ", 0;\n"

#define FP8ATTN_WGMMA_PTX(N, G, I0, I1, I2, I3, I4, I5, I6)                                                          \
  template <>                                                                                                        \
  struct Wgmma<N> {                                                                                                  \
    template <bool kE5M2>                                                                                            \
    static FP8ATTN_ARCH_FN void fp8_ss(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {               \
      if constexpr (kE5M2)                                                                                           \
        asm volatile(FP8ATTN_WGMMA_PRED(I2) "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e5m2 {"              \
                     FP8ATTN_WGMMA_D_STR_##G "}, %" #I0 ", %" #I1 ", p, 1, 1;\n}\n"                                  \
                     : FP8ATTN_WGMMA_D_OPS_##G : "l"(desc_a), "l"(desc_b), "r"(scale_d));                            \
      else                                                                                                           \
        asm volatile(FP8ATTN_WGMMA_PRED(I2) "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {"              \
                     FP8ATTN_WGMMA_D_STR_##G "}, %" #I0 ", %" #I1 ", p, 1, 1;\n}\n"                                  \
                     : FP8ATTN_WGMMA_D_OPS_##G : "l"(desc_a), "l"(desc_b), "r"(scale_d));                            \
    }                                                                                                                \
    template <bool kE5M2>                                                                                            \
    static FP8ATTN_ARCH_FN void fp8_rs(float* d, const uint32_t* a, uint64_t desc_b, uint32_t scale_d) {             \
      if constexpr (kE5M2)                                                                                           \
        asm volatile(FP8ATTN_WGMMA_PRED(I5) "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e5m2 {"              \
                     FP8ATTN_WGMMA_D_STR_##G "}, {%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", p, 1, 1;\n}\n"  \
                     : FP8ATTN_WGMMA_D_OPS_##G                                                                       \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));                       \
      else                                                                                                           \
        asm volatile(FP8ATTN_WGMMA_PRED(I5) "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {"              \
                     FP8ATTN_WGMMA_D_STR_##G "}, {%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", p, 1, 1;\n}\n"  \
                     : FP8ATTN_WGMMA_D_OPS_##G                                                                       \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));                       \
    }                                                                                                                \
    template <int kTransA, int kTransB>                                                                              \
    static FP8ATTN_ARCH_FN void bf16_ss(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {              \
      asm volatile(FP8ATTN_WGMMA_PRED(I2) "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {"                \
                   FP8ATTN_WGMMA_D_STR_##G "}, %" #I0 ", %" #I1 ", p, 1, 1, %" #I3 ", %" #I4 ";\n}\n"                \
                   : FP8ATTN_WGMMA_D_OPS_##G                                                                         \
                   : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransA), "n"(kTransB));                            \
    }                                                                                                                \
    template <int kTransB>                                                                                           \
    static FP8ATTN_ARCH_FN void bf16_rs(float* d, const uint32_t* a, uint64_t desc_b, uint32_t scale_d) {            \
      asm volatile(FP8ATTN_WGMMA_PRED(I5) "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {"                \
                   FP8ATTN_WGMMA_D_STR_##G "}, {%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", p, 1, 1, %" #I6     \
                   ";\n}\n"                                                                                          \
                   : FP8ATTN_WGMMA_D_OPS_##G                                                                         \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(kTransB));           \
    }                                                                                                                \
  };

/// wgmma.mma_async of shape m64nNk*; specialized below for each supported N.
template <int N>
struct Wgmma;

FP8ATTN_WGMMA_PTX(16, 1, 8, 9, 10, 11, 12, 13, 14)
FP8ATTN_WGMMA_PTX(32, 2, 16, 17, 18, 19, 20, 21, 22)
FP8ATTN_WGMMA_PTX(48, 3, 24, 25, 26, 27, 28, 29, 30)
FP8ATTN_WGMMA_PTX(64, 4, 32, 33, 34, 35, 36, 37, 38)
FP8ATTN_WGMMA_PTX(80, 5, 40, 41, 42, 43, 44, 45, 46)
FP8ATTN_WGMMA_PTX(96, 6, 48, 49, 50, 51, 52, 53, 54)
FP8ATTN_WGMMA_PTX(112, 7, 56, 57, 58, 59, 60, 61, 62)
FP8ATTN_WGMMA_PTX(128, 8, 64, 65, 66, 67, 68, 69, 70)
FP8ATTN_WGMMA_PTX(144, 9, 72, 73, 74, 75, 76, 77, 78)
FP8ATTN_WGMMA_PTX(160, 10, 80, 81, 82, 83, 84, 85, 86)
FP8ATTN_WGMMA_PTX(176, 11, 88, 89, 90, 91, 92, 93, 94)
FP8ATTN_WGMMA_PTX(192, 12, 96, 97, 98, 99, 100, 101, 102)
FP8ATTN_WGMMA_PTX(208, 13, 104, 105, 106, 107, 108, 109, 110)
FP8ATTN_WGMMA_PTX(224, 14, 112, 113, 114, 115, 116, 117, 118)
FP8ATTN_WGMMA_PTX(240, 15, 120, 121, 122, 123, 124, 125, 126)
FP8ATTN_WGMMA_PTX(256, 16, 128, 129, 130, 131, 132, 133, 134)

#undef FP8ATTN_WGMMA_PTX
#undef FP8ATTN_WGMMA_PRED

}  // namespace fp8attn::arch::ptx
