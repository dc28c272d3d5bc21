// The CPU engine's backward tiles for AVX-512 F/BW/CD/DQ/VL (-march=x86-64-v4: Skylake-SP and later).
// lib/attention/engine/isa/backward_tile_dispatch.cpp picks one build at run time.
#define FP8ATTN_ENGINE_ISA_NAMESPACE engine_avx512
#include "lib/attention/engine/isa/backward_tile_in_isa.inc"
