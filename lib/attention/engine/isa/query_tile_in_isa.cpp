// lib/attention/engine/query_tile.cpp (and decode_tile.cpp) compiled once more, for one vector ISA, with every
// function it defines or pulls in from panel_gemm.hpp moved into the namespace
// fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE (for example fp8attn::engine_avx2).
//
// NOTE: why a namespace per ISA and not just different compiler flags: panel_gemm.hpp's inline
// functions (panel_gemm, the engine's hottest loop) are emitted as weak COMDAT symbols.
// Were two ISA builds to share their mangled names, the linker would keep one copy for all of
// them, possibly the AVX-512 one for a CPU without AVX-512. Renaming the `engine` namespace for
// this translation unit gives each build its own copies; tests/portability/check_isa_symbols.sh
// checks that the object defines nothing outside its ISA namespace.
//
// The shared types (QueryTileCoord, TileTelemetry, EngineHooks, the config and the problem) are
// declared before the rename, so all builds take and fill the same structs.
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_ENGINE_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(engine_, FP8ATTN_CPU_ISA_BUILD)

// Every header query_tile.cpp includes, except panel_gemm.hpp, before the rename: only the
// engine's own code moves into the ISA namespace.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include <limits>

#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "kernels/sm90/pv_key_order.hpp"
#include "kernels/sm90/softmax_math.hpp"
#include "lib/attention/engine/decode_tile.hpp"
#include "lib/attention/engine/query_tile.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/numerics/element_io.hpp"

namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE {
using namespace ::fp8attn::engine;  // the shared types
}  // namespace fp8attn::FP8ATTN_ENGINE_ISA_NAMESPACE

#define engine FP8ATTN_ENGINE_ISA_NAMESPACE
#include "lib/attention/engine/query_tile.cpp"
// NOTE: the decode tile shares query_tile.cpp's K/V gather and decode, so it joins its builds.
#include "lib/attention/engine/decode_tile.cpp"
#undef engine
