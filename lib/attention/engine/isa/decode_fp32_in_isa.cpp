// lib/attention/engine/decode_fp32.cpp compiled once more, for one vector ISA, in the namespace
// fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE: the scheme of query_tile_in_isa.cpp (one copy of the
// inline row loops of row_softmax.hpp per ISA, so no build links another's AVX-512 code).
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_ENGINE_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(engine_, FP8ATTN_CPU_ISA_BUILD)

// Every header decode_fp32.cpp includes, except its own vector kernels and cache requests
// (decode_fp32_vec.hpp, _keys.hpp, _values.hpp, _ahead.hpp), the shared row steps (decode_rows.hpp)
// and row_softmax.hpp, before the rename.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/decode_fp32.hpp"

namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE {
using namespace ::fp8attn::engine;  // the shared types and the scalar output store
}  // namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE

#define engine FP8ATTN_ENGINE_ISA_NAMESPACE
#include "lib/attention/engine/decode_fp32.cpp"
#undef engine
