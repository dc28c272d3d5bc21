// fp8attn_attention_combine on the host: the CPU backend's merge (the kernel's arithmetic from
// kernels/sm90/combine/combine_math.hpp, so the emulated and CUDA kernels agree with it) and the
// reference backend's FP64 merge, both on the context's worker threads.
#pragma once

#include "kernels/sm90/combine/combine_params.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::combine {

/// Merges p (validated by make_combine_params) in FP32 as the kernel does: bit-equal to it
/// whatever the thread count.
void combine_on_cpu(const sm90::combine::CombineParams& p, ThreadPool& pool);

/// The same merge, with out written through streaming stores or not (the same bits either way);
/// the overload above streams when combine_streams_out(p).
void combine_on_cpu(const sm90::combine::CombineParams& p, ThreadPool& pool, bool stream_out);

/// Whether the bytes a merge moves (every part's O and LSE read, out and lse written) exceed this
/// CPU's last-level cache, so that out is better written past it.
bool combine_streams_out(const sm90::combine::CombineParams& p);

/// The FP64 merge: m = max lse_p, lse = m + log Σ exp(lse_p − m), out = Σ exp(lse_p − lse)·O_p
/// in double, rounded once to the output dtype; the same special values as combine_math.hpp.
void combine_reference(const sm90::combine::CombineParams& p, ThreadPool& pool);

}  // namespace fp8attn::combine
