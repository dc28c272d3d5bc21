// The decode path's FP32 tile (desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32): the same
// algorithm as decode_tile.hpp's (the KV schedule's blocks and order, the online softmax of
// row_softmax.hpp, the P cast, the masks, the combine's partials), with both products in plain
// FP32. Its work item is one sequence's split and row tile for up to 8 KV heads at once.
//
// NOTE: why a tile of its own. decode_tile.cpp shares the forward's tile products (panel_gemm)
// and block decode, built for BlockM query rows against a block's keys: at decode's few rows the
// decode of every key into FP32 panels (four bytes written and read again per cache byte) and the
// emulated tensor core cost far more than the arithmetic. This tile reads each K and V row once
// from the cache's own bytes, in chunks of 32 keys that stay in L1 while every packed row (query
// heads of the group, tokens) uses them: E4M3 keys transposed byte for byte, so that Q·Kᵀ runs
// with the keys in the vector lanes (decode_fp32_keys.hpp); BF16 keys as dot products; V by
// broadcast FMAs, E4M3 values widened from their codes inside them (decode_fp32_values.hpp). The
// next chunks' lines are requested a few at a time from inside the products
// (decode_fp32_ahead.hpp). Every KV head's rows of a chunk are read together, so a page of an
// interleaved-heads cache ([pages, page_size, heads, dim]) is read whole, not a quarter at a time
// with the other heads' rows skipped. The TENSOR_CORE tile keeps its bits and its code;
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

/// KV heads one work item takes: all of them, up to 8 (a typical cache page's heads; more would
/// grow the scratch without reading a page more whole).
int decode_fp32_heads_per_item(const AttentionConfig& config);

/// Scratch bytes of one worker: Q, S, O and row state for one item's KV heads' rows, one chunk of
/// transposed or decoded K and of decoded V.
size_t decode_fp32_scratch_bytes(const AttentionConfig& config);

/// Computes one decode work item, run_decode_tile's contract for the KV heads [at.head_kv,
/// at.head_kv + decode_fp32_heads_per_item) that exist, without the KV block cache.
void run_decode_fp32_tile(const AttentionConfig& config, const AttentionProblem& problem, const DecodeTileCoord& at,
                          void* scratch, TileTelemetry& telemetry, const DecodePartials& partials);

}  // namespace fp8attn::engine
