// The CPU engine's backward tiles for AVX2 + FMA (-march=x86-64-v3: Haswell and later).
// lib/attention/engine/isa/backward_tile_dispatch.cpp picks one build at run time.
#define FP8ATTN_ENGINE_ISA_NAMESPACE engine_avx2
#include "lib/attention/engine/isa/backward_tile_in_isa.inc"
