// The CPU engine's query tile for the x86-64 baseline (SSE2; the default build's own flags).
// lib/attention/engine/isa/query_tile_dispatch.cpp picks one build at run time.
#define FP8ATTN_ENGINE_ISA_NAMESPACE engine_baseline
#include "lib/attention/engine/isa/query_tile_in_isa.inc"
