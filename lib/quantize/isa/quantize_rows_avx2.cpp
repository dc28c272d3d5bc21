// The quantizer's row loops for AVX2 + FMA (-march=x86-64-v3: Haswell and later).
// lib/quantize/isa/quantize_rows_dispatch.cpp picks one build at run time.
#define FP8ATTN_QUANTIZE_ISA_NAMESPACE quantize_avx2
#define FP8ATTN_QUANTIZE_ISA_NAME "avx2"
#include "lib/quantize/isa/quantize_rows_in_isa.inc"
