// The quantizer's row loops for the x86-64 baseline (or -march=native with FP8ATTN_NATIVE).
// lib/quantize/isa/quantize_rows_dispatch.cpp picks one build at run time.
#define FP8ATTN_QUANTIZE_ISA_NAMESPACE quantize_baseline
#define FP8ATTN_QUANTIZE_ISA_NAME "baseline"
#include "lib/quantize/isa/quantize_rows_in_isa.inc"
