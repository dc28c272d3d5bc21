// lib/attention/engine/backward_tile.cpp compiled once more, for one vector ISA, with every
// function it defines or pulls in from tile_ops.hpp moved into the namespace
// fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE; the same scheme, for the same reason, as
// query_tile_in_isa.cpp (one copy of the inline tile products per ISA).
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_ENGINE_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(engine_, FP8ATTN_CPU_ISA_BUILD)

// Every header backward_tile.cpp includes, except tile_ops.hpp, before the rename.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/backward_tile.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE {
using namespace ::fp8attn::engine;  // the shared types
}  // namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE

#define engine FP8ATTN_ENGINE_ISA_NAMESPACE
#include "lib/attention/engine/backward_tile.cpp"
#undef engine
