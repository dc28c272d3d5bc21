// The decode path on the Hopper backend (desc.decode = 1): the forward kernel over GQA-packed
// decode tiles (kernels/sm90/decode), then, with several splits, the combine kernel over their
// partials. The split count and the partials' extent follow the CPU engine
// (engine::decode_num_splits; the heuristic's workers are a constant, not the SM count), so the
// emulated kernels give the engine's bits whatever the engine's threads and the emulator's SMs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/attention/fwd_launch.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn::gpu {

/// Throws Error(UNSUPPORTED_ON_BACKEND) for a decode config the kernels cannot run.
void check_decode_supported(const AttentionConfig& config);

/// The splits' partials: O (F32) and LSE per split, sequence, token and query head, for the host
/// bounds (the heuristic's bound at max_seqlen_k); 0 with one split.
size_t decode_partials_bytes(const AttentionConfig& config, int64_t batch, int64_t max_seqlen_q,
                             int64_t max_seqlen_k);

/// Turns the forward's launch `l` into the decode launch: the key, Q's packed-row box, the tiles,
/// the decode arguments with the partials at `partials` (decode_partials_bytes of the problem's
/// bounds), and the merge.
void plan_decode(const AttentionConfig& config, const AttentionProblem& problem, void* partials, int sm_count,
                 sm90::FwdLaunch& l);

}  // namespace fp8attn::gpu
