// The CPU engine's backward tiles for the x86-64 baseline (SSE2; the default build's own flags).
// lib/attention/engine/isa/backward_tile_dispatch.cpp picks one build at run time.
#define FP8ATTN_ENGINE_ISA_NAMESPACE engine_baseline
#include "lib/attention/engine/isa/backward_tile_in_isa.inc"
