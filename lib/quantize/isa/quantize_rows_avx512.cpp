// The quantizer's row loops for AVX-512 (-march=x86-64-v4).
// lib/quantize/isa/quantize_rows_dispatch.cpp picks one build at run time.
#define FP8ATTN_QUANTIZE_ISA_NAMESPACE quantize_avx512
#define FP8ATTN_QUANTIZE_ISA_NAME "avx512"
#include "lib/quantize/isa/quantize_rows_in_isa.inc"
