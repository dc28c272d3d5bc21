// Incoherent processing on the CPU: the fast Walsh–Hadamard rotation x ← x·H·D of one head-dim
// vector, in the order kernels/sm90/quantize/quantize_math.hpp defines (the Hopper kernel runs the
// same butterflies across lanes, so both round identically).
#pragma once

#include <cstdint>

namespace fp8attn::quant {

/// log2(d) when d is a power of two ≥ 1; −1 otherwise.
int exact_log2(int64_t d);

/// Rotates x[0 .. 2^log2_d) in place: log2_d butterfly stages (O(d log d)), the normalization
/// fl(1/√d), then D's signs from `seed`.
void rotate_row(float* x, int log2_d, uint64_t seed);

}  // namespace fp8attn::quant
