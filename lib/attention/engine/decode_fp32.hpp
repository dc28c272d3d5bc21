// The decode path's FP32 tile (desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32): the same work
// item as decode_tile.hpp's (the packed rows of one sequence and KV group over one split), the
// same algorithm (the KV schedule's blocks and order, the online softmax of row_softmax.hpp, the
// P cast, the masks, the combine's partials), with both products in plain FP32.
//
// NOTE: why a tile of its own. decode_tile.cpp shares the forward's tile products (panel_gemm)
// and decoded-block cache, built for BlockM query rows against a block's keys: at decode's few
// rows the decode of every key into FP32 panels (a strided scatter into a cache of the whole
// sequence, 32 MiB per worker at 32k keys) and the emulated tensor core cost far more than the
// arithmetic, and the bytes stream through memory twice. This tile reads each K and V row once
// from the cache's own bytes, decodes it into a block-sized buffer that stays in L1/L2 while
// every packed row (query heads of the group, tokens) uses it, and runs dot products and
// broadcast FMAs over 16-lane vectors. The TENSOR_CORE tile keeps its bits and its code;
// decode_engine.cpp picks between the two at one place.
//
// Every ISA build (baseline, AVX2, AVX-512; isa/decode_fp32_in_isa.cpp) computes the same bits:
// the vectors are GCC vector types whose lanes run the same operations in the same order, the
// fused multiply-adds are explicit (hardware FMA where the build has it, std::fma otherwise).
#pragma once

#include <cstddef>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/decode_tile.hpp"

namespace fp8attn::engine {

/// True when the FP32 tile runs this call: FP32 accumulation, no PV promotion, no block or
/// per-token descales, E4M3 or BF16 inputs with unit dimension stride, head dims multiples of 16.
/// Otherwise decode_tile.cpp's tile runs it.
bool decode_fp32_applies(const AttentionConfig& config, const AttentionProblem& problem);

/// Scratch bytes of one worker: Q, S, O and row state for BlockM rows, one decoded K and V block.
size_t decode_fp32_scratch_bytes(const AttentionConfig& config);

/// Computes one decode work item (run_decode_tile's contract, without the KV block cache).
void run_decode_fp32_tile(const AttentionConfig& config, const AttentionProblem& problem, const DecodeTileCoord& at,
                          void* scratch, TileTelemetry& telemetry, const DecodePartials& partials);

}  // namespace fp8attn::engine
